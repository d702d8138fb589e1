"""The estimator's page `/estimate/` and `GET /api/estimate` (CONTRACT.md, `/api/estimate`).

Catalog rows become `InstanceSpec`s, the query string a `Job` (`parse_job`), and
`offerings.estimator.core.estimate()` does the rest. Page and API go through `run_estimate()`, so they
show the same numbers: every float in the output is rounded to 6 significant digits, once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_noop, ngettext, pgettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_safe

from offerings.estimator.calibration import (
    CALIBRATION_POINTS,
    CalibrationPoint,
    calibration_report,
)
from offerings.estimator.core import (
    FORMULA_MESSAGES,
    GIB,
    JOB_KEYS,
    KIND_NAMES,
    MODES,
    UNCALIBRATED_KINDS,
    FabricSpec,
    GpuLinkSpec,
    InstanceSpec,
    Job,
    Phrase,
    estimate,
    intra_link,
    parse_job,
)
from offerings.filters import ListingQuery, parse_instance_ids, parse_listing_query
from offerings.listing import attach_row_offers, detail_path, offer_usd
from offerings.models import InstanceType
from offerings.services import RateTable

#: Listing options that mean nothing here (the ranking is fixed, money is USD): ignored.
IGNORED_OPTIONS = frozenset({"page", "page_size", "format", "currency", "sort"})
ESTIMATE_PARAMETERS = frozenset({"ids", *JOB_KEYS}) | IGNORED_OPTIONS
SIGNIFICANT_DIGITS = 6
IDS_MAX = 100
#: parse_job accepts any mfu > 0; below this the compute time overflows a float.
MFU_MIN = 0.001
NODE_CHOICES = (1, 2, 4, 8, 16, 32)
TABLE_ROWS_MAX = 200
CHART_INSTANCES = 6

_NODE_COUNT = re.compile(r"\d{1,4}", re.ASCII)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


@dataclass
class EstimateQuery:
    """A parsed estimator request: the filters, the job, the `ids` and every error by name."""

    listing: ListingQuery
    job: Job | None
    errors: dict[str, list[str]] = field(default_factory=dict)
    asked: bool = False  # params_b or mode was given: the page shows results, not the empty form

    @property
    def is_valid(self) -> bool:
        return not self.errors and self.job is not None


def resolve_ids(values: list[str]) -> tuple[set[int] | None, list[str]]:
    """`ids` -> visible instance pks (None: not given), and error messages naming what failed."""
    given = [value for value in values if value.strip()]
    if not given:
        return None, []
    if len(given) > 1:
        return None, ["Give this parameter once, with the instances separated by commas."]
    visible = InstanceType.objects.visible().select_related("provider")
    rows, errors = parse_instance_ids(given[0], queryset=visible, maximum=IDS_MAX)
    return (None, errors) if errors else ({row.pk for row in rows}, [])


# parse_job (no Django) writes English messages; each pattern here gives the same sentence
# through gettext, so a Chinese page shows Chinese while English (and the API) stays identical.
JOB_MESSAGES = [
    (re.compile(r"Give this parameter once\.$"), gettext_noop("Give this parameter once.")),
    (re.compile(r"This field is required\.$"), gettext_noop("This field is required.")),
    (re.compile(r"Enter a number\.$"), gettext_noop("Enter a number.")),
    (re.compile(r"Enter a whole number\.$"), gettext_noop("Enter a whole number.")),
    (re.compile(r"Must be at least (?P<n>\S+)\.$"), gettext_noop("Must be at least %(n)s.")),
    (
        re.compile(r"Must be greater than (?P<n>\S+)\.$"),
        gettext_noop("Must be greater than %(n)s."),
    ),
    (re.compile(r"Must be at most (?P<n>\S+)\.$"), gettext_noop("Must be at most %(n)s.")),
    (re.compile(r"Choose one of: (?P<n>.+)\.$"), gettext_noop("Choose one of: %(n)s.")),
    (
        re.compile(r"(?P<n>'.*') is not a whole number\.$"),
        gettext_noop("%(n)s is not a whole number."),
    ),
    (
        re.compile(r"(?P<n>\d+) is out of range: each must be 1 to (?P<m>\d+)\.$"),
        gettext_noop("%(n)s is out of range: each must be 1 to %(m)s."),
    ),
    (
        re.compile(r"Give at most (?P<n>\d+) node counts\.$"),
        gettext_noop("Give at most %(n)s node counts."),
    ),
]


def translate_job_message(message: str) -> str:
    """The estimator core's English message in the active language (unchanged in English)."""
    for pattern, msgid in JOB_MESSAGES:
        if match := pattern.match(message):
            return gettext(msgid) % match.groupdict()
    return message


def parse_estimate_query(query: QueryDict) -> EstimateQuery:
    """Validate filters, `ids` and the job together, so one answer names every bad parameter."""
    errors: dict[str, list[str]] = {}
    pks, id_errors = resolve_ids(query.getlist("ids"))
    if id_errors:
        errors["ids"] = id_errors
    queryset = InstanceType.objects.for_listing()
    if pks is not None:
        queryset = queryset.filter(pk__in=pks)
    listing = parse_listing_query(query, queryset=queryset, extra=ESTIMATE_PARAMETERS)
    for name, messages in listing.errors.items():
        errors.setdefault(name, []).extend(messages)
    job, job_errors = parse_job({name: query.getlist(name) for name in query})
    for name, messages in job_errors.items():
        errors.setdefault(name, []).extend(translate_job_message(m) for m in messages)
    if job is not None and job.mfu < MFU_MIN:
        errors.setdefault("mfu", []).append(
            gettext("Must be at least %(n)s.") % {"n": f"{MFU_MIN:g}"}
        )
        job = None
    asked = any(value.strip() for name in ("params_b", "mode") for value in query.getlist(name))
    return EstimateQuery(listing=listing, job=job, errors=errors, asked=asked)


# --------------------------------------------------------------------------------------------
# Catalog rows -> InstanceSpec, and the estimate
# --------------------------------------------------------------------------------------------


def _float(value: Decimal | float | int | None) -> float | None:
    return None if value is None else float(value)


def instance_spec(
    row: InstanceType, rates: RateTable, absolute: Callable[[str], str]
) -> InstanceSpec:
    """One listing row (with `row_offer` attached) as the estimator's plain data."""
    link = getattr(row, "gpu_link", None)
    fabric = getattr(row, "fabric", None)
    price = None
    if row.row_offer is not None:
        price = _float(offer_usd(row.row_offer, row.gpu_count, rates)[0])
    return InstanceSpec(
        id=row.pk,
        name=row.name,
        gpu_count=row.gpu_count,
        gpu_memory_gib=_float(row.gpu.memory_gib),
        bf16_dense_tflops=_float(row.gpu.bf16_dense_tflops),
        pcie_generation=row.gpu.pcie_generation,
        link=GpuLinkSpec(
            technology=link.technology,
            topology=link.topology or None,
            generation=link.generation,
            domain_size=link.domain_size,
            bandwidth_gbytes_per_s=_float(link.bandwidth_gbytes_per_s),
        )
        if link is not None
        else GpuLinkSpec(),
        fabric=FabricSpec(
            technology=fabric.technology,
            bandwidth_gbits_per_s=_float(fabric.bandwidth_gbits_per_s),
            multi_node=fabric.multi_node,
            max_nodes=fabric.max_nodes,
        )
        if fabric is not None
        else FabricSpec(),
        price_per_hour_usd=price,
        provider=row.provider.slug,
        url=absolute(detail_path(row)),
    )


def rounded(value: Any) -> Any:
    """Round every float to SIGNIFICANT_DIGITS; a non-finite one becomes None (valid JSON)."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item) for item in value]
    return value


def _rank_key(result: dict[str, Any]) -> tuple:
    """The contract's order: cost per billion tokens, null last; then fitting, faster, by id."""
    cost = result["cost_per_billion_tokens_usd"]
    step = result["step_s"]
    return (
        cost is None,
        cost if cost is not None else 0.0,
        not result["fits"],
        step is None,
        step if step is not None else 0.0,
        str(result["instance"]["id"]),
        result["nodes"],
    )


@dataclass
class EstimateRun:
    specs: dict[Any, InstanceSpec]
    data: dict[str, Any]  # {"results": [...], "assumptions": {...}}, rounded and ranked
    # (instance id, nodes) -> (verdict, reasons) as phrases, for the page to say in its language
    phrases: dict[tuple[Any, int], tuple[Phrase | None, tuple[Phrase, ...]]] = field(
        default_factory=dict
    )


def run_estimate(query: EstimateQuery, absolute: Callable[[str], str]) -> EstimateRun:
    """Estimate every (matching instance, node count); the same numbers for page and API."""
    if query.job is None:
        raise ValueError("run_estimate needs a valid query")
    rates = RateTable()
    rows = attach_row_offers(query.listing.filterset.qs)
    specs = {row.pk: instance_spec(row, rates, absolute) for row in rows}
    result = estimate(specs.values(), query.job)
    phrases = {
        (row.instance["id"], row.nodes): (row.verdict_phrase, row.reason_phrases)
        for row in result.results
    }
    data = rounded(result.to_dict())
    if query.job.is_training:
        # The core's own order lists training rows without an estimate by their hourly price;
        # the contract ranks by cost per billion tokens, so rank again (a total order).
        data["results"].sort(key=_rank_key)
    else:
        # Inference has no cost per billion tokens: keep the core's order (fitting rows by
        # hourly price); the stable sort only enforces the contract's null-last rule.
        data["results"].sort(key=lambda r: r["cost_per_billion_tokens_usd"] is None)
    data["assumptions"]["rounding"] = (
        f"Every float in results is rounded to {SIGNIFICANT_DIGITS} significant digits."
    )
    return EstimateRun(specs=specs, data=data, phrases=phrases)


# --------------------------------------------------------------------------------------------
# The API
# --------------------------------------------------------------------------------------------


def invalid_parameters(errors: dict[str, list[str]]) -> JsonResponse:
    return JsonResponse({"error": "invalid_parameters", "fields": errors}, status=400)


@require_safe
def api_estimate(request: HttpRequest) -> JsonResponse:
    """`GET /api/estimate`: ranked (instance, nodes) estimates and every assumption used."""
    query = parse_estimate_query(request.GET)
    if not query.is_valid:
        return invalid_parameters(query.errors)
    run = run_estimate(query, request.build_absolute_uri)
    return JsonResponse(run.data, json_dumps_params={"ensure_ascii": False, "allow_nan": False})


# --------------------------------------------------------------------------------------------
# The page: display strings, bars, the chart
# --------------------------------------------------------------------------------------------


def format_decimal(value: float, places: int) -> str:
    """`value` rounded to `places` decimals, grouped as the active language writes numbers."""
    return number_format(Decimal(f"{value:.{places}f}"), places, force_grouping=True)


def format_seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0 s"
    if value >= 100:
        return f"{format_decimal(value, 0)} s"
    if value >= 1:
        return f"{value:.1f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def format_usd(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1:
        return f"${format_decimal(value, 2)}"
    return f"${value:.4f}"


def format_share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def format_bandwidth(value: float | None) -> str:
    return "—" if value is None else f"{format_decimal(value, 1)} GB/s"


BAR_WIDTH = 120


def step_bar(result: Mapping[str, Any], overlap: float) -> dict[str, Any] | None:
    """Widths (SVG units) of compute and exposed communication in the step, and each stage alone.

    The bar is the step: compute, then the communication the step waits for, coloured by the
    slower stage. The thin lines are the intra-group and fabric stages alone (the same scale),
    which NCCL runs at the same time.
    """
    step, compute = result["step_s"], result["compute_s"]
    if step is None or compute is None or step <= 0:
        return None
    scale = BAR_WIDTH / step

    def width(seconds: float | None) -> float:
        return round(min(BAR_WIDTH, max(0.0, (seconds or 0.0) * (1 - overlap) * scale)), 2)

    compute_w = round(min(BAR_WIDTH, compute * scale), 2)
    intra, inter = result["comm_intra_s"] or 0.0, result["comm_inter_s"] or 0.0
    return {
        "compute": compute_w,
        "comm": round(BAR_WIDTH - compute_w, 2),
        "comm_kind": "inter" if inter >= intra and inter > 0 else "intra",
        "intra": width(intra),
        "inter": width(inter),
    }


# --------------------------------------------------------------------------------------------
# Reasons and verdicts in the page's language
# --------------------------------------------------------------------------------------------


def _gib(value: float) -> str:
    return format_decimal(value, 1)


def _link_name(kind: str | None) -> str:
    return gettext(KIND_NAMES.get(kind or "", kind or ""))


def _missing(names: Iterable[str]) -> str:
    return pgettext("between names of unknown figures", ", ").join(gettext(n) for n in names)


def _reasons(reasons: Iterable[Phrase]) -> str:
    return pgettext("between reasons", "; ").join(render_phrase(r) for r in reasons)


def render_phrase(phrase: Phrase) -> str:
    """A reason or verdict of the estimator in the active language.

    The English msgids are the API's sentences (`offerings.estimator.core.english`), so the English
    page shows exactly the API's `reason` and `verdict`; numbers follow the language's format.
    """
    p, code = phrase.params, phrase.code
    if code == "multi-node-unstated":
        return gettext(
            "%(nodes)s nodes: self-serve multi-node booking is not stated for this instance"
        ) % {"nodes": p["nodes"]}
    if code == "no-multi-node":
        return gettext(
            "%(nodes)s nodes: no self-serve multi-node booking (one node, or sales only)"
        ) % {"nodes": p["nodes"]}
    if code == "beyond-max-nodes":
        return gettext(
            "%(nodes)s nodes: beyond the largest self-serve cluster of %(max_nodes)s nodes"
        ) % {"nodes": p["nodes"], "max_nodes": p["max_nodes"]}
    if code == "states-too-big":
        values = {
            "per_gpu": _gib(p["per_gpu_gib"]),
            "gpus": p["gpus"],
            "limit": _gib(p["limit_gib"]),
        }
        if p["sharded"]:
            return (
                ngettext(
                    "model states need %(per_gpu)s GiB per GPU (sharded over %(gpus)s GPU), more "
                    "than the %(limit)s GiB left after the activation margin",
                    "model states need %(per_gpu)s GiB per GPU (sharded over %(gpus)s GPUs), more "
                    "than the %(limit)s GiB left after the activation margin",
                    p["gpus"],
                )
                % values
            )
        return (
            ngettext(
                "model states need %(per_gpu)s GiB per GPU (replicated on each of %(gpus)s GPU), "
                "more than the %(limit)s GiB left after the activation margin",
                "model states need %(per_gpu)s GiB per GPU (replicated on each of %(gpus)s GPUs), "
                "more than the %(limit)s GiB left after the activation margin",
                p["gpus"],
            )
            % values
        )
    if code == "domain-too-small":
        values = {
            "needed": _gib(p["needed_gib"]),
            "weights": _gib(p["weights_gib"]),
            "kv": _gib(p["kv_gib"]),
            "domain_gpus": p["domain_gpus"],
            "spanning": p["spanning"],
            "usable": _gib(p["usable_gib"]),
            "nodes": p["nodes_needed"],
        }
        if p["domain"] == "pcie":
            text = ngettext(
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of one GPU (PCIe only) holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s node",
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of one GPU (PCIe only) holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s nodes",
                p["nodes_needed"],
            )
        elif p["domain"] == "booked":
            text = ngettext(
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); the "
                "%(domain_gpus)s GPUs booked of its %(spanning)s-GPU NVLink domain hold "
                "%(usable)s GiB usable; tensor parallel would take %(nodes)s node",
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); the "
                "%(domain_gpus)s GPUs booked of its %(spanning)s-GPU NVLink domain hold "
                "%(usable)s GiB usable; tensor parallel would take %(nodes)s nodes",
                p["nodes_needed"],
            )
        else:
            text = ngettext(
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of %(domain_gpus)s GPUs holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s node",
                "needs %(needed)s GiB (weights %(weights)s + KV cache %(kv)s); one NVLink domain "
                "of %(domain_gpus)s GPUs holds %(usable)s GiB usable; tensor parallel would take "
                "%(nodes)s nodes",
                p["nodes_needed"],
            )
        return text % values
    if code == "unknown":
        return gettext("unknown: %(figures)s") % {"figures": _missing(p["missing"])}
    if code == "cannot-estimate":
        return gettext("cannot estimate: unknown %(figures)s") % {"figures": _missing(p["missing"])}
    if code == "does-not-fit":
        return gettext("does not fit (%(reasons)s)") % {"reasons": _reasons(p["reasons"])}
    if code == "no-estimate":
        return gettext("no estimate")
    if code == "if-it-fitted":
        return gettext("does not fit (%(reasons)s); if it did: %(verdict)s") % {
            "reasons": _reasons(p["reasons"]),
            "verdict": render_phrase(p["verdict"]),
        }
    if code == "communication-bound":
        if p["beyond"] is not None:
            text = ngettext(
                "communication-bound beyond %(count)s node",
                "communication-bound beyond %(count)s nodes",
                p["beyond"],
            ) % {"count": p["beyond"]}
        else:
            text = ngettext(
                "communication-bound at %(count)s node",
                "communication-bound at %(count)s nodes",
                p["at"],
            ) % {"count": p["at"]}
        if p["stage"] is None:
            return text
        return pgettext("a verdict and its cause", "%(verdict)s: %(cause)s") % {
            "verdict": text,
            "cause": render_phrase(p["stage"]),
        }
    if code == "no-communication":
        return gettext("%(efficiency)s efficient: no communication") % {
            "efficiency": f"{p['efficiency']:.0%}"
        }
    if code == "efficient":
        return gettext(
            "%(efficiency)s efficient: communication adds %(share)s to the step; slowest link: "
            "%(stage)s"
        ) % {
            "efficiency": f"{p['efficiency']:.0%}",
            "share": f"{1 - p['efficiency']:.0%}",
            "stage": render_phrase(p["stage"]),
        }
    if code == "fabric-stage":
        return gettext("the fabric gives %(bandwidth)s GB/s per GPU (%(link)s)") % {
            "bandwidth": format_decimal(p["bandwidth"], 1),
            "link": _link_name(p["link"]),
        }
    if code == "intra-stage":
        values = {
            "link": _link_name(p["link"]),
            "bandwidth": format_decimal(p["bandwidth"], 1),
            "gpus": p["group_gpus"],
        }
        if p["where"] == "domain":
            return (
                gettext(
                    "%(link)s gives %(bandwidth)s GB/s per GPU inside the %(gpus)s-GPU NVLink domain"
                )
                % values
            )
        if p["where"] == "node":
            return gettext("%(link)s gives %(bandwidth)s GB/s per GPU inside the node") % values
        return gettext("%(link)s gives %(bandwidth)s GB/s per GPU inside each node") % values
    if code == "fits-domain":
        return ngettext(
            "fits one NVLink domain of %(count)s GPU (%(needed)s GiB needed)",
            "fits one NVLink domain of %(count)s GPUs (%(needed)s GiB needed)",
            p["domain_gpus"],
        ) % {"count": p["domain_gpus"], "needed": _gib(p["needed_gib"])}
    if code == "cannot-tell":
        return gettext("cannot tell: %(reasons)s") % {"reasons": _reasons(p["reasons"])}
    if code == "inference-does-not-fit":
        values = {"reasons": _reasons(p["reasons"])}
        if p["tp_link"] is None:
            return gettext("does not fit: %(reasons)s") % values
        values |= {
            "link": _link_name(p["tp_link"]),
            "ms": format_decimal(p["tp_s_per_token"] * 1e3, 2),
        }
        return (
            gettext(
                "does not fit: %(reasons)s; tensor-parallel traffic over %(link)s costs about "
                "%(ms)s ms per token"
            )
            % values
        )
    raise ValueError(f"unknown phrase code {code!r}")


def display_row(
    result: dict[str, Any],
    overlap: float,
    phrases: tuple[Phrase | None, tuple[Phrase, ...]] = (None, ()),
) -> dict[str, Any]:
    """The page's view of one API result: the same numbers, formatted, plus its bar.

    `phrases` are the row's verdict and reasons from the estimator, said in the active language
    (without them the row shows the API's English).
    """
    verdict, reasons = phrases
    return {
        "r": result,
        "key": f"{result['instance']['id']}:{result['nodes']}",
        "verdict": render_phrase(verdict) if verdict else result["verdict"],
        "reason": _reasons(reasons) if reasons else result["reason"],
        "compute": format_seconds(result["compute_s"]),
        "intra": format_seconds(result["comm_intra_s"]),
        "inter": format_seconds(result["comm_inter_s"]),
        "step": format_seconds(result["step_s"]),
        "efficiency": format_share(result["efficiency"]),
        "cost_per_step": format_usd(result["cost_per_step_usd"]),
        "cost_per_billion": format_usd(result["cost_per_billion_tokens_usd"]),
        "cost_per_hour": format_usd(result["cost_per_hour_usd"]),
        "intra_bw": format_bandwidth(result["intra_gbytes_per_s_per_gpu"]),
        "inter_bw": format_bandwidth(result["inter_gbytes_per_s_per_gpu"]),
        "tp_per_token": format_seconds(result["tp_comm_s_per_token"]),
        "bar": step_bar(result, overlap),
    }


KIND_LABELS = {
    "nvlink": "NVLink",
    "nvlink-sharp": "NVLink + NVSwitch SHARP",
    "infinity-fabric": "Infinity Fabric",
    "pcie": "PCIe",
    "infiniband": "InfiniBand",
    "roce": "RoCE",
    "efa": "EFA",
    "erdma": "eRDMA",
    "tcpx": "GPUDirect-TCPX",
    "ethernet": _("Ethernet (TCP)"),
    "unknown": _("unknown"),
}


def interconnect_summary(
    results: list[dict[str, Any]], specs: Mapping[Any, InstanceSpec], nodes: Iterable[int]
) -> list[dict[str, Any]]:
    """Best efficiency each (link inside, fabric between) pair reaches at each node count.

    Rows that do not fit or cannot be booked at that size count too: this shows what the links
    allow. Ordered by the efficiency at the largest node count, best first.
    """
    nodes = list(nodes)
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for result in results:
        if result["efficiency"] is None:
            continue
        spec = specs[result["instance"]["id"]]
        inside = intra_link(spec)[0] or "unknown"
        between = spec.fabric.technology
        group = groups.setdefault(
            (inside, between),
            {
                "label": f"{KIND_LABELS.get(inside, inside)} / {KIND_LABELS.get(between, between)}",
                "best": {},
                "fabric_bw": None,
                "instances": set(),
            },
        )
        best = group["best"]
        best[result["nodes"]] = max(best.get(result["nodes"], 0.0), result["efficiency"])
        group["instances"].add(result["instance"]["id"])
        bandwidth = result["inter_gbytes_per_s_per_gpu"]
        if bandwidth is not None:
            group["fabric_bw"] = max(group["fabric_bw"] or 0.0, bandwidth)
    summary = []
    for group in groups.values():
        cells = [group["best"].get(n) for n in nodes]
        summary.append(
            {
                "label": group["label"],
                "cells": [format_share(c) if c is not None else "—" for c in cells],
                "last": next((c for c in reversed(cells) if c is not None), 0.0),
                "fabric_bw": format_bandwidth(group["fabric_bw"]),
                "count": len(group["instances"]),
            }
        )
    summary.sort(key=lambda g: -g["last"])
    return summary


CHART = {"width": 680, "left": 56, "right": 16, "top": 16, "plot_height": 220, "bottom": 44}


def efficiency_chart(results: list[dict[str, Any]], nodes: tuple[int, ...]) -> dict | None:
    """Geometry of the SVG chart of efficiency against node count for the top instances."""
    top: list[Any] = []
    for result in results:
        instance_id = result["instance"]["id"]
        if result["efficiency"] is not None and instance_id not in top:
            top.append(instance_id)
        if len(top) == CHART_INSTANCES:
            break
    if not top:
        return None
    width, left, right = CHART["width"], CHART["left"], CHART["right"]
    top_margin, plot_height = CHART["top"], CHART["plot_height"]
    plot_width = width - left - right
    logs = [math.log2(n) for n in nodes]
    low, high = min(logs), max(logs)

    def x(n: int) -> float:
        if high == low:
            return round(left + plot_width / 2, 1)
        return round(left + (math.log2(n) - low) / (high - low) * plot_width, 1)

    lowest = min(
        r["efficiency"]
        for r in results
        if r["instance"]["id"] in top and r["efficiency"] is not None
    )
    # Start the axis at the 20% step below the lowest point (at most 80%), so close curves
    # stay apart; the axis label says where it starts.
    floor = min(0.8, math.floor(lowest * 5) / 5)

    def y(efficiency: float) -> float:
        return round(top_margin + (1 - efficiency) / (1 - floor) * plot_height, 1)

    series = []
    for index, instance_id in enumerate(top):
        rows = sorted(
            (
                r
                for r in results
                if r["instance"]["id"] == instance_id and r["efficiency"] is not None
            ),
            key=lambda r: r["nodes"],
        )
        instance = rows[0]["instance"]
        points = [
            {
                "x": x(r["nodes"]),
                "y": y(r["efficiency"]),
                "fits": r["fits"],
                "nodes": r["nodes"],
                "efficiency": format_share(r["efficiency"]),
            }
            for r in rows
        ]
        series.append(
            {
                "index": index,
                "name": f"{instance['provider']} {instance['name']}",
                "points": points,
                "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
                "legend_x": left + (index % 2) * (plot_width / 2),
                "legend_y": top_margin + plot_height + CHART["bottom"] + (index // 2) * 20,
            }
        )
    plot_bottom = top_margin + plot_height
    legend_rows = (len(series) + 1) // 2
    return {
        "width": width,
        "height": plot_bottom + CHART["bottom"] + legend_rows * 20,
        "left": left,
        "right": width - right,
        "top": top_margin,
        "bottom": plot_bottom,
        "x_label_y": plot_bottom + 34,
        "y_label_x": 14,
        "y_label_y": top_margin + plot_height / 2,
        "x_ticks": [{"x": x(n), "label": n} for n in nodes],
        "y_floor": f"{floor:.0%}",
        "y_ticks": [
            {"y": y(v), "label": f"{v:.0%}"}
            for v in (floor + i * (1 - floor) / 4 for i in range(5))
        ],
        "series": series,
    }


#: Each calibration point's configuration as a %-format msgid (by key prefix), so the page can
#: say it in its language. "%(nodes)s" and "%(size)s" come from the point itself;
#: `configuration_text` falls back to the English text when a msgid no longer reproduces it.
CALIBRATION_CONFIGURATIONS: tuple[tuple[str, str], ...] = (
    (
        "azure-nd-a100-v4-1x8-",
        gettext_noop(
            "Azure ND A100 v4: 1 VM, 8 x A100 SXM4 80GB, NVLink 3 via NVSwitch; NCCL 2.18.5, "
            "AllReduce in-place, %(size)s"
        ),
    ),
    (
        "aws-p4d-1x8",
        gettext_noop(
            "AWS p4d.24xlarge: 1 node, 8 x A100 SXM4 40GB, NVLink 3 via NVSwitch; NCCL 2.9.9, "
            "all_reduce_perf, 1 GiB"
        ),
    ),
    (
        "azure-nd-gb200-v6-1x4-ring-",
        gettext_noop(
            "Azure ND GB200 v6: 1 VM, 4 x GB200 of an NVL72 rack, NVLink 5; NCCL 2.25.1, "
            "AllReduce Ring algorithm, in-place, %(size)s"
        ),
    ),
    (
        "azure-nd-h100-v5-1x8-",
        gettext_noop(
            "Azure ND H100 v5: 1 VM, 8 x H100 SXM 80GB, NVLink 4 via NVSwitch; NCCL 2.18.5, "
            "AllReduce NVLS algorithm, in-place, %(size)s"
        ),
    ),
    (
        "h200-1x8-nccl-tests-272",
        gettext_noop(
            "8 x H200 on NVLink 4 (one server); NCCL 2.20.3, all_reduce_perf -b 64k -e 4G, peak "
            "busbw"
        ),
    ),
    (
        "mi300x-1x8",
        gettext_noop(
            "8 x MI300X (Infinity Fabric mesh, 7 x 64 GB/s per direction per GPU); "
            "all_reduce_bench.py (torch.distributed over RCCL), 4 GB payload"
        ),
    ),
    (
        "rtx5090-1x8-pcie5",
        gettext_noop(
            "8 x RTX 5090 on PCIe 5.0 (one server, 2 x Xeon 8480+); all_reduce_perf -b 1g -e 8g "
            "-g 8, max busbw"
        ),
    ),
    (
        "rtx5090-1x4-pcie5",
        gettext_noop("4 x RTX 5090 on PCIe 5.0 (same server); all_reduce_perf, max busbw"),
    ),
    (
        "aws-p5-",
        gettext_noop(
            "AWS ml.p5.48xlarge (SageMaker HyperPod): %(nodes)s nodes x 8 H100, EFA 32 x 100 "
            "Gb/s; all_reduce_perf -b 32M -e 8192M with the aws-ofi-nccl tuner, out-of-place, "
            "%(size)s"
        ),
    ),
    (
        "coreweave-h200-2x8-ib-",
        gettext_noop(
            "CoreWeave (SkyPilot example): 2 nodes x 8 H200, InfiniBand; all_reduce_perf "
            "out-of-place, %(size)s"
        ),
    ),
    (
        "gcp-a3-mega-2x8-tcpxo-",
        gettext_noop(
            "GCP a3-megagpu-8g: 2 nodes x 8 H100, GPUDirect-TCPXO 8 x 200 Gb/s; all_reduce_perf "
            "-b 8 -e 8G, out-of-place, %(size)s"
        ),
    ),
    (
        "tcp-100g-4x8-v100",
        gettext_noop(
            "4 nodes x 8 V100-32G, 100 Gb/s TCP network; nccl-tests all_reduce 8M-128M, 'best "
            "performance (bus-bw) between 4~6 GB/s': the midpoint, 5 GB/s, at 128 MiB"
        ),
    ),
    (
        "tcp-32g-2x1-v100",
        gettext_noop(
            "2 nodes x 1 V100 over 32 Gb/s TCP; all_reduce_perf -b 1G -e 1G: 'not ... more than "
            "60%% of wire speed', i.e. 0.6 x 4 GB/s = 2.4 GB/s busbw (n = 2: busbw = algbw)"
        ),
    ),
)


def _message_size(size_bytes: int) -> str:
    return f"{size_bytes // GIB} GiB" if size_bytes % GIB == 0 else f"{size_bytes // 2**20} MiB"


def configuration_msgid(point: CalibrationPoint) -> str | None:
    """The msgid that reproduces this point's English configuration, or None."""
    values = {"nodes": point.nodes, "size": _message_size(point.message_bytes)}
    for prefix, message in CALIBRATION_CONFIGURATIONS:
        if point.key.startswith(prefix) and message % values == point.configuration:
            return message
    return None


def configuration_text(point: CalibrationPoint) -> str:
    """The point's configuration in the active language (English when no msgid reproduces it)."""
    msgid = configuration_msgid(point)
    if msgid is None:
        return point.configuration
    return gettext(msgid) % {"nodes": point.nodes, "size": _message_size(point.message_bytes)}


@cache
def _calibration_report() -> tuple:
    return tuple(calibration_report())


def calibration_rows() -> list[dict[str, Any]]:
    """Published nccl-tests bus bandwidths against the model at each test's configuration."""
    points = {point.key: point for point in CALIBRATION_POINTS}
    return [
        {
            "kind": KIND_LABELS.get(row.kind, row.kind),
            "configuration": configuration_text(points[row.key]),
            "source_url": row.source_url,
            "published": format_decimal(row.published_busbw_gbytes_per_s, 1),
            "model": format_decimal(row.model_busbw_gbytes_per_s, 1),
            "error": f"{row.error:+.1%}" if abs(row.error) >= 0.0005 else "0.0%",
            "fitted": points[row.key].fitted,
        }
        for row in _calibration_report()
    ]


JOB_FIELDS = (
    ("params_b", _("Model parameters (billions)"), "", "any"),
    ("bytes_per_param", _("Bytes per parameter"), "2", "any"),
    ("tokens_per_step", _("Tokens per step"), "4194304", "1"),
    ("mfu", _("Model FLOPs utilisation (0-1)"), "0.4", "any"),
    ("overlap", _("Communication hidden behind compute (0-1)"), "0", "any"),
)
INFERENCE_FIELDS = (
    ("context_tokens", _("Context tokens"), "4096", "1"),
    ("batch", _("Batch (sequences)"), "1", "1"),
    ("kv_bytes_per_token", _("KV cache bytes per token"), "327680", "1"),
)
MODE_LABELS = {
    "train-fsdp": _("Training, fully sharded (FSDP / ZeRO-3)"),
    "train-ddp": _("Training, data parallel (DDP)"),
    "inference": _("Inference (does it fit one NVLink domain?)"),
}
EXAMPLES = (
    (
        _("70B parameters, bf16, fully sharded, 4,194,304 tokens per step, 1-16 nodes"),
        "params_b=70&mode=train-fsdp&bytes_per_param=2&tokens_per_step=4194304"
        "&nodes=1&nodes=2&nodes=4&nodes=8&nodes=16",
    ),
    (
        _("70B inference, 32k context, one node"),
        "params_b=70&mode=inference&context_tokens=32768&batch=1&nodes=1",
    ),
    (
        _("8B, data parallel, on PCIe-only nodes vs NVLink nodes"),
        "params_b=8&mode=train-ddp&gpu_count_min=2&nodes=1&nodes=2&nodes=4",
    ),
)


def job_inputs(
    query: QueryDict, errors: Mapping[str, list[str]], fields: Iterable[tuple]
) -> list[dict[str, Any]]:
    """The form's job inputs, echoing what was sent (first value) with their errors."""
    return [
        {
            "name": name,
            "label": label,
            "value": query.get(name, ""),
            "default": default,
            "step": step,
            "errors": errors.get(name, []),
        }
        for name, label, default, step in fields
    ]


def node_choices(query: QueryDict) -> list[dict[str, Any]]:
    """Checkboxes for NODE_CHOICES plus any other node count the link carried."""
    sent = [value.strip() for value in query.getlist("nodes") if value.strip()]
    checked = set(sent) if sent else {"1", "2", "4", "8", "16"}
    values = [str(n) for n in NODE_CHOICES]
    values += [v for v in dict.fromkeys(sent) if v not in values and _NODE_COUNT.fullmatch(v)]
    return [{"value": value, "checked": value in checked} for value in values]


def job_assumptions(assumptions: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each job parameter the estimate used: its name, its form label, its value (and meaning)."""
    labels = {name: label for name, label, *_rest in (*JOB_FIELDS, *INFERENCE_FIELDS)}
    labels |= {"mode": _("What to estimate"), "nodes": _("Node counts to estimate")}
    rows = []
    for name in (
        "params_b",
        "mode",
        "bytes_per_param",
        "tokens_per_step",
        "nodes",
        "mfu",
        "overlap",
        "context_tokens",
        "batch",
        "kv_bytes_per_token",
    ):
        value = assumptions[name]
        rows.append(
            {
                "name": name,
                "label": labels[name],
                "value": ", ".join(map(str, value)) if name == "nodes" else value,
                "meaning": MODE_LABELS.get(value) if name == "mode" else None,
            }
        )
    return rows


def page_context(
    request: HttpRequest, query: EstimateQuery, run: EstimateRun | None
) -> dict[str, Any]:
    form = query.listing.filterset.form
    for name, messages in query.errors.items():
        if name in form.fields and name not in form.errors:
            form.add_error(name, messages)
    mode = request.GET.get("mode", "") if query.asked else "train-fsdp"
    context: dict[str, Any] = {
        "query": query,
        "form": form,
        "errors": query.errors,
        "job_fields": job_inputs(request.GET, query.errors, JOB_FIELDS),
        "inference_fields": job_inputs(request.GET, query.errors, INFERENCE_FIELDS),
        "modes": [(value, MODE_LABELS[value]) for value in MODES],
        "mode": mode,
        "mode_known": mode in MODES,
        "nodes": node_choices(request.GET),
        "ids": request.GET.get("ids", ""),
        "examples": EXAMPLES,
        "formulas": [gettext(message) % {} for message in FORMULA_MESSAGES],
        "calibration": calibration_rows(),
        "uncalibrated": {KIND_LABELS[k]: gettext(v) for k, v in UNCALIBRATED_KINDS.items()},
        "api_url": f"{reverse('api-estimate')}?{request.GET.urlencode()}",
    }
    if run is None:
        return context
    job = query.job
    results = run.data["results"]
    rows = [
        display_row(
            result,
            job.overlap,
            run.phrases.get((result["instance"]["id"], result["nodes"]), (None, ())),
        )
        for result in results
    ]
    if job.is_training:
        ranked = [row for row in rows if row["r"]["cost_per_billion_tokens_usd"] is not None]
        rest = [row for row in rows if row["r"]["cost_per_billion_tokens_usd"] is None]
    else:
        ranked = [row for row in rows if row["r"]["fits"]]
        rest = [row for row in rows if not row["r"]["fits"]]
    holders: dict[Any, dict[str, Any]] = {}
    for row in rows:
        if row["r"]["fits"] and not job.is_training:
            holders.setdefault(row["r"]["instance"]["id"], row)
    assumptions = run.data["assumptions"]
    context |= {
        "job": job,
        "training": job.is_training,
        "result_count": len(results),
        "instance_count": len(run.specs),
        "ranked": ranked[:TABLE_ROWS_MAX],
        "ranked_count": len(ranked),
        "rest": rest[:TABLE_ROWS_MAX],
        "rest_count": len(rest),
        "rows_max": TABLE_ROWS_MAX,
        "holders": list(holders.values()),
        "summary": interconnect_summary(results, run.specs, job.nodes) if job.is_training else [],
        "chart": efficiency_chart(results, job.nodes) if job.is_training else None,
        "assumptions": assumptions,
        "job_assumptions": job_assumptions(assumptions),
        "significant_digits": SIGNIFICANT_DIGITS,
        "efficiency_factors": [
            (KIND_LABELS.get(kind, kind), value, kind in UNCALIBRATED_KINDS)
            for kind, value in assumptions["efficiency_factors"].items()
        ],
        "latencies": [
            (
                KIND_LABELS.get(kind, kind),
                value,
                assumptions["latency_us_per_step_small_messages"].get(kind),
            )
            for kind, value in assumptions["latency_us_per_step"].items()
        ],
        "bar_width": BAR_WIDTH,
    }
    return context


@require_safe
def estimate_page(request: HttpRequest) -> HttpResponse:
    """The estimator: the job form, the ranked table, the chart, formulas and calibration."""
    query = parse_estimate_query(request.GET)
    if not query.asked:
        # The empty form (with worked examples); only filter errors, such as ORM-shaped
        # names, count, since no job was asked for.
        query.errors = {k: v for k, v in query.errors.items() if k not in JOB_KEYS}
    run = run_estimate(query, request.build_absolute_uri) if query.is_valid else None
    status = 400 if query.errors else 200
    return render(
        request, "estimator/estimate.html", page_context(request, query, run), status=status
    )
