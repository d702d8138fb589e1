"""The estimator's page `/estimate/` and `GET /api/estimate` (CONTRACT.md, `/api/estimate`).

Catalog rows become `InstanceSpec`s, the query string a `Job` (`parse_job`), and
`offerings.estimator.estimate()` does the rest. Page and API go through `run_estimate()`, so they
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
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_safe

from offerings.estimator import (
    FORMULAS,
    JOB_KEYS,
    MODES,
    UNCALIBRATED_KINDS,
    FabricSpec,
    GpuLinkSpec,
    InstanceSpec,
    Job,
    estimate,
    intra_link,
    parse_job,
)
from offerings.estimator_calibration import CALIBRATION_POINTS, calibration_report
from offerings.filters import ListingQuery, parse_instance_ids, parse_listing_query
from offerings.listing import RateTable, attach_row_offers, detail_path, offer_usd
from offerings.models import InstanceType

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
        errors.setdefault(name, []).extend(messages)
    if job is not None and job.mfu < MFU_MIN:
        errors.setdefault("mfu", []).append(f"Must be at least {MFU_MIN:g}.")
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


def run_estimate(query: EstimateQuery, absolute: Callable[[str], str]) -> EstimateRun:
    """Estimate every (matching instance, node count); the same numbers for page and API."""
    if query.job is None:
        raise ValueError("run_estimate needs a valid query")
    rates = RateTable()
    rows = attach_row_offers(query.listing.filterset.qs)
    specs = {row.pk: instance_spec(row, rates, absolute) for row in rows}
    data = rounded(estimate(specs.values(), query.job).to_dict())
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
    return EstimateRun(specs=specs, data=data)


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


def format_seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0 s"
    if value >= 100:
        return f"{value:,.0f} s"
    if value >= 1:
        return f"{value:.1f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e6:.0f} µs"


def format_usd(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.4f}"


def format_share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def format_bandwidth(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} GB/s"


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


def display_row(result: dict[str, Any], overlap: float) -> dict[str, Any]:
    """The page's view of one API result: the same numbers, formatted, plus its bar."""
    return {
        "r": result,
        "key": f"{result['instance']['id']}:{result['nodes']}",
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
    "ethernet": "Ethernet (TCP)",
    "unknown": "unknown",
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


@cache
def calibration_rows() -> list[dict[str, Any]]:
    """Published nccl-tests bus bandwidths against the model at each test's configuration."""
    points = {point.key: point for point in CALIBRATION_POINTS}
    return [
        {
            "kind": KIND_LABELS.get(row.kind, row.kind),
            "configuration": row.configuration,
            "source_url": row.source_url,
            "published": f"{row.published_busbw_gbytes_per_s:,.1f}",
            "model": f"{row.model_busbw_gbytes_per_s:,.1f}",
            "error": f"{row.error:+.1%}" if abs(row.error) >= 0.0005 else "0.0%",
            "fitted": points[row.key].fitted,
        }
        for row in calibration_report()
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
        "formulas": FORMULAS,
        "calibration": calibration_rows(),
        "uncalibrated": {KIND_LABELS[k]: v for k, v in UNCALIBRATED_KINDS.items()},
        "api_url": f"{reverse('api-estimate')}?{request.GET.urlencode()}",
    }
    if run is None:
        return context
    job = query.job
    results = run.data["results"]
    rows = [display_row(result, job.overlap) for result in results]
    if job.is_training:
        ranked = [row for row in rows if row["r"]["cost_per_billion_tokens_usd"] is not None]
        rest = [row for row in rows if row["r"]["cost_per_billion_tokens_usd"] is None]
    else:
        ranked = [row for row in rows if row["r"]["fits"]]
        rest = [row for row in rows if not row["r"]["fits"]]
    holders: dict[Any, dict[str, Any]] = {}
    for result in results:
        if result["fits"] and not job.is_training:
            holders.setdefault(result["instance"]["id"], result)
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
