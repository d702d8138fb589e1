"""The interconnect-aware estimator's inputs and outputs: constants, specs, the job and its parsing.

Pure Python: no database, no Django. The view turns catalog rows into `InstanceSpec`s, the query
string into a `Job` (with `parse_job`), and calls `offerings.estimator.estimation.estimate()`;
everything it shows comes from the dataclasses here. Every formula is written out in
`offerings.estimator.collectives` and `offerings.estimator.estimation`, and in `FORMULAS`, so the
page can print them.

The estimator's package, by subject: `core` (this module: constants, specs, results, the job),
`collectives` (links, groups and the time of a collective), `estimation` (training and inference
rows, their verdicts, the ranking), `phrases` (every reason and verdict, in English for the API
and in the page's language), `calibration` (the published results the factors are fitted to),
`views`, `page` and `chart` (the API and the page).

Languages: the API speaks English, the page the reader's language. A reason or verdict is a
`Phrase` (a code and its values), said from one table in `offerings.estimator.phrases`. Text the
page translates as it stands (formulas, names of unknown figures) is marked with `gettext_noop`,
which only marks it for makemessages.

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
* Micro-batches: a step of tokens_per_step tokens runs k = max(1, ceil(tokens_per_step / (G x
  micro_batch_tokens))) forward and backward passes of micro_batch_tokens tokens per GPU
  (`micro_batches`). DDP accumulates gradients and all-reduces them once per step; fully sharded
  training with full resharding (PyTorch FSDP's FULL_SHARD, ZeRO-3) all-gathers the parameters in
  every micro-batch's forward and backward pass and reduce-scatters its gradients: 2k
  all-gathers and k reduce-scatters of the parameters' bytes.
* Each collective call is timed by the collective model, offerings.estimator.nccl (its docstring
  and docs/estimator.md "The collective model" give the bytes per stage by algorithm). NCCL
  pipelines the stages (chunks flow through NVLink and the NIC at the same time), so a call takes
  as long as its slowest stage. Adding them instead cannot reproduce published results: for the
  1 GiB all-reduce on 2 x 8 H200 over InfiniBand (4.42 ms measured, calibration point
  coreweave-h200-2x8-ib-1 GiB) even at InfiniBand's line rate the NVLink and fabric stages
  added take longer than measured (tests/estimator/test_core.py holds this).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from offerings.estimator.phrases import (
    AT_LEAST,
    AT_MOST,
    CHOOSE_ONE,
    GIVE_ONCE,
    GREATER_THAN,
    NODES_OR_GPUS,
    NOT_A_NUMBER,
    NOT_A_WHOLE_NUMBER,
    NOT_WHOLE,
    OUT_OF_RANGE,
    REQUIRED,
    TOO_MANY_GPU_COUNTS,
    TOO_MANY_NODES,
    FieldError,
    Phrase,
    gettext_noop,
)

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
GROUP_LINK_KINDS: tuple[str, ...] = (
    "nvlink",
    "nvlink-sharp",
    "nvlink5-sharp",
    "infinity-fabric",
    "pcie",
)
FABRIC_KINDS: tuple[str, ...] = ("infiniband", "roce", "efa", "erdma", "tcpx", "ethernet")
#: The network kinds the model tells apart within one fabric technology, where its generations
#: perform differently: GPUDirect-TCPXO (A3 Mega) beside GPUDirect-TCPX (A3 High, A3 Edge).
GENERATION_KINDS: dict[tuple[str, str], str] = {("tcpx", "tcpxo"): "tcpxo"}
LINK_KINDS: tuple[str, ...] = (*GROUP_LINK_KINDS, *FABRIC_KINDS, *GENERATION_KINDS.values())

#: Efficiency factor per link kind: bus bandwidth collectives reach / raw per-direction figure.
#: Fitted by `offerings.estimator.calibration.fit_efficiency` (least squares on log busbw) to the
#: published nccl-tests results recorded in CALIBRATION_POINTS there, running the model at each
#: test's own configuration; tests/estimator/test_core.py checks these equal a fresh fit (to
#: 0.01). Fitted at 1 GiB messages, the size of one transformer block's FSDP all-gather for 10-100B
#: models; at 8 GiB real collectives run up to ~30% faster (EFA), so the model is conservative.
#: "nvlink-sharp" (NVSwitch gen3+ with NVLink SHARP, NCCL's NVLS algorithm) exceeds 1: the switch
#: reduces in-network, so busbw (computed as for a ring) tops the wire rate. Kinds marked
#: UNCALIBRATED_KINDS have no published result we could run the model against; their value and
#: reason are stated there.
EFFICIENCY: dict[str, float] = {
    "nvlink": 0.76,
    "nvlink-sharp": 1.04,
    # NVLink 5 (Blackwell) with NVLink SHARP, fitted apart from NVLink 4: one factor for both
    # overstated Blackwell by the difference.
    "nvlink5-sharp": 0.85,
    "infinity-fabric": 0.70,
    "pcie": 0.50,
    "infiniband": 0.95,
    "roce": 0.95,
    "efa": 0.65,
    "erdma": 0.95,
    "tcpx": 0.41,
    "tcpxo": 0.83,
    "ethernet": 0.49,
    # InfiniBand with SHARP reducing in the switches (NCCL's CollNet): the network stage of the
    # `sharp` algorithm (offerings.estimator.nccl) runs at this factor instead of InfiniBand's.
    "infiniband-sharp": 0.71,
    # NCCL's tree between nodes reaches this share of a ring's network bandwidth (a multiplier
    # on the fabric's factor, fitted to runs that forced NCCL_ALGO=Tree).
    "tree": 0.51,
    # ... and on EFA, whose trees run through aws-ofi-nccl (fitted apart: InfiniBand's tree
    # factor leaves p4d's published two-node runs at less than half their measured figure).
    "tree-efa": 1.29,
}

#: Kinds whose factor is not fitted, and why the stated value was chosen.
UNCALIBRATED_KINDS: dict[str, str] = {
    "roce": gettext_noop(
        "Set equal to InfiniBand: NCCL drives RoCE through the same IB-verbs transport on the "
        "same ConnectX NICs. The published RoCE runs recorded (OCI, GCP) are held out to check "
        "that rule, not fitted to."
    ),
    "erdma": gettext_noop(
        "No published result found. Set equal to RoCE (Alibaba eRDMA is RDMA over Ethernet)."
    ),
}

#: NCCL's own tuning model (src/graph/tuning.cc at NVIDIA/nccl commit
#: b6475625fbcaa2c3c0e50eed2fa1255d7514d4a2, NCCL 2.19-2.20): the latency of one step, in
#: microseconds, by algorithm, by what the step crosses (NVLink, PCIe or the network) and by
#: protocol (hwLat[]). NCCL times a call as its base latency plus its steps' latencies plus the
#: bytes over the bandwidth, for each algorithm and protocol it may use, and runs the fastest.
#: LL moves 8-byte lines of 4 data bytes and a flag (lowest latency, a quarter of the bandwidth),
#: LL128 128-byte lines of 120 (92% of it), Simple whole chunks behind memory fences (all of it,
#: the most latency). "nvls" is the NVSwitch's own reduction (NVLS inside a node, NVLS tree
#: between nodes: 14 us a network step), "sharp" NCCL's CollNet (Direct inside an NVSwitch node:
#: 3.7 us, and 31 us for the network). Infinity Fabric takes NVLink's figures (assumption).
NCCL_LATENCY_US: dict[str, dict[str, dict[str, float]]] = {
    "ring": {
        "nvlink": {"ll": 0.6, "ll128": 1.9, "simple": 3.4},
        "pcie": {"ll": 1.0, "ll128": 2.5, "simple": 5.7},
        "net": {"ll": 2.7, "ll128": 4.0, "simple": 14.0},
    },
    "tree": {
        "nvlink": {"ll": 0.6, "ll128": 1.25, "simple": 28.0},
        "pcie": {"ll": 1.0, "ll128": 1.9, "simple": 28.0},
        "net": {"ll": 5.0, "ll128": 8.5, "simple": 28.0},
    },
    "nvls": {"nvlink": {"simple": 23.0}, "net": {"simple": 14.0}},
    # "arity": CollNet Direct's 0.4 us of serialization per other GPU of the node.
    "sharp": {
        "nvlink": {"simple": 3.7},
        "pcie": {"simple": 3.7},
        "net": {"simple": 31.0},
        "arity": {"simple": 0.4},
    },
}
#: Base latency of one call, microseconds, by algorithm and protocol (same file: baseLat[]; NVLS
#: and CollNet have none). alltoall's point-to-point sends take the ring's.
NCCL_BASE_LATENCY_US: dict[str, dict[str, float]] = {
    "ring": {"ll": 6.6, "ll128": 14.0, "simple": 8.4},
    "tree": {"ll": 6.8, "ll128": 14.0, "simple": 0.0},
    "nvls": {"simple": 0.0},
    "sharp": {"simple": 0.0},
}
#: Same file: a ring's Simple all-reduce across nodes takes 1.4 times its latency (1.9 before
#: Ampere): "plateau effect of ring".
RING_PLATEAU = {"volta": 1.9, "later": 1.4}
#: Same file: on Intel x86 hosts a network step costs at least 1 us of posting (3 with Simple);
#: NCCL raises an inter-node ring's NVLink step latency to it. Hosts' CPUs are not in the
#: catalog; Intel's figure is taken (AMD's is 2).
NET_OVERHEAD_US = {"ll": 1.0, "ll128": 1.0, "simple": 3.0}


#: The bandwidth a protocol reaches, as a share of Simple's (same file): LL a quarter on a ring
#: (a third for an all-gather or reduce-scatter inside one node), 1/3.8 on a tree; LL128 0.92 on
#: a ring and 120/128 on a tree between nodes.
PROTOCOL_SHARE: dict[str, dict[str, float]] = {
    "ring": {"ll": 1 / 4, "ll128": 0.92, "simple": 1.0},
    "tree": {"ll": 1 / 3.8, "ll128": 120 / 128, "simple": 1.0},
}
#: LL's bus bandwidth tops out at this, GB/s (same file: llMaxBws): inside one node by GPU
#: generation, between nodes by the host's CPU (Intel's row; AMD's is 22.5 and 19.0).
LL_MAX_BUSBW = {"one-node-volta": 39.0, "one-node": 87.7, "two-nodes": 39.0, "more-nodes": 20.4}
#: Same file: "trees are not perfectly sticking to the model for medium sizes": a tree's bandwidth
#: times this, by protocol, at messages of 64 B x 2^i (i = 0 to 22, so up to 256 MiB).
# fmt: off
TREE_CORRECTION: dict[str, tuple[float, ...]] = {
    "ll":     (1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5,
               0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0),
    "ll128":  (1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6,
               0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0),
    "simple": (0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5,
               0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9),
}
# fmt: on


def ring_latencies(constants: Constants, protocol: str) -> dict[str, float]:
    """A ring step's latency over each link kind with `protocol`, as the page lists them."""
    table = constants.nccl_latency_us["ring"]
    return {kind: table[link_hardware(kind)][protocol] for kind in LINK_KINDS}


def link_hardware(kind: str) -> str:
    """What a step over `kind` crosses, as NCCL's latency table names it."""
    if kind in GROUP_LINK_KINDS:
        return "pcie" if kind == "pcie" else "nvlink"
    return "net"


#: A group's traffic to other groups leaves through at most this many GPUs' network ports: an
#: 8-GPU node uses all its ports; a GB200 NVL72 rack (72 GPUs, a NIC each) does not use 72. Fitted
#: to CoreWeave's two- and twenty-rack GB200 runs at 16 GiB (calibration.fit_exit_channels): with
#: every port counted, the model's busbw stayed at one rack's as racks were added, while the
#: published runs fall.
DOMAIN_EXIT_CHANNELS = 9

#: What a Simple call that crosses the network costs besides its bandwidth and NCCL's per-step
#: figures, microseconds, by network kind: the network's own latency and filling the pipeline
#: through NICs and switches (an LL or LL128 call pays half: nccl.LL_NETWORK_LATENCY_SHARE).
#: NCCL's tuning figures alone leave published 1-64 MiB runs far faster than measured; these are
#: fitted to the small-message rows of the fitted runs (calibration.fit_latency). RoCE and eRDMA
#: take InfiniBand's, plain Ethernet too (no small-message result is fitted for them).
NETWORK_CALL_LATENCY_US: dict[str, float] = {
    "infiniband": 72.0,
    "roce": 72.0,
    "efa": 114.0,
    "erdma": 72.0,
    "tcpx": 588.0,
    "tcpxo": 147.0,
    "ethernet": 72.0,
    "infiniband-sharp": 72.0,
}


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

#: Tokens per GPU in one forward and backward pass (one micro-batch), the default of
#: `micro_batch_tokens`: 4 sequences of 4,096 tokens, or 2 of 8,192. A stated default, not a
#: measurement: the largest micro-batch a GPU holds depends on the model, the sequence length and
#: activation checkpointing, which the user controls.
MICRO_BATCH_TOKENS = 16_384

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
        "B_inter (GB/s per GPU per direction) = back-end fabric Gb/s per node (with plain "
        "Ethernet, which has none: the general network's) / 8 / GPUs per node x factor"
    ),
    gettext_noop(
        "m = GPUs in one intra group = GPUs per node, or min(NVLink domain size, all GPUs) "
        "when the domain spans nodes; D = ceil(all GPUs / m) groups joined by the fabric"
    ),
    gettext_noop("S = parameters x bytes_per_param"),
    gettext_noop(
        "micro-batches per step k = max(1, ceil(tokens_per_step / (all GPUs x "
        "micro_batch_tokens))): each GPU runs k forward and backward passes of "
        "micro_batch_tokens tokens"
    ),
    gettext_noop(
        "one collective of S bytes (the collective model, GET /api/collectives): a ring moves "
        "a(G-1)/G x S over each GPU's link and over each group's network (a = 2 for all_reduce, "
        "1 for all_gather and reduce_scatter); NVLS (NVSwitch of NVLink 4 or later) moves 2(m-1)/m "
        "x S over the link at the NVLink SHARP factor and T(D) over the network, a tree 2(m-1)/m "
        "x S and T(D) at the tree factor, with T(D) = S for two groups and 2S beyond; all_reduce "
        "takes the fastest of these that NCCL would run on the hardware"
    ),
    gettext_noop(
        "a group's network = B_inter x its GPUs (at most 9 GPUs' ports when the group is an "
        "NVLink domain spanning nodes); each stage adds its steps x NCCL's per-step latency"
    ),
    gettext_noop(
        "one call, as NCCL's tuning model: the slower stage's bytes + every step's latency + "
        "the base latency, + the fitted per-call network latency when it crosses the network "
        "(half of it for LL and LL128); NCCL's protocol (LL, LL128 or Simple) is the fastest "
        "the hardware allows"
    ),
    gettext_noop(
        "train-ddp: gradients accumulate over the k micro-batches and are all-reduced once per "
        "step: one all_reduce of S"
    ),
    gettext_noop(
        "train-fsdp (full resharding, as PyTorch FSDP and ZeRO-3): every micro-batch "
        "all-gathers the parameters in its forward pass and again in its backward pass and "
        "reduce-scatters its gradients: 2 x k all_gather and k reduce_scatter calls of S per step"
    ),
    gettext_noop("communication = the sum of the step's calls"),
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
        "inference: one row per instance, at the smallest requested node count at which it "
        "fits; when none fits, one row saying why"
    ),
    gettext_noop(
        "inference tensor-parallel traffic: layers = (P / (12 x 128^2))^(1/3), hidden = 128 x "
        "layers; per decode step 2 x layers all-reduces of batch x hidden x bytes_per_param, "
        "at NCCL's small-message (LL) latencies; per token = per step / batch"
    ),
    gettext_noop(
        "ranking: (1) fits and has a price, by cost per billion tokens (inference: by price per "
        "hour); (2) fits, no price; (3) does not fit or cannot be estimated; ties by instance "
        "id, then node count"
    ),
)
FORMULAS: tuple[str, ...] = tuple(message % {} for message in FORMULA_MESSAGES)


@dataclass(frozen=True)
class Constants:
    """Every tunable number the model uses; `DEFAULT_CONSTANTS` holds the cited defaults."""

    efficiency: Mapping[str, float] = field(default_factory=lambda: dict(EFFICIENCY))
    nccl_latency_us: Mapping[str, Mapping[str, Mapping[str, float]]] = field(
        default_factory=lambda: {
            algorithm: {hw: dict(row) for hw, row in table.items()}
            for algorithm, table in NCCL_LATENCY_US.items()
        }
    )
    nccl_base_latency_us: Mapping[str, Mapping[str, float]] = field(
        default_factory=lambda: {a: dict(row) for a, row in NCCL_BASE_LATENCY_US.items()}
    )
    domain_exit_channels: int = DOMAIN_EXIT_CHANNELS
    network_call_latency_us: Mapping[str, float] = field(
        default_factory=lambda: dict(NETWORK_CALL_LATENCY_US)
    )
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
    # The instance's general network (VPC): what nodes talk over when there is no back-end.
    network_gbits_per_s: float | None = None
    # The fabric's generation where it changes how NCCL runs over it: efa-v1 to efa-v4, tcpx,
    # tcpxo (None: unknown or not applicable).
    generation: str | None = None

    @property
    def kind(self) -> str:
        """The network kind whose factor and latency apply: the technology, or its generation
        where the model tells generations apart (GENERATION_KINDS); an unknown generation takes
        the technology's own (the first generation's) figures."""
        return GENERATION_KINDS.get((self.technology, self.generation or ""), self.technology)

    @property
    def between_nodes_gbits_per_s(self) -> float | None:
        """What a collective crosses between nodes: the back-end, or with plain Ethernet (no
        back-end) the general network; None when unknown."""
        if self.technology == "ethernet":
            return self.network_gbits_per_s
        return self.bandwidth_gbits_per_s


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


def nodes_for(gpus: int, per_node: int) -> int:
    """The smallest number of nodes of `per_node` GPUs that gives `gpus` GPUs (at least one)."""
    return max(1, math.ceil(gpus / per_node))


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
    micro_batch_tokens: int = MICRO_BATCH_TOKENS
    #: GPU counts wanted (`gpus`): when given, each instance is estimated at the node counts
    #: that reach them, ceil(GPUs / GPUs per node), instead of at `nodes`.
    gpus: tuple[int, ...] = ()

    @property
    def params(self) -> float:
        return self.params_b * 1e9

    def node_counts(self, gpu_count: int) -> tuple[int, ...]:
        """The node counts an instance of `gpu_count` GPUs is estimated at, ascending: `nodes`,
        or with `gpus` the smallest count reaching each (two GPU counts may need the same)."""
        if not self.gpus:
            return self.nodes
        return tuple(sorted({nodes_for(g, gpu_count) for g in self.gpus}))

    @property
    def columns(self) -> tuple[int, ...]:
        """What the page's summary and chart are drawn against: GPU counts, or node counts."""
        return self.gpus or self.nodes

    def columns_of(self, nodes: int, gpu_count: int) -> tuple[int, ...]:
        """The columns a result of `nodes` nodes of `gpu_count` GPUs stands for."""
        if not self.gpus:
            return (nodes,)
        return tuple(g for g in self.gpus if nodes_for(g, gpu_count) == nodes)

    def micro_batches(self, gpus: int) -> int:
        """k = max(1, ceil(tokens_per_step / (gpus x micro_batch_tokens))), in integers."""
        return max(1, -(-self.tokens_per_step // (gpus * self.micro_batch_tokens)))

    @property
    def is_training(self) -> bool:
        return self.mode != "inference"


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------


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
    # Training: forward and backward passes per step; None for inference.
    micro_batches: int | None = None
    # Inference only.
    domain_gpus: int | None = None
    needed_gib: float | None = None
    nodes_needed: int | None = None
    tp_comm_s_per_token: float | None = None
    tp_fabric_s_per_token: float | None = None
    # The same reason and verdict as phrases (offerings.estimator.phrases), for the page; not
    # part of the API's output.
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
MICRO_BATCH_TOKENS_MAX = 10**9

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
    "micro_batch_tokens",
)
JOB_KEYS: tuple[str, ...] = (*_SINGLE_KEYS, "nodes", "gpus")
GPUS_MAX = 65_536
GPU_COUNTS_MAX = 32


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


def parse_job(
    params: Mapping[str, Sequence[str]],
) -> tuple[Job | None, dict[str, list[FieldError]]]:
    """Validate the estimator's query parameters; return (job, {}) or (None, {field: [messages]}).

    `params` maps each name to all its values (Django: `{k: request.GET.getlist(k) for k in
    request.GET}`). Only the estimator's own names are read (JOB_KEYS); filter parameters and
    `ids` are the view's. An empty value means "absent" (the no-JS form sends every field);
    `nodes` and `gpus` repeat (one or the other), every other name given twice is invalid.
    Never raises.

    Each message is a `FieldError` (offerings.estimator.phrases): a msgid and its values, whose
    string is the API's English; a page says it in its language from the same msgid.
    """
    errors: dict[str, list[FieldError]] = {}
    values: dict[str, str] = {}

    def error(name: str, message: str, **arguments: Any) -> None:
        errors.setdefault(name, []).append(FieldError(message, arguments))

    for name in _SINGLE_KEYS:
        given = [v for v in params.get(name, ()) if v.strip() != ""]
        if len(given) > 1:
            error(name, GIVE_ONCE)
        elif given:
            values[name] = given[0]

    def number(
        name: str, default: float | None, low: float, high: float, low_inclusive: bool
    ) -> float | None:
        if name not in values:
            if default is None:
                error(name, REQUIRED)
            return default
        value = _parse_float(values[name])
        if value is None:
            error(name, NOT_A_NUMBER)
            return None
        if value < low or (value == low and not low_inclusive):
            error(name, AT_LEAST if low_inclusive else GREATER_THAN, n=low)
            return None
        if value > high:
            error(name, AT_MOST, n=high)
            return None
        return value

    def integer(name: str, default: int, low: int, high: int) -> int | None:
        if name not in values:
            return default
        value = _parse_int(values[name])
        if value is None:
            error(name, NOT_A_WHOLE_NUMBER)
            return None
        if value < low:
            error(name, AT_LEAST, n=low)
            return None
        if value > high:
            error(name, AT_MOST, n=high)
            return None
        return value

    params_b = number("params_b", None, 0.0, PARAMS_B_MAX, low_inclusive=False)
    mode = values.get("mode")
    if mode is None:
        error("mode", REQUIRED)
    elif mode not in MODES:
        error("mode", CHOOSE_ONE, n=", ".join(MODES))
    bytes_per_param = number("bytes_per_param", 2.0, 0.0, 16.0, low_inclusive=False)
    mfu = number("mfu", 0.4, 0.0, 1.0, low_inclusive=False)
    overlap = number("overlap", 0.0, 0.0, 1.0, low_inclusive=True)
    tokens_per_step = integer("tokens_per_step", 4_194_304, 1, TOKENS_PER_STEP_MAX)
    context_tokens = integer("context_tokens", 4096, 1, CONTEXT_TOKENS_MAX)
    batch = integer("batch", 1, 1, BATCH_MAX)
    kv_bytes_per_token = integer("kv_bytes_per_token", 327_680, 1, KV_BYTES_MAX)
    micro_batch_tokens = integer(
        "micro_batch_tokens", MICRO_BATCH_TOKENS, 1, MICRO_BATCH_TOKENS_MAX
    )

    def counts(name: str, given: list[str], high: int, most: int, too_many: str):
        """A repeated count (`nodes`, `gpus`): each a whole number from 1 to `high`, given at
        most `most` times; the different ones, ascending."""
        parsed: set[int] = set()
        for text in given:
            value = _parse_int(text)
            if value is None:
                error(name, NOT_WHOLE, n=repr(text[:20]))
            elif not 1 <= value <= high:
                error(name, OUT_OF_RANGE, n=value, m=high)
            else:
                parsed.add(value)
        if len(given) > most:  # repeated values count: the document's maxItems
            error(name, too_many, n=most)
        return tuple(sorted(parsed))

    nodes: tuple[int, ...] = (1, 2, 4, 8, 16)
    given_nodes = [v for v in params.get("nodes", ()) if v.strip() != ""]
    if given_nodes:
        nodes = counts("nodes", given_nodes, NODES_MAX, NODES_VALUES_MAX, TOO_MANY_NODES)
    gpus: tuple[int, ...] = ()
    given_gpus = [v for v in params.get("gpus", ()) if v.strip() != ""]
    if given_gpus and given_nodes:
        error("gpus", NODES_OR_GPUS)
    elif given_gpus:
        gpus = counts("gpus", given_gpus, GPUS_MAX, GPU_COUNTS_MAX, TOO_MANY_GPU_COUNTS)

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
            micro_batch_tokens=micro_batch_tokens or MICRO_BATCH_TOKENS,
            gpus=gpus,
        ),
        {},
    )
