"""The interconnect-aware estimator: time, efficiency and cost of a training step, and inference fit.

Pure Python: no database, no Django. The view turns catalog rows into `InstanceSpec`s, the query
string into a `Job` (with `parse_job`), and calls `estimate()`; everything it shows comes from the
dataclasses here. Every formula is written out below and in `FORMULAS`, so the page can print them.

Languages: the API speaks English, the page the reader's language. A reason or verdict is a `Phrase`
(a code and its values): `english()` writes the API's `reason` and `verdict`, and the view says the
same phrase through gettext. Text the page translates as it stands (formulas, names of unknown
figures, link kinds) is marked with the local `gettext_noop`, which only marks it for makemessages.

Units: GB = 1e9 bytes (bandwidths in GB/s, as nccl-tests and vendors quote them); GiB = 2**30 bytes
(memory, as the catalog stores it); Gb/s = 1e9 bits/s (fabric line rates). "Per direction" is what
a collective can use: vendors quote NVLink bidirectionally, so one direction is half their figure.

Model, in short (see FORMULAS for the exact text shown on the page):

* Bandwidth per GPU and direction, before efficiency: NVLink/Infinity Fabric = quoted bidirectional
  figure / 2; PCIe by generation (PCIE_GBYTES_PER_S) when there is no NVLink, or when the NVLink
  domain is smaller than the node (bridge pairs: the ring crosses PCIe); fabric = back-end Gb/s / 8 /
  GPUs per node. Each is multiplied by the efficiency factor of its link kind (EFFICIENCY), fitted
  to published nccl-tests bus bandwidths in `offerings.estimator.calibration`.
* Groups: m GPUs talk over the intra link (the node, or a whole NVLink domain when it spans nodes,
  as in GB200 NVL72, up to its size); D = ceil(G / m) such groups talk over the fabric.
* A collective pass over S bytes (one reduce-scatter or one all-gather) costs, hierarchically,
  intra: (m-1)/m x S / B_intra and inter: (D-1)/D x (S/m) / B_inter, plus per-step latencies. An
  all-reduce is two passes (reduce-scatter + all-gather), so for DDP this is exactly the issue's
  intra reduce-scatter + inter ring all-reduce 2(D-1)/D x (S/m) / B_inter + intra all-gather.
* NCCL pipelines the stages (chunks flow through NVLink and the NIC at the same time), so a
  collective takes as long as its slowest stage: comm = max(intra, inter). Adding them instead
  cannot reproduce published results: for the 1 GiB all-reduce on 2 x 8 H200 over InfiniBand
  (4.42 ms measured, calibration point coreweave-h200-2x8-ib-1 GiB) the calibrated NVLink stage
  takes 4.02 ms, leaving 0.38 ms for the fabric stage, which would need about 15 times the
  InfiniBand line rate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any


def gettext_noop(message: str) -> str:
    """Mark an English string for translation without translating it: this module has no Django.

    `makemessages` extracts the argument of every call named gettext_noop, so the page
    (offerings.estimator.views) can show the constant through gettext while the API keeps it as is.
    """
    return message


# --------------------------------------------------------------------------------------------
# Constants (each with its source)
# --------------------------------------------------------------------------------------------

#: Raw PCIe x16 bandwidth per direction, GB/s: lanes x transfer rate x encoding / 8 bits.
#: Gen3 8 GT/s and Gen4 16 GT/s, Gen5 32 GT/s with 128b/130b encoding: 15.75 / 31.5 / 63.0 GB/s;
#: Gen6 64 GT/s with FLIT mode: 121 GB/s. Same figures (rounded) as the PCIe table of
#: stas00/ml-engineering network/README.md ("PCIe 4 31 GBps, PCIe 5 63 GBps, PCIe 6 121 GBps"
#: unidirectional), https://github.com/stas00/ml-engineering/blob/master/network/README.md#pcie
PCIE_GBYTES_PER_S: dict[int, float] = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}

#: Link kinds with an efficiency factor: inside a group, and between groups (the fabrics: the
#: contract's fabric technology values other than "unknown").
GROUP_LINK_KINDS: tuple[str, ...] = ("nvlink", "nvlink-sharp", "infinity-fabric", "pcie")
FABRIC_KINDS: tuple[str, ...] = ("infiniband", "roce", "efa", "erdma", "tcpx", "ethernet")
LINK_KINDS: tuple[str, ...] = (*GROUP_LINK_KINDS, *FABRIC_KINDS)

#: Efficiency factor per link kind: bus bandwidth collectives reach / raw per-direction figure.
#: Fitted by `offerings.estimator.calibration.fit_efficiency` (least squares on log busbw) to the
#: published nccl-tests results recorded in CALIBRATION_POINTS there, running the model at each
#: test's own configuration; tests/test_estimator.py checks these equal a fresh fit (to 0.01).
#: Fitted at 1 GiB messages, the size of one transformer block's FSDP all-gather for 10-100B
#: models; at 8 GiB real collectives run up to ~30% faster (EFA), so the model is conservative.
#: "nvlink-sharp" (NVSwitch gen3+ with NVLink SHARP, NCCL's NVLS algorithm) exceeds 1: the switch
#: reduces in-network, so busbw (computed as for a ring) tops the wire rate. Kinds marked
#: UNCALIBRATED_KINDS have no published result we could run the model against; their value and
#: reason are stated there.
EFFICIENCY: dict[str, float] = {
    "nvlink": 0.76,
    "nvlink-sharp": 1.05,
    "infinity-fabric": 0.70,
    "pcie": 0.50,
    "infiniband": 0.61,
    "roce": 0.61,
    "efa": 0.60,
    "erdma": 0.61,
    "tcpx": 0.80,
    "ethernet": 0.43,
}

#: Kinds whose factor is not fitted, and why the stated value was chosen.
UNCALIBRATED_KINDS: dict[str, str] = {
    "roce": gettext_noop(
        "No clean published RoCE all_reduce_perf result found (NVIDIA/nccl#2409 is a reported "
        "misconfiguration). Set equal to InfiniBand: NCCL drives RoCE through the same IB-verbs "
        "transport on the same ConnectX NICs."
    ),
    "erdma": gettext_noop(
        "No published result found. Set equal to RoCE (Alibaba eRDMA is RDMA over Ethernet)."
    ),
}

#: Latency per ring step, microseconds: NCCL's own tuning model, Ring algorithm with the Simple
#: protocol (used for large messages), hwLat[] in src/graph/tuning.cc, NVIDIA/nccl commit
#: 01afd20a77b5804e0ecf1042509dd9d20ebf9e93: NVLink 3.4, PCI 5.7, NET 9.6. NCCL uses one NET
#: figure for every network; Infinity Fabric is given the NVLink figure (assumption).
LATENCY_US: dict[str, float] = {
    "nvlink": 3.4,
    "nvlink-sharp": 3.4,
    "infinity-fabric": 3.4,
    "pcie": 5.7,
    "infiniband": 9.6,
    "roce": 9.6,
    "efa": 9.6,
    "erdma": 9.6,
    "tcpx": 9.6,
    "ethernet": 9.6,
}
#: Base latency of one collective call, microseconds (same file: baseLat, Ring/Simple = 8.4).
BASE_LATENCY_US = 8.4

#: The same for small messages (inference tensor parallelism all-reduces kilobytes per token):
#: NCCL then uses the LL protocol, Ring/LL in the same table: NVLink 0.47, PCI 1.0, NET 2.7 us
#: per step, base 3.6 us.
LATENCY_LL_US: dict[str, float] = {
    "nvlink": 0.47,
    "nvlink-sharp": 0.47,
    "infinity-fabric": 0.47,
    "pcie": 1.0,
    "infiniband": 2.7,
    "roce": 2.7,
    "efa": 2.7,
    "erdma": 2.7,
    "tcpx": 2.7,
    "ethernet": 2.7,
}
BASE_LATENCY_LL_US = 3.6

#: Memory model, bytes per parameter besides the weights and gradients (which take
#: bytes_per_param each): Adam in mixed precision keeps an fp32 master copy and two fp32 moments,
#: 4 + 4 + 4 = 12 bytes (ZeRO, Rajbhandari et al. 2020, section 3.1: "K = 12" for mixed-precision
#: Adam; with 2-byte weights and gradients the 16 bytes per parameter of that paper).
OPTIMIZER_BYTES_PER_PARAM = 12.0

#: Training: share of each GPU's memory the model states may take; the rest is left for
#: activations, buffers and fragmentation (a stated margin, not a measurement: activations depend
#: on batch, sequence length and checkpointing, which the user controls).
TRAINING_MEMORY_FRACTION = 0.8

#: Inference: share of GPU memory for weights + KV cache, as vLLM's default
#: gpu_memory_utilization = 0.9 (https://docs.vllm.ai/en/latest/configuration/engine_args.html).
INFERENCE_MEMORY_FRACTION = 0.9

#: Transformer shape, first order, for tensor-parallel traffic in inference: parameters
#: P = 12 x layers x hidden^2 (Kaplan et al. 2020, "Scaling Laws for Neural Language Models",
#: N ~ 12 n_layer d_model^2) and hidden = 128 x layers (GPT-3 175B: 12288 / 96 = 128, Brown et
#: al. 2020 table 2.1). Megatron tensor parallelism all-reduces the activations twice per layer
#: (Shoeybi et al. 2019, section 3).
HIDDEN_PER_LAYER = 128
TP_ALLREDUCES_PER_LAYER = 2

#: Efficiency below which a row is "communication-bound" (communication takes as long as
#: compute).
COMM_BOUND_EFFICIENCY = 0.5

GIB = 2**30
GB = 1e9

MODES = ("train-ddp", "train-fsdp", "inference")

#: The formulas as the page prints them: %-format strings without placeholders ("%%" is a percent
#: sign), marked for translation; FORMULAS is the same text as the API returns it.
FORMULA_MESSAGES: tuple[str, ...] = (
    gettext_noop(
        "B_intra (GB/s per GPU per direction) = NVLink bidirectional GB/s / 2 x factor; PCIe "
        "x16 by generation x factor when there is no NVLink or the NVLink domain is smaller "
        "than the node"
    ),
    gettext_noop(
        "B_inter (GB/s per GPU per direction) = fabric Gb/s per node / 8 / GPUs per node x factor"
    ),
    gettext_noop(
        "m = GPUs in one intra group = GPUs per node, or min(NVLink domain size, all GPUs) "
        "when the domain spans nodes; D = ceil(all GPUs / m) groups joined by the fabric"
    ),
    gettext_noop("S = parameters x bytes_per_param"),
    gettext_noop(
        "one pass (reduce-scatter or all-gather) of S: intra = (m-1)/m x S / B_intra + (m-1) "
        "x latency_intra; inter = (D-1)/D x (S/m) / B_inter + (D-1) x latency_inter"
    ),
    gettext_noop(
        "train-ddp: one gradient all-reduce = 2 passes (intra reduce-scatter, inter ring "
        "all-reduce 2(D-1)/D x (S/m) / B_inter, intra all-gather)"
    ),
    gettext_noop(
        "train-fsdp: gradient reduce-scatter + parameter all-gather in the forward pass + "
        "parameter all-gather in the backward pass = 3 passes (1.5 x DDP traffic, as ZeRO-3)"
    ),
    gettext_noop(
        "communication = max(intra, inter) + 8.4 us per collective call (NCCL pipelines the stages)"
    ),
    gettext_noop(
        "compute = 6 x parameters x tokens_per_step / (GPUs x dense BF16 TFLOPS x 1e12 x mfu)"
    ),
    gettext_noop("step = compute + (1 - overlap) x communication; efficiency = compute / step"),
    gettext_noop(
        "cost per step = nodes x price per hour x step / 3600; cost per billion tokens = cost "
        "per step / tokens_per_step x 1e9"
    ),
    gettext_noop(
        "memory per GPU (train-ddp) = P x (2 x bytes_per_param + 12); (train-fsdp) the same / "
        "all GPUs; fits when <= 80%% of GPU memory (the rest left for activations)"
    ),
    gettext_noop(
        "inference: weights (P x bytes_per_param) + KV cache (context_tokens x batch x "
        "kv_bytes_per_token) must fit in 90%% of the memory of one NVLink domain"
    ),
    gettext_noop(
        "inference tensor-parallel traffic: layers = (P / (12 x 128^2))^(1/3), hidden = 128 x "
        "layers; per decode step 2 x layers all-reduces of batch x hidden x bytes_per_param, "
        "at NCCL's small-message (LL) latencies; per token = per step / batch"
    ),
)
FORMULAS: tuple[str, ...] = tuple(message % {} for message in FORMULA_MESSAGES)


@dataclass(frozen=True)
class Constants:
    """Every tunable number the model uses; `DEFAULT_CONSTANTS` holds the cited defaults."""

    efficiency: Mapping[str, float] = field(default_factory=lambda: dict(EFFICIENCY))
    latency_us: Mapping[str, float] = field(default_factory=lambda: dict(LATENCY_US))
    base_latency_us: float = BASE_LATENCY_US
    latency_ll_us: Mapping[str, float] = field(default_factory=lambda: dict(LATENCY_LL_US))
    base_latency_ll_us: float = BASE_LATENCY_LL_US
    pcie_gbytes_per_s: Mapping[int, float] = field(default_factory=lambda: dict(PCIE_GBYTES_PER_S))
    optimizer_bytes_per_param: float = OPTIMIZER_BYTES_PER_PARAM
    training_memory_fraction: float = TRAINING_MEMORY_FRACTION
    inference_memory_fraction: float = INFERENCE_MEMORY_FRACTION
    hidden_per_layer: int = HIDDEN_PER_LAYER
    comm_bound_efficiency: float = COMM_BOUND_EFFICIENCY

    def with_efficiency(self, **factors: float) -> Constants:
        """Return a copy with some efficiency factors replaced (names with '-' as '_')."""
        merged = dict(self.efficiency)
        merged.update({name.replace("_", "-"): value for name, value in factors.items()})
        return replace(self, efficiency=merged)


DEFAULT_CONSTANTS = Constants()

# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuLinkSpec:
    """The GPU-to-GPU link; technology is "nvlink", "infinity-fabric", "none" or "unknown"."""

    technology: str = "unknown"
    topology: str | None = None  # nvswitch, bridge, mesh, hybrid-cube-mesh, unknown
    generation: int | None = None
    domain_size: int | None = None  # GPUs in one domain; may exceed the node (NVL72: 72)
    bandwidth_gbytes_per_s: float | None = None  # per GPU, bidirectional, as vendors quote it


@dataclass(frozen=True)
class FabricSpec:
    """The back-end network between nodes; technology as in the contract's fabric values."""

    technology: str = "unknown"  # infiniband, roce, efa, erdma, tcpx, ethernet, unknown
    bandwidth_gbits_per_s: float | None = None  # per node, back-end ports summed
    multi_node: bool | None = None  # self-serve booking of >= 2 nodes on one fabric
    max_nodes: int | None = None


@dataclass(frozen=True)
class InstanceSpec:
    """One catalog instance type, as plain data. None means unknown."""

    id: int | str
    name: str
    gpu_count: int
    gpu_memory_gib: float | None
    bf16_dense_tflops: float | None
    pcie_generation: int | None
    link: GpuLinkSpec
    fabric: FabricSpec
    price_per_hour_usd: float | None = None  # one node, the row's price
    provider: str = ""
    url: str = ""

    def __post_init__(self) -> None:
        # The catalog's CheckConstraints guarantee this; a violation is a bug, not user input.
        if self.gpu_count < 1:
            raise ValueError(f"gpu_count must be at least 1, not {self.gpu_count}")


@dataclass(frozen=True)
class Job:
    """What the user wants to run (the contract's /api/estimate parameters)."""

    params_b: float
    mode: str
    bytes_per_param: float = 2.0
    tokens_per_step: int = 4_194_304
    nodes: tuple[int, ...] = (1, 2, 4, 8, 16)
    mfu: float = 0.4
    overlap: float = 0.0
    context_tokens: int = 4096
    batch: int = 1
    kv_bytes_per_token: int = 327_680

    @property
    def params(self) -> float:
        return self.params_b * 1e9

    @property
    def is_training(self) -> bool:
        return self.mode != "inference"


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phrase:
    """One reason or verdict as a code and its values, so the page can say it in its language.

    `english()` writes it as the API's `reason` and `verdict` text; offerings.estimator.views
    renders the same phrase through gettext. Values are unrounded numbers, link kinds, names of
    unknown figures, or nested phrases (a verdict quotes its reasons and its slowest stage).
    """

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EstimateResult:
    """One (instance, nodes) row; field names follow the contract's /api/estimate results."""

    instance: dict[str, Any]
    nodes: int
    gpus: int
    fits: bool
    reason: str | None
    compute_s: float | None
    comm_intra_s: float | None
    comm_inter_s: float | None
    comm_s: float | None
    step_s: float | None
    efficiency: float | None
    cost_per_step_usd: float | None
    cost_per_billion_tokens_usd: float | None
    cost_per_hour_usd: float | None
    intra_gbytes_per_s_per_gpu: float | None
    inter_gbytes_per_s_per_gpu: float | None
    intra_link: str | None  # link kind used inside a group ("nvlink", "pcie", ...)
    inter_link: str | None  # fabric kind used between groups
    group_gpus: int  # m: GPUs in one intra group (node or spanning NVLink domain)
    groups: int  # D: groups joined by the fabric
    bottleneck: str | None  # "compute", "intra" or "inter"
    memory_per_gpu_gib: float | None  # training: model states; inference: need per domain GPU
    memory_limit_gib: float | None  # usable memory per GPU under the stated margin
    missing: tuple[str, ...]  # unknown inputs that kept a number from being computed
    verdict: str
    # Inference only.
    domain_gpus: int | None = None
    needed_gib: float | None = None
    nodes_needed: int | None = None
    tp_comm_s_per_token: float | None = None
    tp_fabric_s_per_token: float | None = None
    # The same reason and verdict as phrases, for the page; not part of the API's output.
    reason_phrases: tuple[Phrase, ...] = ()
    verdict_phrase: Phrase | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(replace(self, reason_phrases=(), verdict_phrase=None))
        del data["reason_phrases"], data["verdict_phrase"]
        data["missing"] = list(self.missing)
        return data


@dataclass(frozen=True)
class Estimate:
    """Ranked results plus every parameter and constant used."""

    results: tuple[EstimateResult, ...]
    assumptions: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": [row.to_dict() for row in self.results],
            "assumptions": self.assumptions,
        }


# --------------------------------------------------------------------------------------------
# Parsing and validation of the query string
# --------------------------------------------------------------------------------------------

PARAMS_B_MAX = 100_000.0  # 100 trillion parameters
TOKENS_PER_STEP_MAX = 10**12
NODES_MAX = 1024
NODES_VALUES_MAX = 32
CONTEXT_TOKENS_MAX = 100_000_000
BATCH_MAX = 1_000_000
KV_BYTES_MAX = 10**9

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,3})?", re.ASCII)
_INTEGER = re.compile(r"\+?\d{1,15}", re.ASCII)
_SINGLE_KEYS = (
    "params_b",
    "mode",
    "bytes_per_param",
    "tokens_per_step",
    "mfu",
    "overlap",
    "context_tokens",
    "batch",
    "kv_bytes_per_token",
)
JOB_KEYS: tuple[str, ...] = (*_SINGLE_KEYS, "nodes")


def _parse_float(text: str) -> float | None:
    text = text.strip()
    if len(text) > 40 or not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _parse_int(text: str) -> int | None:
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        return None
    return int(text)


def parse_job(params: Mapping[str, Sequence[str]]) -> tuple[Job | None, dict[str, list[str]]]:
    """Validate the estimator's query parameters; return (job, {}) or (None, {field: [messages]}).

    `params` maps each name to all its values (Django: `{k: request.GET.getlist(k) for k in
    request.GET}`). Only the estimator's own names are read (JOB_KEYS); filter parameters and
    `ids` are the view's. An empty value means "absent" (the no-JS form sends every field);
    `nodes` repeats, every other name given twice is invalid. Never raises.
    """
    errors: dict[str, list[str]] = {}
    values: dict[str, str] = {}

    def error(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    for name in _SINGLE_KEYS:
        given = [v for v in params.get(name, ()) if v.strip() != ""]
        if len(given) > 1:
            error(name, "Give this parameter once.")
        elif given:
            values[name] = given[0]

    def number(
        name: str, default: float | None, low: float, high: float, low_inclusive: bool
    ) -> float | None:
        if name not in values:
            if default is None:
                error(name, "This field is required.")
            return default
        value = _parse_float(values[name])
        if value is None:
            error(name, "Enter a number.")
            return None
        if value < low or (value == low and not low_inclusive):
            error(name, f"Must be {'at least' if low_inclusive else 'greater than'} {low:g}.")
            return None
        if value > high:
            error(name, f"Must be at most {high:g}.")
            return None
        return value

    def integer(name: str, default: int, low: int, high: int) -> int | None:
        if name not in values:
            return default
        value = _parse_int(values[name])
        if value is None:
            error(name, "Enter a whole number.")
            return None
        if value < low:
            error(name, f"Must be at least {low}.")
            return None
        if value > high:
            error(name, f"Must be at most {high}.")
            return None
        return value

    params_b = number("params_b", None, 0.0, PARAMS_B_MAX, low_inclusive=False)
    mode = values.get("mode")
    if mode is None:
        error("mode", "This field is required.")
    elif mode not in MODES:
        error("mode", f"Choose one of: {', '.join(MODES)}.")
    bytes_per_param = number("bytes_per_param", 2.0, 0.0, 16.0, low_inclusive=False)
    mfu = number("mfu", 0.4, 0.0, 1.0, low_inclusive=False)
    overlap = number("overlap", 0.0, 0.0, 1.0, low_inclusive=True)
    tokens_per_step = integer("tokens_per_step", 4_194_304, 1, TOKENS_PER_STEP_MAX)
    context_tokens = integer("context_tokens", 4096, 1, CONTEXT_TOKENS_MAX)
    batch = integer("batch", 1, 1, BATCH_MAX)
    kv_bytes_per_token = integer("kv_bytes_per_token", 327_680, 1, KV_BYTES_MAX)

    nodes: tuple[int, ...] = (1, 2, 4, 8, 16)
    given_nodes = [v for v in params.get("nodes", ()) if v.strip() != ""]
    if given_nodes:
        parsed: set[int] = set()
        for text in given_nodes:
            value = _parse_int(text)
            if value is None:
                error("nodes", f"{text[:20]!r} is not a whole number.")
            elif not 1 <= value <= NODES_MAX:
                error("nodes", f"{value} is out of range: each must be 1 to {NODES_MAX}.")
            else:
                parsed.add(value)
        if len(parsed) > NODES_VALUES_MAX:
            error("nodes", f"Give at most {NODES_VALUES_MAX} node counts.")
        nodes = tuple(sorted(parsed))

    if errors or params_b is None or mode is None:
        return None, errors
    return (
        Job(
            params_b=params_b,
            mode=mode,
            bytes_per_param=bytes_per_param or 2.0,
            tokens_per_step=tokens_per_step or 4_194_304,
            nodes=nodes,
            mfu=mfu or 0.4,
            overlap=overlap or 0.0,
            context_tokens=context_tokens or 4096,
            batch=batch or 1,
            kv_bytes_per_token=kv_bytes_per_token or 327_680,
        ),
        {},
    )


# --------------------------------------------------------------------------------------------
# Links and collectives
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How G = nodes x gpus_per_node GPUs are wired for one collective.

    m GPUs per intra group share `intra_kind` at `intra_raw` GB/s per GPU per direction (before
    the efficiency factor); D = `groups` groups are joined by `inter_kind` at `inter_raw`.
    Either raw figure is None when unknown (and then named in `missing`) or unused.
    """

    gpus: int
    group_gpus: int
    groups: int
    intra_kind: str | None
    intra_raw: float | None
    inter_kind: str | None
    inter_raw: float | None
    missing: tuple[str, ...]


def intra_link(
    instance: InstanceSpec, constants: Constants = DEFAULT_CONSTANTS
) -> tuple[str | None, float | None, int | None, list[str]]:
    """Return (kind, raw GB/s per GPU per direction, NVLink domain size or None, missing).

    NVLink/Infinity Fabric is used when its domain holds the whole node (an NVSwitch topology
    does by definition, so its unstated domain size is taken as the node); a smaller domain
    (bridge pairs) means the node-wide ring crosses PCIe. "nvlink-sharp" is an NVLink NVSwitch
    of generation 4 or later (NVSwitch gen3+ reduces in the switch: NCCL's NVLS algorithm).
    """
    link = instance.link
    missing: list[str] = []
    technology = link.technology
    domain = link.domain_size
    if technology in ("nvlink", "infinity-fabric"):
        if domain is None and link.topology == "nvswitch":
            domain = instance.gpu_count
        if domain is None:
            return None, None, None, [_DOMAIN_SIZE_UNKNOWN[technology]]
        if domain >= instance.gpu_count:
            if not link.bandwidth_gbytes_per_s or link.bandwidth_gbytes_per_s <= 0:
                return None, None, domain, [_BANDWIDTH_UNKNOWN[technology]]
            kind = "infinity-fabric" if technology == "infinity-fabric" else "nvlink"
            if (
                kind == "nvlink"
                and link.topology == "nvswitch"
                and link.generation is not None
                and link.generation >= 4
            ):
                kind = "nvlink-sharp"
            return kind, link.bandwidth_gbytes_per_s / 2, domain, missing
    elif technology != "none":
        return None, None, None, [gettext_noop("GPU-to-GPU link (NVLink or PCIe only)")]
    else:
        domain = None
    gen = instance.pcie_generation
    raw = constants.pcie_gbytes_per_s.get(gen) if gen is not None else None
    if raw is None:
        return None, None, domain, [gettext_noop("PCIe generation")]
    return "pcie", raw, domain, missing


#: What `missing` names when a figure is unknown (the API's words; the page translates them).
_DOMAIN_SIZE_UNKNOWN = {
    "nvlink": gettext_noop("NVLink domain size"),
    "infinity-fabric": gettext_noop("Infinity Fabric domain size"),
}
_BANDWIDTH_UNKNOWN = {
    "nvlink": gettext_noop("NVLink bandwidth"),
    "infinity-fabric": gettext_noop("Infinity Fabric bandwidth"),
}


def _spanning_domain(instance: InstanceSpec, domain: int | None) -> int | None:
    """The domain size when an NVLink domain spans nodes (NVSwitch only, as GB200 NVL72)."""
    if domain is None or domain <= instance.gpu_count or instance.link.topology != "nvswitch":
        return None
    return domain


def plan(instance: InstanceSpec, nodes: int, constants: Constants = DEFAULT_CONSTANTS) -> Plan:
    """Group the GPUs of `nodes` nodes into NVLink/PCIe groups joined by the fabric."""
    g = instance.gpu_count
    gpus = nodes * g
    kind, raw, domain, missing = intra_link(instance, constants)
    domain = _spanning_domain(instance, domain) if kind != "pcie" else None
    group = min(domain, gpus) if domain is not None else g
    groups = math.ceil(gpus / group)
    intra_kind, intra_raw = (kind, raw) if group > 1 else (None, None)
    if group <= 1:
        missing = []
    inter_kind: str | None = None
    inter_raw: float | None = None
    if groups > 1:
        fabric = instance.fabric
        if fabric.technology not in FABRIC_KINDS:
            missing.append(gettext_noop("fabric technology"))
        else:
            inter_kind = fabric.technology
        if fabric.bandwidth_gbits_per_s is None or fabric.bandwidth_gbits_per_s <= 0:
            missing.append(gettext_noop("fabric bandwidth"))
        else:
            inter_raw = fabric.bandwidth_gbits_per_s / 8 / g
    return Plan(
        gpus=gpus,
        group_gpus=group,
        groups=groups,
        intra_kind=intra_kind,
        intra_raw=intra_raw,
        inter_kind=inter_kind,
        inter_raw=inter_raw,
        missing=tuple(missing),
    )


def effective_bandwidth(
    kind: str | None, raw: float | None, constants: Constants = DEFAULT_CONSTANTS
) -> float | None:
    """GB/s per GPU per direction a collective reaches: raw x the kind's efficiency factor."""
    if kind is None or raw is None:
        return None
    return raw * constants.efficiency[kind]


@dataclass(frozen=True)
class CommTimes:
    """Seconds each stage takes alone, and the pipelined total; None when unknown."""

    intra_s: float | None
    inter_s: float | None
    total_s: float | None


def collective_time(
    size_bytes: float,
    passes: int,
    calls: int,
    the_plan: Plan,
    constants: Constants = DEFAULT_CONSTANTS,
    small_messages: bool = False,
) -> CommTimes:
    """Time of `passes` reduce-scatter/all-gather passes over `size_bytes`, hierarchically.

    intra = passes x ((m-1)/m x S / B_intra + (m-1) x latency_intra)
    inter = passes x ((D-1)/D x (S/m) / B_inter + (D-1) x latency_inter)
    total = max(intra, inter) + calls x base latency (zero without communication)
    Latencies are NCCL's Simple-protocol figures, or its LL ones with `small_messages`.
    """
    m, d = the_plan.group_gpus, the_plan.groups
    step_latency = constants.latency_ll_us if small_messages else constants.latency_us
    base_latency = constants.base_latency_ll_us if small_messages else constants.base_latency_us
    intra_s: float | None = 0.0
    inter_s: float | None = 0.0
    if m > 1:
        bandwidth = effective_bandwidth(the_plan.intra_kind, the_plan.intra_raw, constants)
        if bandwidth is None or the_plan.intra_kind is None:
            intra_s = None
        else:
            latency = step_latency[the_plan.intra_kind] * 1e-6
            per_pass = (m - 1) / m * size_bytes / (bandwidth * GB) + (m - 1) * latency
            intra_s = passes * per_pass
    if d > 1:
        bandwidth = effective_bandwidth(the_plan.inter_kind, the_plan.inter_raw, constants)
        if bandwidth is None or the_plan.inter_kind is None:
            inter_s = None
        else:
            latency = step_latency[the_plan.inter_kind] * 1e-6
            per_pass = (d - 1) / d * (size_bytes / m) / (bandwidth * GB) + (d - 1) * latency
            inter_s = passes * per_pass
    if intra_s is None or inter_s is None:
        return CommTimes(intra_s, inter_s, None)
    base = calls * base_latency * 1e-6 if m * d > 1 else 0.0
    return CommTimes(intra_s, inter_s, max(intra_s, inter_s) + base)


def allreduce_busbw(
    instance: InstanceSpec,
    nodes: int,
    size_bytes: float,
    constants: Constants = DEFAULT_CONSTANTS,
) -> float | None:
    """Modelled nccl-tests all_reduce_perf bus bandwidth, GB/s: S / t x 2(G-1)/G."""
    the_plan = plan(instance, nodes, constants)
    times = collective_time(size_bytes, passes=2, calls=1, the_plan=the_plan, constants=constants)
    if times.total_s is None or the_plan.gpus < 2 or times.total_s <= 0:
        return None
    g = the_plan.gpus
    return size_bytes / times.total_s / GB * 2 * (g - 1) / g


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
    the_plan = plan(instance, nodes, constants)
    missing = list(the_plan.missing)
    gpus = the_plan.gpus
    params = job.params
    size = params * job.bytes_per_param
    fsdp = job.mode == "train-fsdp"
    times = collective_time(
        size,
        passes=3 if fsdp else 2,
        calls=3 if fsdp else 1,
        the_plan=the_plan,
        constants=constants,
    )

    compute_s: float | None = None
    if instance.bf16_dense_tflops is None or instance.bf16_dense_tflops <= 0:
        missing.append(gettext_noop("dense BF16 TFLOPS"))
    else:
        flops = 6 * params * job.tokens_per_step
        compute_s = flops / (gpus * instance.bf16_dense_tflops * 1e12 * job.mfu)

    step_s = efficiency = None
    if compute_s is not None and times.total_s is not None:
        step_s = compute_s + (1 - job.overlap) * times.total_s
        efficiency = compute_s / step_s if step_s > 0 else 1.0

    # Memory: weights + gradients at bytes_per_param, Adam state at 12 bytes, per GPU.
    states = params * (2 * job.bytes_per_param + constants.optimizer_bytes_per_param)
    per_gpu = states / gpus if fsdp else states
    limit: float | None = None
    reasons: list[Phrase] = []
    if instance.gpu_memory_gib is None:
        missing.append(gettext_noop("GPU memory"))
    else:
        limit = instance.gpu_memory_gib * GIB * constants.training_memory_fraction
        if per_gpu > limit:
            reasons.append(
                Phrase(
                    "states-too-big",
                    {
                        "per_gpu_gib": _gib(per_gpu),
                        "sharded": fsdp,
                        "gpus": gpus,
                        "limit_gib": _gib(limit),
                    },
                )
            )
    unavailable = _availability(instance, nodes)
    if unavailable:
        reasons.insert(0, unavailable)
    fits = not reasons and limit is not None

    cost_hour = cost_step = cost_billion = None
    if instance.price_per_hour_usd is not None:
        cost_hour = nodes * instance.price_per_hour_usd
        if fits and step_s is not None:
            cost_step = cost_hour * step_s / 3600
            cost_billion = cost_step / job.tokens_per_step * 1e9

    bottleneck: str | None = None
    if compute_s is not None and times.total_s is not None:
        exposed = (1 - job.overlap) * times.total_s
        if exposed <= compute_s or times.intra_s is None or times.inter_s is None:
            bottleneck = "compute"
        else:
            bottleneck = "inter" if times.inter_s >= times.intra_s else "intra"

    if not fits and not reasons:
        reasons.append(Phrase("unknown", {"missing": tuple(dict.fromkeys(missing))}))
    row = EstimateResult(
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
        efficiency=efficiency,
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
        reason_phrases=tuple(reasons),
    )
    # On its own a row cannot know the other node counts; estimate() refines this verdict.
    return _with_verdict(row, _training_verdict(row, None, constants.comm_bound_efficiency))


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
        spanning = _spanning_domain(instance, domain)
        if spanning is not None:
            domain_gpus: int | None = min(spanning, gpus)
        else:
            domain_gpus = None if domain is None else min(domain, g)
    elif instance.link.technology == "none":
        domain_gpus = 1
    else:
        domain_gpus = None
    if domain_gpus is None:
        missing.extend(link_missing or [_DOMAIN_SIZE_UNKNOWN["nvlink"]])

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
            times = collective_time(message, 2, 1, tp_plan, constants, small_messages=True)
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

#: Link kinds as the verdicts name them (marked where a word needs translating).
KIND_NAMES = {
    "nvlink": "NVLink",
    "nvlink-sharp": gettext_noop("NVLink with NVSwitch SHARP"),
    "infinity-fabric": "Infinity Fabric",
    "pcie": "PCIe",
    "infiniband": "InfiniBand",
    "roce": "RoCE",
    "efa": "EFA",
    "erdma": "eRDMA",
    "tcpx": "GPUDirect-TCPX",
    "ethernet": gettext_noop("Ethernet (TCP)"),
}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def english(phrase: Phrase) -> str:
    """The API's English text of a reason, verdict or stage phrase."""
    p = phrase.params
    code = phrase.code
    if code == "multi-node-unstated":
        return f"{p['nodes']} nodes: self-serve multi-node booking is not stated for this instance"
    if code == "no-multi-node":
        return f"{p['nodes']} nodes: no self-serve multi-node booking (one node, or sales only)"
    if code == "beyond-max-nodes":
        return (
            f"{p['nodes']} nodes: beyond the largest self-serve cluster of {p['max_nodes']} nodes"
        )
    if code == "states-too-big":
        how = "sharded over" if p["sharded"] else "replicated on each of"
        return (
            f"model states need {p['per_gpu_gib']:,.1f} GiB per GPU ({how} "
            f"{p['gpus']} GPU{'s' if p['gpus'] > 1 else ''}), "
            f"more than the {p['limit_gib']:,.1f} GiB left after the activation margin"
        )
    if code == "domain-too-small":
        if p["domain"] == "pcie":
            what = "one NVLink domain of one GPU (PCIe only) holds"
        elif p["domain"] == "booked":
            what = (
                f"the {p['domain_gpus']} GPUs booked of its {p['spanning']}-GPU NVLink domain hold"
            )
        else:
            what = f"one NVLink domain of {p['domain_gpus']} GPUs holds"
        return (
            f"needs {p['needed_gib']:,.1f} GiB (weights {p['weights_gib']:,.1f} + KV cache "
            f"{p['kv_gib']:,.1f}); {what} {p['usable_gib']:,.1f} GiB usable; tensor parallel "
            f"would take {p['nodes_needed']} node{'s' if p['nodes_needed'] > 1 else ''}"
        )
    if code == "unknown":
        return "unknown: " + ", ".join(p["missing"])
    # Verdicts
    if code == "cannot-estimate":
        return "cannot estimate: unknown " + ", ".join(p["missing"])
    if code == "does-not-fit":
        return f"does not fit ({join_reasons(p['reasons'])})"
    if code == "no-estimate":
        return "no estimate"
    if code == "if-it-fitted":
        return f"does not fit ({join_reasons(p['reasons'])}); if it did: {english(p['verdict'])}"
    if code == "communication-bound":
        if p["beyond"] is not None:
            where = f"beyond {_plural(p['beyond'], 'node')}"
        else:
            where = f"at {_plural(p['at'], 'node')}"
        stage = f": {english(p['stage'])}" if p["stage"] else ""
        return f"communication-bound {where}{stage}"
    if code == "no-communication":
        return f"{p['efficiency']:.0%} efficient: no communication"
    if code == "efficient":
        return (
            f"{p['efficiency']:.0%} efficient: communication adds {1 - p['efficiency']:.0%} to "
            f"the step; slowest link: {english(p['stage'])}"
        )
    if code == "fabric-stage":
        return (
            f"the fabric gives {p['bandwidth']:,.1f} GB/s per GPU "
            f"({KIND_NAMES.get(p['link'], p['link'])})"
        )
    if code == "intra-stage":
        if p["where"] == "domain":
            where = f"the {p['group_gpus']}-GPU NVLink domain"
        else:
            where = "the node" if p["where"] == "node" else "each node"
        return (
            f"{KIND_NAMES.get(p['link'], p['link'])} gives {p['bandwidth']:,.1f} GB/s per GPU "
            f"inside {where}"
        )
    if code == "fits-domain":
        return (
            f"fits one NVLink domain of {_plural(p['domain_gpus'], 'GPU')}"
            f" ({p['needed_gib']:,.1f} GiB needed)"
        )
    if code == "cannot-tell":
        return "cannot tell: " + join_reasons(p["reasons"])
    if code == "inference-does-not-fit":
        text = f"does not fit: {join_reasons(p['reasons'])}"
        if p["tp_link"] is not None:
            text += (
                f"; tensor-parallel traffic over {KIND_NAMES.get(p['tp_link'], p['tp_link'])} "
                f"costs about {p['tp_s_per_token'] * 1e3:,.2f} ms per token"
            )
        return text
    raise ValueError(f"unknown phrase code {code!r}")


def join_reasons(reasons: Sequence[Phrase]) -> str | None:
    """The API's `reason`: every reason in English, separated by semicolons; None without one."""
    return "; ".join(english(reason) for reason in reasons) if reasons else None


def _with_verdict(row: EstimateResult, verdict: Phrase) -> EstimateResult:
    return replace(row, verdict=english(verdict), verdict_phrase=verdict)


def _training_verdicts(rows: list[EstimateResult], constants: Constants) -> list[EstimateResult]:
    """Attach a plain-language verdict to each row of one instance (rows sorted by nodes)."""
    threshold = constants.comm_bound_efficiency
    good = [r.nodes for r in rows if r.efficiency is not None and r.efficiency >= threshold]
    last_good = max(good) if good else None
    return [_with_verdict(row, _training_verdict(row, last_good, threshold)) for row in rows]


def _stage_phrase(row: EstimateResult) -> Phrase | None:
    """'the fabric gives 30.0 GB/s per GPU (EFA)' for the slower communication stage."""
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


def _training_verdict(row: EstimateResult, last_good: int | None, threshold: float) -> Phrase:
    if row.efficiency is None:
        if row.missing:
            return Phrase("cannot-estimate", {"missing": row.missing})
        if row.reason_phrases:
            return Phrase("does-not-fit", {"reasons": row.reason_phrases})
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
    return Phrase("if-it-fitted", {"reasons": row.reason_phrases, "verdict": verdict})


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


def _sort_key(row: EstimateResult, inference: bool = False) -> tuple[Any, ...]:
    cost = row.cost_per_billion_tokens_usd
    if inference and row.cost_per_hour_usd is not None and row.fits:
        cost = row.cost_per_hour_usd  # inference: the cheapest node count that fits
    return (
        cost is None,
        cost if cost is not None else 0.0,
        not row.fits,
        row.step_s if row.step_s is not None else math.inf,
        str(row.instance["id"]),
        row.nodes,
    )


def assumptions(job: Job, constants: Constants = DEFAULT_CONSTANTS) -> dict[str, Any]:
    """Echo every parameter and constant the estimate used, for the page and the API."""
    return {
        "params_b": job.params_b,
        "mode": job.mode,
        "bytes_per_param": job.bytes_per_param,
        "tokens_per_step": job.tokens_per_step,
        "nodes": list(job.nodes),
        "mfu": job.mfu,
        "overlap": job.overlap,
        "context_tokens": job.context_tokens,
        "batch": job.batch,
        "kv_bytes_per_token": job.kv_bytes_per_token,
        "efficiency_factors": dict(constants.efficiency),
        "uncalibrated_factors": dict(UNCALIBRATED_KINDS),
        "latency_us_per_step": dict(constants.latency_us),
        "base_latency_us_per_collective": constants.base_latency_us,
        "latency_us_per_step_small_messages": dict(constants.latency_ll_us),
        "base_latency_us_per_collective_small_messages": constants.base_latency_ll_us,
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
    """Estimate every (instance, node count) and rank: cheapest per billion tokens first.

    Training rows sort by cost_per_billion_tokens_usd ascending, rows without a cost (no price,
    does not fit, unknown data) last; inference rows sort fitting rows by hourly cost.
    """
    results: list[EstimateResult] = []
    for instance in instances:
        if job.is_training:
            rows = [estimate_training(instance, job, n, constants) for n in job.nodes]
            results.extend(_training_verdicts(rows, constants))
        else:
            results.extend(estimate_inference(instance, job, n, constants) for n in job.nodes)
    # Training rows without an estimate keep a null cost, so they rank after every real one.
    results.sort(key=lambda row: _sort_key(row, inference=not job.is_training))
    return Estimate(results=tuple(results), assumptions=assumptions(job, constants))
