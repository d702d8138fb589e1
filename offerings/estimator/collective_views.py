"""`GET /api/collectives`: what nccl-tests should show on N nodes of one type, and the same
figures for the type's page ("What nccl-tests should show").

The figures come from `offerings.estimator.nccl.expect`, the function the estimator's step times
use; this module reads the type's facts with their bases, the provider's SHARP fact, the published
results on record and the error band of the held-out fit, and shapes the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, JsonResponse, QueryDict
from django.utils.translation import gettext, gettext_noop
from django.views.decorators.http import require_safe

from offerings.estimator.calibration import ALL_POINTS, error_band
from offerings.estimator.collectives_openapi import DEFAULT_MESSAGE_BYTES, MESSAGE_BYTES_MAX
from offerings.estimator.core import DEFAULT_CONSTANTS, NODES_MAX, InstanceSpec
from offerings.estimator.estimation import rounded
from offerings.estimator.nccl import (
    ALGORITHMS,
    COLLECTIVES,
    SHARP_NOT_OFFERED,
    Expectation,
    band_kind,
    expect,
    line_rate,
)
from offerings.estimator.ranking import links_of
from offerings.models import InstanceType, ProviderReadiness, ReadinessFact
from offerings.table.parameters import invalid_parameters, parse_instance_ids
from offerings.table.rows import (
    collective_results_of,
    detail_path,
    serialize_collective_result,
)
from offerings.web.caching import absolute_url, cached_response

PARAMETERS = ("instance", "collective", "nodes", "message_bytes", "algorithm")
INSTANCE_MAX = 200  # a provider slug, a slash and a type slug are far shorter
GIB = 2**30
#: The node counts and message size of the type page's table.
PAGE_NODE_COUNTS = (1, 2, 4, 8, 16)
PAGE_COLLECTIVES = ("all_reduce", "all_gather")


@dataclass
class CollectiveQuery:
    instance: InstanceType | None
    collective: str
    nodes: int
    message_bytes: int
    algorithm: str
    errors: dict[str, list[str]]


def _one(query: QueryDict, name: str, errors: dict[str, list[str]]) -> str | None:
    values = [value for value in query.getlist(name) if value.strip()]
    if len(values) > 1:
        errors[name] = [gettext("Give this parameter once.")]
        return None
    return values[0].strip() if values else None


def _integer(
    text: str | None, name: str, default: int, low: int, high: int, errors: dict[str, list[str]]
) -> int:
    if text is None:
        return default
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit()) or len(text) > 15:
        errors[name] = [gettext("Enter a whole number.")]
        return default
    if text[:1] in "+-":
        errors[name] = [
            gettext("Enter a number from %(low)s to %(high)s.") % {"low": low, "high": high}
        ]
        return default
    value = int(text)
    if not low <= value <= high:
        errors[name] = [
            gettext("Enter a number from %(low)s to %(high)s.") % {"low": low, "high": high}
        ]
        return default
    return value


def _choice(text: str | None, name: str, default: str, allowed: tuple[str, ...], errors) -> str:
    if text is None:
        return default
    if text not in allowed:
        errors[name] = [gettext("Choose one of: %(choices)s.") % {"choices": ", ".join(allowed)}]
        return default
    return text


def parse_collective_query(query: QueryDict) -> CollectiveQuery:
    """Validate every parameter together, so one 400 names each bad one."""
    errors: dict[str, list[str]] = {}
    instance_text = _one(query, "instance", errors)
    instance = None
    if instance_text is None and "instance" not in errors:
        errors["instance"] = [gettext("This parameter is required: an id or provider/slug.")]
    elif instance_text is not None:
        if "," in instance_text or len(instance_text) > INSTANCE_MAX:
            errors["instance"] = [gettext("Give one instance: an id or provider/slug.")]
        else:
            rows, messages = parse_instance_ids(
                instance_text,
                queryset=InstanceType.objects.visible().select_related(
                    "provider", "gpu", "gpu_link", "fabric"
                ),
                maximum=1,
            )
            if messages:
                errors["instance"] = messages
            else:
                instance = rows[0]
    collective = _choice(
        _one(query, "collective", errors), "collective", "all_reduce", COLLECTIVES, errors
    )
    nodes = _integer(_one(query, "nodes", errors), "nodes", 1, 1, NODES_MAX, errors)
    message_bytes = _integer(
        _one(query, "message_bytes", errors),
        "message_bytes",
        DEFAULT_MESSAGE_BYTES,
        1,
        MESSAGE_BYTES_MAX,
        errors,
    )
    algorithm = _choice(_one(query, "algorithm", errors), "algorithm", "auto", ALGORITHMS, errors)
    return CollectiveQuery(instance, collective, nodes, message_bytes, algorithm, errors)


def spec_of(row: InstanceType) -> InstanceSpec:
    """The type's facts as the model's plain data (no price: the answer has none)."""
    link, fabric = links_of(row)
    return InstanceSpec(
        id=row.pk,
        name=row.name,
        gpu_count=row.gpu_count,
        gpu_memory_gib=None,
        bf16_dense_tflops=None,
        pcie_generation=row.gpu.pcie_generation,
        link=link,
        fabric=fabric,
        provider=row.provider.slug,
    )


def sharp_fact(row: InstanceType) -> ProviderReadiness | None:
    """The provider's SHARP readiness row (None: unknown)."""
    return ProviderReadiness.objects.filter(
        provider_id=row.provider_id, fact=ReadinessFact.SHARP
    ).first()


def _fact(name: str, value: Any, basis: str | None, source_url: str, verified_at) -> dict:
    return {
        "fact": name,
        "value": value,
        "basis": basis,
        "source_url": source_url or None,
        "verified_at": verified_at.isoformat() if verified_at else None,
    }


def inputs_of(row: InstanceType, result: Expectation, sharp: ProviderReadiness | None) -> list:
    """The facts the answer used, each with its basis, source and date."""
    facts = [_fact("gpu_count", row.gpu_count, "provider", row.source_url, row.verified_at)]
    the_plan = result.plan
    link = getattr(row, "gpu_link", None)
    fabric = getattr(row, "fabric", None)
    if the_plan is not None and the_plan.group_gpus > 1 and link is not None:
        if the_plan.intra_kind == "pcie":
            facts.append(
                _fact(
                    "gpu.pcie_generation",
                    row.gpu.pcie_generation,
                    "platform",
                    row.gpu.source_url,
                    row.gpu.verified_at,
                )
            )
        for name in (
            "technology",
            "topology",
            "generation",
            "domain_size",
            "bandwidth_gbytes_per_s",
        ):
            value = getattr(link, name)
            if value in (None, ""):
                continue
            facts.append(
                _fact(
                    f"nvlink.{name}",
                    float(value) if name == "bandwidth_gbytes_per_s" else value,
                    link.basis.get(name),
                    link.source_url,
                    link.verified_at,
                )
            )
    if the_plan is not None and the_plan.groups > 1 and fabric is not None:
        figure = (
            "network_gbits_per_s" if fabric.technology == "ethernet" else "bandwidth_gbits_per_s"
        )
        facts.append(
            _fact(
                "fabric.technology",
                fabric.technology,
                fabric.basis.get("technology"),
                fabric.source_url,
                fabric.verified_at,
            )
        )
        facts.append(
            _fact(
                figure if figure == "network_gbits_per_s" else f"fabric.{figure}",
                getattr(fabric, figure),
                fabric.basis.get(figure),
                fabric.source_url,
                fabric.verified_at,
            )
        )
        if fabric.generation:
            # The generation picks the network's factor and the protocols that cross it.
            facts.append(
                _fact(
                    "fabric.generation",
                    fabric.generation,
                    fabric.basis.get("generation"),
                    fabric.source_url,
                    fabric.verified_at,
                )
            )
    # Whether the provider offers SHARP is a fact of the answer when SHARP runs, or when the
    # provider's "no" is why it cannot (not when the fabric rules it out).
    said_no = result.refused is not None and result.refused[0] == SHARP_NOT_OFFERED
    if sharp is not None and result.algorithm == "sharp" and (result.estimated or said_no):
        facts.append(
            _fact("provider.sharp", sharp.flag, sharp.basis, sharp.source_url, sharp.verified_at)
        )
    return facts


def stages_of(result: Expectation) -> list[dict]:
    return [
        {
            "stage": stage.name,
            "kind": stage.kind,
            "bytes": rounded(stage.bytes),
            "bandwidth_gbytes_per_s": rounded(stage.bandwidth_gbytes_per_s),
            "latency_steps": rounded(stage.steps),
            "seconds": rounded(stage.seconds),
        }
        for stage in result.stages
    ]


def answer(
    row: InstanceType,
    query: CollectiveQuery,
    sharp: ProviderReadiness | None,
    absolute: Callable[[str], str],
) -> dict:
    offered = sharp.flag if sharp is not None else None
    spec = spec_of(row)
    result = expect(
        spec,
        query.collective,
        query.nodes,
        query.message_bytes,
        query.algorithm,
        sharp=offered,
    )
    body: dict[str, Any] = {
        "instance": {
            "id": row.pk,
            "provider": row.provider.slug,
            "name": row.name,
            "url": absolute(detail_path(row)),
        },
        "collective": query.collective,
        "nodes": query.nodes,
        "gpus": result.gpus,
        "message_bytes": query.message_bytes,
        "algorithm_asked": query.algorithm,
    }
    warnings = bookable_warnings(row, query.nodes)
    body["bookable"] = bookable(row, query.nodes)
    published = [serialize_collective_result(r) for r in collective_results_of(row)]
    if not result.estimated:
        reason = None
        if result.refused is not None:
            message, values = result.refused
            reason = message % values if values else message
        return body | {
            "cannot_estimate": True,
            "reason": reason,
            "missing": list(result.missing),
            "algorithm": None,
            "protocol": None,
            "busbw_gbytes_per_s": None,
            "algbw_gbytes_per_s": None,
            "time_s": None,
            "bottleneck": None,
            "stages": [],
            "inputs": inputs_of(row, result, sharp),
            "published": published,
            "error_band": None,
            "warnings": warnings,
        }
    busbw = result.busbw_gbytes_per_s
    return body | {
        "cannot_estimate": False,
        "reason": None,
        "missing": [],
        "algorithm": result.algorithm,
        "protocol": result.protocol,
        "algorithms_considered": {
            name: rounded(seconds) for name, seconds in result.considered.items()
        },
        "busbw_gbytes_per_s": rounded(busbw),
        "algbw_gbytes_per_s": rounded(result.algbw_gbytes_per_s),
        "time_s": rounded(result.time_s),
        "bottleneck": result.bottleneck,
        "stages": stages_of(result),
        "call_latency_us": result.base_latency_us,
        "inputs": inputs_of(row, result, sharp),
        "published": published,
        "error_band": error_band(
            band_kind(result), busbw, query.message_bytes, ceiling_of(spec, result, offered)
        ),
        "warnings": warnings,
    }


def bookable(row: InstanceType, nodes: int) -> bool | None:
    """Whether the provider books `nodes` nodes of the type together self-serve (None: no
    source says). The figures answer the hardware either way; this answers the booking."""
    if nodes < 2:
        return True
    fabric = getattr(row, "fabric", None)
    if fabric is None or fabric.multi_node is None:
        return None
    if not fabric.multi_node:
        return False
    return fabric.max_nodes is None or nodes <= fabric.max_nodes


def bookable_warnings(row: InstanceType, nodes: int) -> list[str]:
    """What the answer cannot promise: a node count the provider does not book together."""
    if nodes < 2:
        return []
    fabric = getattr(row, "fabric", None)
    if fabric is None or fabric.multi_node is None:
        return ["No source says whether nodes of this type can be booked together."]
    if not fabric.multi_node:
        return ["The provider does not book nodes of this type together on one fabric."]
    if fabric.max_nodes is not None and nodes > fabric.max_nodes:
        return [f"The provider books at most {fabric.max_nodes} nodes of this type together."]
    return []


@require_safe
@cached_response(PARAMETERS)
def api_collectives(request: HttpRequest) -> JsonResponse:
    """`GET /api/collectives`: the expected nccl-tests figures of one collective on one type."""
    query = parse_collective_query(request.GET)
    if query.errors or query.instance is None:
        return invalid_parameters(query.errors)
    row = query.instance
    body = answer(row, query, sharp_fact(row), lambda path: absolute_url(request, path))
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False, "allow_nan": False})


# --------------------------------------------------------------------------------------------
# The type's page: "What nccl-tests should show"
# --------------------------------------------------------------------------------------------


def page_node_counts(row: InstanceType) -> list[int]:
    """1, 2, 4, 8 and 16 nodes, as far as the type can be booked together (one node when no
    source says it can); where an NVLink domain spans nodes (a GB200 NVL72 rack), also one, two
    and four whole domains."""
    fabric = getattr(row, "fabric", None)
    if fabric is None or not fabric.multi_node:
        return [1]
    counts = set(PAGE_NODE_COUNTS)
    link = getattr(row, "gpu_link", None)
    domain = getattr(link, "domain_size", None) or 0
    if domain > row.gpu_count and domain % row.gpu_count == 0:
        counts |= {domain // row.gpu_count * racks for racks in (1, 2, 4)}
    limit = fabric.max_nodes or max(counts)
    return sorted(n for n in counts if n <= limit)


def ceiling_of(spec: InstanceSpec, result: Expectation, sharp: bool | None) -> float | None:
    """The busbw the same algorithm reaches at line rate with no latency: the top of a band."""
    perfect = expect(
        spec,
        result.collective,
        result.nodes,
        result.message_bytes,
        result.algorithm if result.algorithm in ("ring", "tree", "nvls", "sharp") else "auto",
        sharp=sharp,
        constants=line_rate(DEFAULT_CONSTANTS),
    )
    return perfect.busbw_gbytes_per_s


def _cell(spec: InstanceSpec, result: Expectation, sharp: bool | None) -> dict:
    """One figure as the page shows it: busbw with its band, or why there is none."""
    if result.refused is not None:
        message, values = result.refused
        why = gettext(message) % values if values else gettext(message)
        return {"collective": result.collective, "why": why}
    if not result.estimated:
        names = ", ".join(gettext(name) for name in result.missing)
        why = gettext("unknown: %(names)s") % {"names": names}
        return {"collective": result.collective, "why": why}
    busbw = result.busbw_gbytes_per_s
    ceiling = ceiling_of(spec, result, sharp)
    band = error_band(band_kind(result), busbw, result.message_bytes, ceiling) or {}
    return {
        "collective": result.collective,
        "busbw": busbw,
        "algorithm": result.algorithm,
        "low": band.get("low_gbytes_per_s"),
        "high": band.get("high_gbytes_per_s"),
        # Whole GB/s as the page prints the band, rounded outwards so that it never reads as
        # narrower than it is (40.1 in "40-41", not "40-40").
        "low_shown": _outwards(band.get("low_gbytes_per_s"), math.floor),
        "high_shown": _outwards(band.get("high_gbytes_per_s"), math.ceil),
        "band_points": band.get("held_out_points"),
        "bottleneck": result.bottleneck,
    }


def _outwards(value: float | None, rounding) -> int | None:
    return None if value is None else int(rounding(value))


def fit_roles() -> dict[tuple, str]:
    """What the calibration did with each recorded result on a catalog type: "fitted", "held
    out" or "other size" (another message size of a fitted run), by (type, collective, nodes,
    size, busbw)."""
    return {
        (
            point.catalog_instance,
            point.collective,
            point.nodes,
            point.message_bytes,
            round(point.published_busbw_gbytes_per_s, 2),
        ): gettext_noop("fitted")
        if point.fitted
        else gettext_noop("held out")
        if point.held_out
        else gettext_noop("other size")
        for point in ALL_POINTS
        if point.catalog_instance
    }


#: Computed once from the recorded points (constants of the code, not data).
FIT_ROLES = fit_roles()


def expected_on_page(row: InstanceType) -> dict:
    """The expected all_reduce and all_gather bus bandwidth at 1 GiB on 1 to 16 nodes, and the
    model's figure beside each published result of a collective it models."""
    sharp = sharp_fact(row)
    offered = sharp.flag if sharp is not None else None
    spec = spec_of(row)
    rows = []
    for nodes in page_node_counts(row):
        cells = [
            _cell(spec, expect(spec, collective, nodes, GIB, sharp=offered), offered)
            for collective in PAGE_COLLECTIVES
        ]
        rows.append({"nodes": nodes, "gpus": nodes * row.gpu_count, "cells": cells})
    used = FIT_ROLES
    published = []
    for result in collective_results_of(row):
        model = None
        role = used.get(
            (
                f"{row.provider.slug}/{row.slug}",
                result.collective,
                result.nodes,
                result.message_bytes,
                round(float(result.busbw_gbytes_per_s), 2),
            )
        )
        if result.collective in COLLECTIVES:
            figure = expect(
                spec, result.collective, result.nodes, result.message_bytes, sharp=offered
            )
            if result.gpus == figure.gpus:
                model = figure.busbw_gbytes_per_s
        published.append((result, model, role))
    return {"rows": rows, "published": published, "collectives": PAGE_COLLECTIVES}
