"""Training and inference estimates of each (instance, node count), their verdicts and ranking.

`estimate()` is the estimator's entry point: for training every instance at every node count of
the job, one row each; for inference one row per instance, at the smallest node count that fits
(`choose_inference_row`). Each row has a plain-language verdict, and the rows are ranked in three
tiers by `rank_key`. A training row times compute and communication per step, over its
micro-batches (offerings.estimator.collectives), and checks that the model states fit; an
inference row checks that weights and KV cache fit one NVLink domain, and what tensor
parallelism costs per token when they do not. Reasons and verdicts are phrases, said in English
here for the API (offerings.estimator.phrases). Pure Python, as offerings.estimator.core.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from offerings.estimator.collectives import (
    DOMAIN_SIZE_UNKNOWN,
    CommTimes,
    Plan,
    effective_bandwidth,
    intra_link,
    plan,
    spanning_domain,
)
from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    FORMULAS,
    GIB,
    HIDDEN_PER_LAYER,
    TP_ALLREDUCES_PER_LAYER,
    UNCALIBRATED_KINDS,
    Constants,
    Estimate,
    EstimateResult,
    InstanceSpec,
    Job,
    ring_latencies,
)
from offerings.estimator.nccl import communication
from offerings.estimator.phrases import Phrase, english, gettext_noop, join_reasons

# --------------------------------------------------------------------------------------------
# Estimation
# --------------------------------------------------------------------------------------------


def _availability(instance: InstanceSpec, nodes: int) -> Phrase | None:
    """Why `nodes` nodes cannot be booked self-serve, or None."""
    if nodes <= 1:
        return None
    fabric = instance.fabric
    if fabric.multi_node is None:
        return Phrase("multi-node-unstated", {"nodes": nodes})
    if not fabric.multi_node:
        return Phrase("no-multi-node", {"nodes": nodes})
    if fabric.max_nodes is not None and nodes > fabric.max_nodes:
        return Phrase("beyond-max-nodes", {"nodes": nodes, "max_nodes": fabric.max_nodes})
    return None


def _instance_ref(instance: InstanceSpec) -> dict[str, Any]:
    return {
        "id": instance.id,
        "provider": instance.provider,
        "name": instance.name,
        "url": instance.url,
    }


def _gib(value_bytes: float) -> float:
    return value_bytes / GIB


def estimate_training(
    instance: InstanceSpec,
    job: Job,
    nodes: int,
    constants: Constants = DEFAULT_CONSTANTS,
) -> EstimateResult:
    """One training row: compute, communication, step, efficiency, cost and memory fit."""
    row = _training_row(instance, job, nodes, constants)
    # On its own a row cannot know the other node counts; estimate() refines this verdict.
    return _with_verdict(row, _training_verdict(row, None, constants.comm_bound_efficiency))


@dataclass(slots=True)
class TrainingBasis:
    """What a training row's figures rest on before any communication: its compute time and
    whether its model states fit. Cheap, and a lower bound of the step (offerings.estimator.
    ranking ranks with it before it times any collective)."""

    gpus: int
    compute_s: float | None  # None: the GPU's dense BF16 TFLOPS is unknown
    per_gpu: float  # bytes of model state per GPU
    limit: float | None  # bytes a GPU may hold; None: its memory is unknown
    unavailable: Phrase | None  # why this many nodes cannot be booked self-serve

    @property
    def fits(self) -> bool:
        return self.unavailable is None and self.limit is not None and self.per_gpu <= self.limit


@dataclass(slots=True)
class TrainingFigures:
    """The physics of one training row, before any phrase or price: what `_training_row`
    reports in full and what the ranking (offerings.estimator.ranking) reads of every row."""

    basis: TrainingBasis
    plan: Plan
    times: CommTimes
    micro_batches: int
    step_s: float | None  # compute + exposed communication; never below basis.compute_s
    efficiency: float | None


def training_basis(
    instance: InstanceSpec, job: Job, nodes: int, constants: Constants = DEFAULT_CONSTANTS
) -> TrainingBasis:
    """Compute time and memory of a training row of `nodes` nodes. It reads the GPU (TFLOPS,
    memory), its count and the fabric's booking facts (multi-node, maximum nodes) only: the
    ranking shares one basis among the hardware that have the same ones."""
    gpus = nodes * instance.gpu_count
    params = job.params
    compute_s: float | None = None
    if instance.bf16_dense_tflops is not None and instance.bf16_dense_tflops > 0:
        flops = 6 * params * job.tokens_per_step
        compute_s = flops / (gpus * instance.bf16_dense_tflops * 1e12 * job.mfu)
    # Memory: weights + gradients at bytes_per_param, Adam state at 12 bytes, per GPU.
    states = params * (2 * job.bytes_per_param + constants.optimizer_bytes_per_param)
    limit = None
    if instance.gpu_memory_gib is not None:
        limit = instance.gpu_memory_gib * GIB * constants.training_memory_fraction
    return TrainingBasis(
        gpus=gpus,
        compute_s=compute_s,
        per_gpu=states / gpus if job.mode == "train-fsdp" else states,
        limit=limit,
        unavailable=_availability(instance, nodes),
    )


def training_figures(
    instance: InstanceSpec, job: Job, nodes: int, constants: Constants = DEFAULT_CONSTANTS
) -> TrainingFigures:
    """Compute, communication, step, efficiency and memory of one training row."""
    basis = training_basis(instance, job, nodes, constants)
    the_plan = plan(instance, nodes, constants)
    fsdp = job.mode == "train-fsdp"
    # DDP all-reduces the accumulated gradients once per step; FSDP with full resharding
    # all-gathers the parameters for each micro-batch's forward and backward pass and
    # reduce-scatters its gradients (three calls per micro-batch). Each call is the collective
    # model's (offerings.estimator.nccl).
    micro_batches = job.micro_batches(the_plan.gpus)
    size = job.params * job.bytes_per_param
    calls = (
        (("all_gather", size, 2 * micro_batches), ("reduce_scatter", size, micro_batches))
        if fsdp
        else (("all_reduce", size, 1),)
    )
    times = communication(instance, nodes, calls, constants)
    compute_s = basis.compute_s
    step_s = efficiency = None
    if compute_s is not None and times.total_s is not None:
        step_s = compute_s + (1 - job.overlap) * times.total_s
        efficiency = compute_s / step_s if step_s > 0 else 1.0
    return TrainingFigures(
        basis=basis,
        plan=the_plan,
        times=times,
        micro_batches=micro_batches,
        step_s=step_s,
        efficiency=efficiency,
    )


def training_costs(
    price_per_hour_usd: float | None, nodes: int, fits: bool, step_s: float | None, job: Job
) -> tuple[float | None, float | None, float | None]:
    """(cost per hour, per step, per billion tokens) of a training row; None where unknown."""
    if price_per_hour_usd is None:
        return None, None, None
    cost_hour = nodes * price_per_hour_usd
    if not fits or step_s is None:
        return cost_hour, None, None
    cost_step = cost_hour * step_s / 3600
    return cost_hour, cost_step, cost_step / job.tokens_per_step * 1e9


def _training_row(
    instance: InstanceSpec, job: Job, nodes: int, constants: Constants
) -> EstimateResult:
    """A training row without its verdict, which depends on the other node counts too."""
    figures = training_figures(instance, job, nodes, constants)
    basis = figures.basis
    the_plan, times, compute_s = figures.plan, figures.times, basis.compute_s
    step_s, limit, per_gpu = figures.step_s, basis.limit, basis.per_gpu
    gpus = the_plan.gpus
    missing = list(the_plan.missing)
    if compute_s is None:
        missing.append(gettext_noop("dense BF16 TFLOPS"))
    reasons: list[Phrase] = []
    if limit is None:
        missing.append(gettext_noop("GPU memory"))
    elif per_gpu > limit:
        reasons.append(
            Phrase(
                "states-too-big",
                {
                    "per_gpu_gib": _gib(per_gpu),
                    "sharded": job.mode == "train-fsdp",
                    "gpus": gpus,
                    "limit_gib": _gib(limit),
                },
            )
        )
    if basis.unavailable:
        reasons.insert(0, basis.unavailable)
    fits = basis.fits
    cost_hour, cost_step, cost_billion = training_costs(
        instance.price_per_hour_usd, nodes, fits, step_s, job
    )

    bottleneck: str | None = None
    if compute_s is not None and times.total_s is not None:
        exposed = (1 - job.overlap) * times.total_s
        if exposed <= compute_s or times.intra_s is None or times.inter_s is None:
            bottleneck = "compute"
        else:
            bottleneck = "inter" if times.inter_s >= times.intra_s else "intra"

    if not fits and not reasons:
        reasons.append(Phrase("unknown", {"missing": tuple(dict.fromkeys(missing))}))
    return EstimateResult(
        instance=_instance_ref(instance),
        nodes=nodes,
        gpus=gpus,
        fits=fits,
        reason=join_reasons(reasons),
        compute_s=compute_s,
        comm_intra_s=times.intra_s,
        comm_inter_s=times.inter_s,
        comm_s=times.total_s,
        step_s=step_s,
        efficiency=figures.efficiency,
        cost_per_step_usd=cost_step,
        cost_per_billion_tokens_usd=cost_billion,
        cost_per_hour_usd=cost_hour,
        intra_gbytes_per_s_per_gpu=effective_bandwidth(
            the_plan.intra_kind, the_plan.intra_raw, constants
        ),
        inter_gbytes_per_s_per_gpu=effective_bandwidth(
            the_plan.inter_kind, the_plan.inter_raw, constants
        ),
        intra_link=the_plan.intra_kind,
        inter_link=the_plan.inter_kind,
        group_gpus=the_plan.group_gpus,
        groups=the_plan.groups,
        bottleneck=bottleneck,
        memory_per_gpu_gib=_gib(per_gpu),
        memory_limit_gib=_gib(limit) if limit is not None else None,
        missing=tuple(dict.fromkeys(missing)),
        verdict="",
        micro_batches=figures.micro_batches,
        reason_phrases=tuple(reasons),
    )


def transformer_shape(
    params: float, hidden_per_layer: int = HIDDEN_PER_LAYER
) -> tuple[float, float]:
    """First-order (layers, hidden) of a dense transformer: P = 12 L h^2 with h = 128 L."""
    layers = (params / (12 * hidden_per_layer**2)) ** (1 / 3)
    return layers, hidden_per_layer * layers


def estimate_inference(
    instance: InstanceSpec,
    job: Job,
    nodes: int,
    constants: Constants = DEFAULT_CONSTANTS,
) -> EstimateResult:
    """One inference row: do weights + KV cache fit one NVLink domain; if not, what TP costs.

    The domain is the NVLink/Infinity Fabric domain (up to its size across the row's nodes when
    it spans nodes); a PCIe-only node's "domain" is one GPU (tensor parallelism over PCIe works
    but is slow, so it is reported as not fitting, with its cost), and bridge pairs give 2.
    """
    g = instance.gpu_count
    gpus = nodes * g
    missing: list[str] = []
    weights = job.params * job.bytes_per_param
    kv = job.context_tokens * job.batch * job.kv_bytes_per_token
    need = weights + kv
    _, _, domain, link_missing = intra_link(instance, constants)
    spanning: int | None = None
    if instance.link.technology in ("nvlink", "infinity-fabric"):
        spanning = spanning_domain(instance, domain)
        if spanning is not None:
            domain_gpus: int | None = min(spanning, gpus)
        else:
            domain_gpus = None if domain is None else min(domain, g)
    elif instance.link.technology == "none":
        domain_gpus = 1
    else:
        domain_gpus = None
    if domain_gpus is None:
        missing.extend(link_missing or [DOMAIN_SIZE_UNKNOWN["nvlink"]])

    reasons: list[Phrase] = []
    unavailable = _availability(instance, nodes)
    if unavailable:
        reasons.append(unavailable)
    per_gpu_usable: float | None = None
    fits_domain = False
    nodes_needed: int | None = None
    if instance.gpu_memory_gib is None:
        missing.append(gettext_noop("GPU memory"))
    else:
        per_gpu_usable = instance.gpu_memory_gib * GIB * constants.inference_memory_fraction
        nodes_needed = max(1, math.ceil(need / (per_gpu_usable * g)))
        if domain_gpus is not None:
            domain_usable = per_gpu_usable * domain_gpus
            fits_domain = need <= domain_usable
            if not fits_domain:
                if domain_gpus == 1:
                    domain_kind = "pcie"
                elif spanning is not None and domain_gpus < spanning:
                    domain_kind = "booked"
                else:
                    domain_kind = "domain"
                reasons.append(
                    Phrase(
                        "domain-too-small",
                        {
                            "needed_gib": _gib(need),
                            "weights_gib": _gib(weights),
                            "kv_gib": _gib(kv),
                            "domain": domain_kind,
                            "domain_gpus": domain_gpus,
                            "spanning": spanning,
                            "usable_gib": _gib(domain_usable),
                            "nodes_needed": nodes_needed,
                        },
                    )
                )
    fits = fits_domain and not unavailable and not missing

    tp_comm = tp_fabric = None
    tp_plan: Plan | None = None
    if not fits_domain and nodes_needed is not None:
        tp_plan = plan(instance, nodes_needed, constants)
        if tp_plan.gpus > 1:
            layers, hidden = transformer_shape(job.params, constants.hidden_per_layer)
            message = job.batch * hidden * job.bytes_per_param
            allreduces = TP_ALLREDUCES_PER_LAYER * layers
            times = communication(instance, nodes_needed, (("all_reduce", message, 1),), constants)
            missing.extend(tp_plan.missing)
            if times.total_s is not None and times.inter_s is not None:
                tp_comm = allreduces * times.total_s / job.batch
                tp_fabric = allreduces * times.inter_s / job.batch

    cost_hour = None
    if instance.price_per_hour_usd is not None:
        cost_hour = nodes * instance.price_per_hour_usd
    if not fits and not reasons:
        reasons.append(Phrase("unknown", {"missing": tuple(dict.fromkeys(missing))}))
    row = EstimateResult(
        instance=_instance_ref(instance),
        nodes=nodes,
        gpus=gpus,
        fits=fits,
        reason=join_reasons(reasons),
        compute_s=None,
        comm_intra_s=None,
        comm_inter_s=None,
        comm_s=None,
        step_s=None,
        efficiency=None,
        cost_per_step_usd=None,
        cost_per_billion_tokens_usd=None,
        cost_per_hour_usd=cost_hour,
        intra_gbytes_per_s_per_gpu=(
            effective_bandwidth(tp_plan.intra_kind, tp_plan.intra_raw, constants)
            if tp_plan
            else None
        ),
        inter_gbytes_per_s_per_gpu=(
            effective_bandwidth(tp_plan.inter_kind, tp_plan.inter_raw, constants)
            if tp_plan
            else None
        ),
        intra_link=tp_plan.intra_kind if tp_plan else None,
        inter_link=tp_plan.inter_kind if tp_plan else None,
        group_gpus=tp_plan.group_gpus if tp_plan else (domain_gpus or 1),
        groups=tp_plan.groups if tp_plan else 1,
        bottleneck=None,
        memory_per_gpu_gib=_gib(need / domain_gpus) if domain_gpus else None,
        memory_limit_gib=_gib(per_gpu_usable) if per_gpu_usable is not None else None,
        missing=tuple(dict.fromkeys(missing)),
        verdict="",
        domain_gpus=domain_gpus,
        needed_gib=_gib(need),
        nodes_needed=nodes_needed,
        tp_comm_s_per_token=tp_comm,
        tp_fabric_s_per_token=tp_fabric,
        reason_phrases=tuple(reasons),
    )
    return _with_verdict(row, _inference_verdict(row))


# --------------------------------------------------------------------------------------------
# Verdicts and ranking
# --------------------------------------------------------------------------------------------


def _with_verdict(row: EstimateResult, verdict: Phrase) -> EstimateResult:
    return replace(row, verdict=english(verdict), verdict_phrase=verdict)


def _training_verdicts(rows: list[EstimateResult], constants: Constants) -> list[EstimateResult]:
    """Attach a plain-language verdict to each row of one instance (rows sorted by nodes)."""
    threshold = constants.comm_bound_efficiency
    good = [r.nodes for r in rows if r.efficiency is not None and r.efficiency >= threshold]
    last_good = max(good) if good else None
    return [_with_verdict(row, _training_verdict(row, last_good, threshold)) for row in rows]


def _stage_phrase(row: EstimateResult) -> Phrase | None:
    """'the network between nodes gives 30.0 GB/s per GPU (EFA)' for the slower communication stage."""
    if row.comm_inter_s and row.comm_intra_s is not None and row.comm_inter_s >= row.comm_intra_s:
        if row.inter_gbytes_per_s_per_gpu is None:
            return None
        return Phrase(
            "fabric-stage", {"bandwidth": row.inter_gbytes_per_s_per_gpu, "link": row.inter_link}
        )
    if row.comm_intra_s and row.intra_gbytes_per_s_per_gpu is not None:
        per_node = row.gpus // max(row.nodes, 1)
        spans_nodes = row.group_gpus > per_node
        where = "domain" if spans_nodes else ("node" if row.nodes == 1 else "each-node")
        return Phrase(
            "intra-stage",
            {
                "bandwidth": row.intra_gbytes_per_s_per_gpu,
                "link": row.intra_link,
                "where": where,
                "group_gpus": row.group_gpus,
            },
        )
    return None


# Reasons that are about booking that many nodes, not about the job: the job may fit them.
BOOKING_REASONS = frozenset({"multi-node-unstated", "no-multi-node", "beyond-max-nodes"})


def _booking_only(row: EstimateResult) -> bool:
    """Whether every reason a row does not fit is about booking its nodes."""
    return bool(row.reason_phrases) and all(
        phrase.code in BOOKING_REASONS for phrase in row.reason_phrases
    )


def _training_verdict(row: EstimateResult, last_good: int | None, threshold: float) -> Phrase:
    if row.efficiency is None:
        if row.missing:
            return Phrase("cannot-estimate", {"missing": row.missing})
        if row.reason_phrases:
            code = "not-bookable" if _booking_only(row) else "does-not-fit"
            return Phrase(code, {"reasons": row.reason_phrases})
        return Phrase("no-estimate")
    stage = _stage_phrase(row)
    if row.efficiency < threshold:
        beyond = last_good if last_good is not None and last_good < row.nodes else None
        verdict = Phrase(
            "communication-bound",
            {"beyond": beyond, "at": None if beyond else row.nodes, "stage": stage},
        )
    elif stage is None:
        verdict = Phrase("no-communication", {"efficiency": row.efficiency})
    else:
        verdict = Phrase("efficient", {"efficiency": row.efficiency, "stage": stage})
    if row.fits:
        return verdict
    code = "if-it-were-bookable" if _booking_only(row) else "if-it-fitted"
    return Phrase(code, {"reasons": row.reason_phrases, "verdict": verdict})


def _inference_verdict(row: EstimateResult) -> Phrase:
    if row.fits:
        return Phrase("fits-domain", {"domain_gpus": row.domain_gpus, "needed_gib": row.needed_gib})
    if row.reason_phrases and row.reason_phrases[0].code == "unknown":
        return Phrase("cannot-tell", {"reasons": row.reason_phrases})
    tp_link, tp_seconds = None, None
    if row.tp_fabric_s_per_token is not None and row.inter_link is not None:
        tp_link, tp_seconds = row.inter_link, row.tp_fabric_s_per_token
    elif row.tp_comm_s_per_token is not None and row.intra_link is not None:
        tp_link, tp_seconds = row.intra_link, row.tp_comm_s_per_token
    return Phrase(
        "inference-does-not-fit",
        {"reasons": row.reason_phrases, "tp_link": tp_link, "tp_s_per_token": tp_seconds},
    )


#: Reasons that only say the node count cannot be booked self-serve.
BOOKING_REASONS = frozenset({"multi-node-unstated", "no-multi-node", "beyond-max-nodes"})


def choose_inference_row(rows: Sequence[EstimateResult]) -> EstimateResult:
    """An instance's one inference row: the smallest requested node count that fits.

    When none fits, the row that says why most exactly: the smallest node count at which the
    model would fit but that count cannot be booked self-serve (an NVLink domain spanning nodes,
    as GB200 NVL72), else the smallest node count (its reason: the domain is too small, or
    which figure is unknown).
    """
    ordered = sorted(rows, key=lambda row: row.nodes)
    for row in ordered:
        if row.fits:
            return row
    for row in ordered:
        codes = {phrase.code for phrase in row.reason_phrases}
        if codes and codes <= BOOKING_REASONS and not row.missing:
            return row
    return ordered[0]


def _value(row: Any, name: str) -> Any:
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def tier(row: Any, inference: bool = False) -> int:
    """The ranking's tier of a result (an EstimateResult or its API dict).

    1: fits and has a cost (training: cost per billion tokens; inference, which has no token
    cost: price per hour); 2: fits, estimated, no price; 3: does not fit or cannot be estimated
    (a figure is unknown), with `reason` or `missing` saying which.
    """
    if not _value(row, "fits"):
        return 3
    if inference:
        return 1 if _value(row, "cost_per_hour_usd") is not None else 2
    if _value(row, "step_s") is None:
        return 3
    return 1 if _value(row, "cost_per_billion_tokens_usd") is not None else 2


def _instance_order(instance_id: Any) -> tuple[int, int, str]:
    """Instance ids in numeric order (catalog ids are integers; others after, as text)."""
    if isinstance(instance_id, int):
        return (0, instance_id, "")
    return (1, 0, str(instance_id))


def rank_key(row: Any, inference: bool = False) -> tuple[Any, ...]:
    """The one ranking of results, the API's and the page's: a total order.

    Tier first (`tier`); within tier 1 by cost, cheapest first (training: per billion tokens;
    inference: per hour); ties, and tiers 2 and 3, by instance id, then node count.
    """
    rank_tier = tier(row, inference)
    cost = 0.0
    if rank_tier == 1:
        name = "cost_per_hour_usd" if inference else "cost_per_billion_tokens_usd"
        cost = _value(row, name)
    return (rank_tier, cost, _instance_order(_value(row, "instance")["id"]), _value(row, "nodes"))


def assumptions(job: Job, constants: Constants = DEFAULT_CONSTANTS) -> dict[str, Any]:
    """Echo every parameter and constant the estimate used, for the page and the API."""
    return {
        "params_b": job.params_b,
        "mode": job.mode,
        "bytes_per_param": job.bytes_per_param,
        "tokens_per_step": job.tokens_per_step,
        "nodes": list(job.nodes) if not job.gpus else None,
        "gpus": list(job.gpus) or None,
        "mfu": job.mfu,
        "overlap": job.overlap,
        "context_tokens": job.context_tokens,
        "batch": job.batch,
        "kv_bytes_per_token": job.kv_bytes_per_token,
        "micro_batch_tokens": job.micro_batch_tokens,
        "efficiency_factors": dict(constants.efficiency),
        "uncalibrated_factors": dict(UNCALIBRATED_KINDS),
        "latency_us_per_step": ring_latencies(constants, "simple"),
        "base_latency_us_per_collective": constants.nccl_base_latency_us["ring"]["simple"],
        "latency_us_per_step_small_messages": ring_latencies(constants, "ll"),
        "base_latency_us_per_collective_small_messages": constants.nccl_base_latency_us["ring"][
            "ll"
        ],
        "pcie_gbytes_per_s_per_direction": {
            str(k): v for k, v in constants.pcie_gbytes_per_s.items()
        },
        "optimizer_bytes_per_param": constants.optimizer_bytes_per_param,
        "training_memory_fraction": constants.training_memory_fraction,
        "inference_memory_fraction": constants.inference_memory_fraction,
        "hidden_per_layer": constants.hidden_per_layer,
        "tp_allreduces_per_layer": TP_ALLREDUCES_PER_LAYER,
        "comm_bound_efficiency": constants.comm_bound_efficiency,
        "formulas": list(FORMULAS),
    }


def estimate(
    instances: Iterable[InstanceSpec],
    job: Job,
    constants: Constants = DEFAULT_CONSTANTS,
) -> Estimate:
    """Estimate each instance and rank the results in the three tiers of `rank_key`.

    Training: one result per (instance, node count). Inference: one result per instance
    (`choose_inference_row`).
    """
    results: list[EstimateResult] = []
    for instance in instances:
        counts = job.node_counts(instance.gpu_count)
        if job.is_training:
            rows = [_training_row(instance, job, n, constants) for n in counts]
            results.extend(_training_verdicts(rows, constants))
        else:
            rows = [estimate_inference(instance, job, n, constants) for n in counts]
            results.append(choose_inference_row(rows))
    results.sort(key=lambda row: rank_key(row, inference=not job.is_training))
    return Estimate(results=tuple(results), assumptions=assumptions(job, constants))


#: Every float the estimator hands out (API and page) is rounded to this many digits, once.
SIGNIFICANT_DIGITS = 6


def rounded(value: Any) -> Any:
    """Round every float to SIGNIFICANT_DIGITS; a non-finite one becomes None (valid JSON)."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item) for item in value]
    return value
