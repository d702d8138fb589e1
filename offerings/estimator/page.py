"""What the estimator's page shows besides the numbers: formatted rows, the reasons and verdicts
in the page's language, the interconnect summary, the calibration table and the job form.

offerings.estimator.views computes the estimate and hands the rounded API results here; each
helper formats them for the reader's language without changing a number (the page and the API
agree, and tests/estimator/test_views.py checks it). The efficiency chart's geometry is in
offerings.estimator.chart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from functools import cache
from typing import Any

from django.http import QueryDict
from django.utils.formats import number_format
from django.utils.translation import gettext, gettext_noop, ngettext, pgettext
from django.utils.translation import gettext_lazy as _

from offerings.estimator.calibration import (
    BAND_POINTS_MIN,
    CALIBRATION_POINTS,
    HELD_OUT_BY_SIZE,
    CalibrationPoint,
    calibration_report,
)
from offerings.estimator.collectives import intra_link
from offerings.estimator.core import GIB, InstanceSpec, Job
from offerings.estimator.phrases import FieldError, Language, Phrase
from offerings.money import RateTable, shown_gpu_hour_price, shown_usd_as

NODE_CHOICES = (1, 2, 4, 8, 16, 32)
#: The page asks for GPUs, as the planner does: these are its choices, and the ones ticked
#: when the query names neither GPUs nor nodes (one to sixteen 8-GPU nodes).
GPU_CHOICES = (8, 16, 32, 64, 128, 256, 512, 1024)
DEFAULT_GPUS = ("8", "16", "32", "64", "128")

_NODE_COUNT = re.compile(r"\d{1,4}", re.ASCII)


# --------------------------------------------------------------------------------------------
# Numbers, bars, and the phrases in the page's language
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
    """A cost as money: cents from one dollar up, three significant figures below (a cost per
    step of $0.00341 would read $0.00 in cents)."""
    return shown_gpu_hour_price(value)


def money_formatter(currency: str, rates: RateTable) -> Callable[[Any], str]:
    """`format_usd`, or the same in `currency` at its newest reference rate."""
    if currency == "USD":
        return format_usd
    return lambda value: shown_usd_as(value, currency, rates, small=True)


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


#: The page's language: the phrases' msgids through gettext, numbers as the language writes them.
PAGE_LANGUAGE = Language(
    gettext=gettext, ngettext=ngettext, pgettext=pgettext, decimal=format_decimal
)


def say(phrase: Phrase) -> str:
    """A reason or verdict of the estimator in the active language (English: the API's text)."""
    return PAGE_LANGUAGE.say(phrase)


def field_errors(errors: Mapping[str, Iterable[FieldError]]) -> dict[str, list[str]]:
    """`parse_job`'s messages by parameter, in the active language (English: the API's text,
    the messages' own strings)."""
    return {
        name: [error.say(PAGE_LANGUAGE) for error in messages] for name, messages in errors.items()
    }


def link_label(kind: str) -> str:
    """A link kind as the page's tables name it, in the active language."""
    return PAGE_LANGUAGE.link_label(kind)


def _stage_time(seconds: float | None, bandwidth: float | None) -> str:
    """'3.1 ms (342.0 GB/s)': a communication stage's time, and its bandwidth when known."""
    if bandwidth is None:
        return format_seconds(seconds)
    return f"{format_seconds(seconds)} ({format_bandwidth(bandwidth)})"


def display_row(
    result: dict[str, Any],
    overlap: float,
    phrases: tuple[Phrase | None, tuple[Phrase, ...]] = (None, ()),
    money: Callable[[Any], str] = format_usd,
) -> dict[str, Any]:
    """The page's view of one API result: the same numbers, formatted, plus its bar.

    `phrases` are the row's verdict and reasons from the estimator, said in the active language
    (without them the row shows the API's English); `money` writes the costs (in the page's
    currency, `money_formatter`).
    """
    verdict, reasons = phrases
    return {
        "r": result,
        "key": f"{result['instance']['id']}:{result['nodes']}",
        "verdict": say(verdict) if verdict else result["verdict"],
        "reason": PAGE_LANGUAGE.reasons(reasons) if reasons else result["reason"],
        "compute": format_seconds(result["compute_s"]),
        "intra": format_seconds(result["comm_intra_s"]),
        "inter": format_seconds(result["comm_inter_s"]),
        "step": format_seconds(result["step_s"]),
        "efficiency": format_share(result["efficiency"]),
        "cost_per_step": money(result["cost_per_step_usd"]),
        "cost_per_billion": money(result["cost_per_billion_tokens_usd"]),
        "cost_per_hour": money(result["cost_per_hour_usd"]),
        "inside": _stage_time(result["comm_intra_s"], result["intra_gbytes_per_s_per_gpu"]),
        "between": _stage_time(result["comm_inter_s"], result["inter_gbytes_per_s_per_gpu"]),
        "tp_per_token": format_seconds(result["tp_comm_s_per_token"]),
        "micro_batches": micro_batches_text(result["micro_batches"]),
        "bar": step_bar(result, overlap),
    }


def micro_batches_text(count: int | None) -> str:
    """'32 micro-batches' in the active language; empty for inference (no training step)."""
    if count is None:
        return ""
    return ngettext("%(n)s micro-batch", "%(n)s micro-batches", count) % {"n": count}


# --------------------------------------------------------------------------------------------
# The ranking's three tiers
# --------------------------------------------------------------------------------------------


def tier_sentence(counts: Mapping[int, int], training: bool) -> str:
    """How many results each tier holds, in the order the ranking lists them."""
    if training:
        first = ngettext(
            "%(n)s fits and has a price, ranked by cost per billion tokens",
            "%(n)s fit and have a price, ranked by cost per billion tokens",
            counts[1],
        )
    else:
        first = ngettext(
            "%(n)s fits and has a price, ranked by price per hour",
            "%(n)s fit and have a price, ranked by price per hour",
            counts[1],
        )
    second = ngettext("%(n)s fits but has no price", "%(n)s fit but have no price", counts[2])
    third = ngettext(
        "%(n)s does not fit or cannot be estimated",
        "%(n)s do not fit or cannot be estimated",
        counts[3],
    )
    return gettext("%(first)s; %(second)s; %(third)s.") % {
        "first": first % {"n": counts[1]},
        "second": second % {"n": counts[2]},
        "third": third % {"n": counts[3]},
    }


def tier_heading(tier: int, training: bool) -> str:
    """The heading of a tier's rows in the results table."""
    if tier == 1:
        if training:
            return gettext("Fits and has a price: ranked by cost per billion tokens")
        return gettext("Fits and has a price: ranked by price per hour")
    if tier == 2:
        return gettext("Fits, but no price is known: by instance")
    return gettext(
        "Does not fit, or cannot be estimated: the reason or the unknown figure, and where to "
        "correct it"
    )


def result_segments(rows: Iterable[dict[str, Any]], training: bool) -> list[dict[str, Any]]:
    """The page's rows cut where the tier changes, each run with its tier's heading."""
    segments: list[dict[str, Any]] = []
    for row in rows:
        if not segments or segments[-1]["tier"] != row["tier"]:
            segments.append(
                {"tier": row["tier"], "heading": tier_heading(row["tier"], training), "rows": []}
            )
        segments[-1]["rows"].append(row)
    return segments


def interconnect_summary(
    results: list[dict[str, Any]], specs: Mapping[Any, InstanceSpec], job: Job
) -> list[dict[str, Any]]:
    """Best efficiency each (link inside, fabric between) pair reaches at each of the job's
    columns (GPU counts when the job names them, else node counts).

    Rows that do not fit or cannot be booked at that size count too: this shows what the links
    allow. Ordered by the efficiency at the largest column, best first.
    """
    columns = list(job.columns)
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
                "label": f"{link_label(inside)} / {link_label(between)}",
                "best": {},
                "fabric_bw": None,
                "instances": set(),
            },
        )
        best = group["best"]
        for column in job.columns_of(result["nodes"], spec.gpu_count):
            best[column] = max(best.get(column, 0.0), result["efficiency"])
        group["instances"].add(result["instance"]["id"])
        bandwidth = result["inter_gbytes_per_s_per_gpu"]
        if bandwidth is not None:
            group["fabric_bw"] = max(group["fabric_bw"] or 0.0, bandwidth)
    summary = []
    for group in groups.values():
        cells = [group["best"].get(n) for n in columns]
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


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


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
        "coreweave-gb200-nvl72-1rack-",
        gettext_noop(
            "CoreWeave GB200 NVL72: one rack, 18 nodes x 4 GB200 (72 GPUs in one NVLink 5 "
            "domain); NCCL 2.26.2, all_reduce_perf, out-of-place, %(size)s"
        ),
    ),
    (
        "coreweave-gb200-nvl72-2racks-",
        gettext_noop(
            "CoreWeave GB200 NVL72: 2 racks, %(nodes)s nodes x 4 GB200, InfiniBand between "
            "racks; NCCL 2.26.2, all_reduce_perf, out-of-place, %(size)s"
        ),
    ),
    (
        "coreweave-gb200-nvl72-20racks-",
        gettext_noop(
            "CoreWeave GB200 NVL72: 20 racks, %(nodes)s nodes x 4 GB200, InfiniBand between "
            "racks; NCCL 2.26.2, all_reduce_perf, out-of-place, %(size)s"
        ),
    ),
    (
        "azure-nd96asr-v4-2x8-ib-",
        gettext_noop(
            "Azure Standard_ND96asr_v4 on AKS: 2 nodes x 8 A100 SXM4 40GB, InfiniBand 8 x 200 "
            "Gb/s; all_reduce_perf, out-of-place, %(size)s"
        ),
    ),
    (
        "nccl-pr1112-p5-8x8-efa",
        gettext_noop(
            "AWS p5.48xlarge: 8 nodes x 8 H100, EFA 32 x 100 Gb/s; NCCL 2.19.1, all_reduce_perf, "
            "out-of-place, 4 GiB"
        ),
    ),
    (
        "gcp-a3-highgpu-2x8-tcpx",
        gettext_noop(
            "GCP a3-highgpu-8g: 2 nodes x 8 H100, GPUDirect-TCPX 4 x 200 Gb/s; Google's example "
            "all_reduce_perf output, out-of-place, 1 GiB"
        ),
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
            "kind": link_label(row.kind),
            "configuration": configuration_text(points[row.key]),
            "source_url": row.source_url,
            "published": format_decimal(row.published_busbw_gbytes_per_s, 1),
            "model": format_decimal(row.model_busbw_gbytes_per_s, 1),
            "error": f"{row.error:+.1%}" if abs(row.error) >= 0.0005 else "0.0%",
            "fitted": points[row.key].fitted,
            "held_out": points[row.key].held_out,
        }
        for row in _calibration_report()
    ]


def held_out_rows() -> list[dict[str, Any]]:
    """The model's error on the held-out results, per link kind and size class (the API's error
    bands)."""
    sizes = {"small": gettext("< 256 MiB"), "large": gettext("≥ 256 MiB")}
    return [
        {
            "kind": link_label(kind),
            "sizes": sizes[size],
            "points": errors.points,
            "median": f"{errors.median_error:.1%}",
            "band": f"{errors.low_ratio:.2f}–{errors.high_ratio:.2f}"
            if errors.points >= BAND_POINTS_MIN
            else "–",
            "worst": f"{errors.worst_error:.1%}",
            "within": f"{errors.within_30_percent:.0%}",
        }
        for kind in sorted({kind for by_kind in HELD_OUT_BY_SIZE.values() for kind in by_kind})
        for size, by_kind in HELD_OUT_BY_SIZE.items()
        if (errors := by_kind.get(kind)) is not None
    ]


# --------------------------------------------------------------------------------------------
# The job form
# --------------------------------------------------------------------------------------------

JOB_FIELDS = (
    ("params_b", _("Model parameters (billions)"), "", "any"),
    ("bytes_per_param", _("Bytes per parameter"), "2", "any"),
    ("tokens_per_step", _("Tokens per step"), "4194304", "1"),
    ("mfu", _("Model FLOPs utilisation (0-1)"), "0.4", "any"),
    ("overlap", _("Communication hidden behind compute (0-1)"), "0", "any"),
    ("micro_batch_tokens", _("Tokens per GPU per micro-batch"), "16384", "1"),
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
        _("70B parameters, bf16, fully sharded, 4,194,304 tokens per step, 8 to 128 GPUs"),
        "params_b=70&mode=train-fsdp&bytes_per_param=2&tokens_per_step=4194304"
        "&gpus=8&gpus=16&gpus=32&gpus=64&gpus=128",
    ),
    (
        _("70B inference, 32k context, up to 8 GPUs"),
        "params_b=70&mode=inference&context_tokens=32768&batch=1&gpus=8",
    ),
    (
        _("8B, data parallel, on PCIe-only nodes vs NVLink nodes, 8 to 32 GPUs"),
        "params_b=8&mode=train-ddp&gpu_count_min=2&gpus=8&gpus=16&gpus=32",
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


def _sent(query: QueryDict, name: str) -> list[str]:
    """The values of a repeated count (`gpus`, `nodes`) the query gives, empty ones left out."""
    return [value.strip() for value in query.getlist(name) if value.strip()]


def count_choices(query: QueryDict) -> tuple[str, list[dict[str, Any]]]:
    """The form's size question: GPU counts (GPU_CHOICES plus any other count the link
    carried), or node counts when the link names nodes (as /api/estimate's links do)."""
    name, choices = "gpus", GPU_CHOICES
    sent = _sent(query, "gpus")
    if not sent and _sent(query, "nodes"):
        name, choices = "nodes", NODE_CHOICES
        sent = _sent(query, "nodes")
    checked = set(sent) if sent else set(DEFAULT_GPUS)
    values = [str(n) for n in choices]
    values += [v for v in dict.fromkeys(sent) if v not in values and _NODE_COUNT.fullmatch(v)]
    return name, [{"value": value, "checked": value in checked} for value in values]


def with_default_gpus(query: QueryDict) -> QueryDict:
    """The page's query with its default GPU counts when it names neither GPUs nor nodes (the
    API's default stays node counts)."""
    if _sent(query, "gpus") or _sent(query, "nodes"):
        return query
    query = query.copy()
    query.setlist("gpus", list(DEFAULT_GPUS))
    return query


def job_assumptions(assumptions: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each job parameter the estimate used: its name, its form label, its value (and meaning)."""
    labels = {name: label for name, label, *_rest in (*JOB_FIELDS, *INFERENCE_FIELDS)}
    labels |= {
        "mode": _("What to estimate"),
        "nodes": _("Node counts to estimate"),
        "gpus": _("GPUs wanted"),
    }
    rows = []
    for name in (
        "params_b",
        "mode",
        "bytes_per_param",
        "tokens_per_step",
        "gpus" if assumptions.get("gpus") else "nodes",
        "mfu",
        "overlap",
        "context_tokens",
        "batch",
        "kv_bytes_per_token",
        "micro_batch_tokens",
    ):
        value = assumptions[name]
        rows.append(
            {
                "name": name,
                "label": labels[name],
                "value": ", ".join(map(str, value)) if name in ("nodes", "gpus") else value,
                "meaning": MODE_LABELS.get(value) if name == "mode" else None,
            }
        )
    return rows
