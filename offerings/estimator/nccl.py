"""What nccl-tests should show: the time and bus bandwidth of one collective on N nodes of a type.

One function, `expect()`, answers `GET /api/collectives`, the "What nccl-tests should show"
section of each type's page, and the estimator's communication (a training step's all-reduce,
all-gathers and reduce-scatters are calls of it). Pure Python, as offerings.estimator.core.

The GPUs of a job (G = nodes x g per node) form groups of m that share NVLink, Infinity Fabric or
PCIe (the node, or an NVLink domain spanning nodes, as in GB200 NVL72), D = G / m groups joined by
the network (`offerings.estimator.collectives.plan`). B_link is a GPU's link bandwidth per
direction, B_net a group's network bandwidth per direction (its GPUs' share of the back-end, or
the general network with plain Ethernet), each times its fitted efficiency factor. S is the
message size as nccl-tests prints it (the whole buffer). NCCL pipelines the link and network
stages, so a collective takes as long as its slower stage plus the call's base latency.

Bytes each stage moves, by algorithm (docs/estimator.md "The collective model" has the table):

* ring (all_reduce, all_gather, reduce_scatter): one ring through all G GPUs, a = 2 for
  all_reduce and 1 for the other two. Each GPU sends a(G-1)/G x S over its link, and each group
  sends a(G-1)/G x S over its network ports (every ring channel leaves every group once): a ring
  never reduces the network traffic below the whole message, at two nodes as at a hundred.
* tree (all_reduce, between nodes): NCCL's double binary tree: 2(m-1)/m x S per GPU over the
  link, and `tree_bytes` (S at two groups, 2S beyond) per group over the network at the fabric's
  factor times the tree's (`tree_factor`).
* nvls (all_reduce, NVSwitch with NVLink SHARP: NVLink 4 and later): the switch reduces inside the
  group, 2(m-1)/m x S per GPU at the NVLink SHARP factor; between groups NCCL's NVLS tree moves
  `tree_bytes` per group.
* sharp (all_reduce, InfiniBand where the provider offers SHARP, NCCL's CollNet, which NCCL runs
  only when asked: `auto` leaves it out): the group reduces over its link as above, then the
  switches reduce between groups: S per group in each direction, whatever D.
* all_gather and reduce_scatter measure the same under NVLS and SHARP as under a ring, so they
  are timed as a ring whatever is asked; alltoall (point to point) sends (m-1)/G x S per GPU to
  its own group and m(G-m)/G x S per group over the network.

Time, as NCCL's own tuning model times a call (core.NCCL_LATENCY_US, from its tuning.cc): the
slower stage's bytes over its bandwidth, plus every step's latency (by algorithm, by what the
step crosses and by protocol: a ring all-reduce 2(G-1) steps, 2D of them over the network; a
tree 2(m-1) and 2 log2 D; NVLS one switch latency and its tree's 2 log2 D; SHARP NCCL's CollNet
Direct; alltoall one of each), plus the call's base latency and, when it crosses the network,
the fitted per-call network latency (half of it for LL and LL128). NCCL runs each call with the
fastest protocol the hardware allows (`protocols`): LL, LL128 or Simple, each with its share of
the bandwidth. Bus bandwidth as nccl-tests computes it (doc/PERFORMANCE.md): algbw = S / t,
busbw = algbw x 2(G-1)/G for all_reduce, x (G-1)/G for the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from offerings.estimator.collectives import CommTimes, Plan, effective_bandwidth, plan
from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    FABRIC_KINDS,
    GB,
    LL_MAX_BUSBW,
    NET_OVERHEAD_US,
    PROTOCOL_SHARE,
    RING_PLATEAU,
    TREE_CORRECTION,
    Constants,
    InstanceSpec,
    link_hardware,
)
from offerings.estimator.phrases import gettext_noop

COLLECTIVES: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
ALGORITHMS: tuple[str, ...] = ("auto", "ring", "tree", "nvls", "sharp")

#: nccl-tests' factor from algbw to busbw, as a function of the ranks n (doc/PERFORMANCE.md).
BUSBW_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
}

#: Link kinds whose switch reduces (NVLink SHARP): NCCL's NVLS algorithm runs on them.
NVLS_KINDS = ("nvlink-sharp", "nvlink5-sharp")

#: Why an algorithm cannot run, as a code the API returns and the page translates.
NOT_THIS_COLLECTIVE = gettext_noop("NCCL runs this collective only as %(allowed)s")
ONE_GROUP = gettext_noop(
    "%(algorithm)s runs between nodes, and these GPUs are all in one node or NVLink domain"
)
NO_NVLS = gettext_noop(
    "NVLS needs an NVSwitch with NVLink SHARP (NVLink 4 or later), which this type does not have"
)
NO_SHARP_FABRIC = gettext_noop("SHARP reduces in InfiniBand switches, and this type has %(fabric)s")
SHARP_NOT_OFFERED = gettext_noop("the provider does not offer SHARP")
ONE_GPU = gettext_noop("one GPU runs no collective")

#: The fact whose absence stops an estimate, as `missing` names it.
SHARP_UNKNOWN = gettext_noop("whether the provider offers SHARP")


@dataclass(frozen=True)
class Stage:
    """One stage of a collective: what it crosses, the bytes it moves and its time."""

    name: str  # "link" (inside a group) or "network" (between groups)
    kind: str  # the efficiency factor's link kind: nvlink, nvlink-sharp, pcie, infiniband, ...
    bytes: float  # per GPU over a link; per group over the network
    bandwidth_gbytes_per_s: float  # after efficiency and the protocol's share: per GPU, or group
    steps: float  # latency steps over this stage
    latency_us: float  # per step
    seconds: float  # the bytes over the bandwidth plus the steps' latency

    @property
    def transfer_s(self) -> float:
        return self.bytes / (self.bandwidth_gbytes_per_s * GB)

    @property
    def steps_s(self) -> float:
        return self.steps * self.latency_us * 1e-6


@dataclass(frozen=True)
class Expectation:
    """The answer for one collective: its figures, or why it cannot be estimated."""

    collective: str
    algorithm: str  # the one used ("auto" resolved); "p2p" for alltoall
    nodes: int
    gpus: int
    message_bytes: int
    plan: Plan | None = None
    stages: tuple[Stage, ...] = ()
    base_latency_us: float = 0.0  # the call's own: NCCL's base, the plateau, the network's
    time_s: float | None = None
    missing: tuple[str, ...] = ()  # unknown facts: cannot estimate
    refused: tuple[str, dict] | None = None  # the algorithm cannot run here: (message, values)
    considered: dict[str, float] = field(default_factory=dict)  # auto: algorithm -> seconds
    protocol: str | None = None  # NCCL's protocol: ll, ll128 or simple
    # The bytes' share of time_s: the slower stage's, after the tree's correction and LL's
    # ceiling (the rest is latency).
    transfer_s: float | None = None

    @property
    def estimated(self) -> bool:
        return self.time_s is not None

    @property
    def algbw_gbytes_per_s(self) -> float | None:
        if self.time_s is None or self.time_s <= 0:
            return None
        return self.message_bytes / self.time_s / GB

    @property
    def busbw_gbytes_per_s(self) -> float | None:
        algbw = self.algbw_gbytes_per_s
        if algbw is None:
            return None
        return algbw * BUSBW_FACTOR[self.collective](self.gpus)

    @property
    def bottleneck(self) -> str | None:
        """The slower stage ("link" or "network"), or "latency" when the latencies take more
        of the call than the slower stage's bytes."""
        if not self.stages or self.time_s is None:
            return None
        slowest = max(self.stages, key=lambda stage: stage.transfer_s)
        transfer = slowest.transfer_s if self.transfer_s is None else self.transfer_s
        if transfer < self.time_s - transfer:
            return "latency"
        return slowest.name


def nvls_capable(the_plan: Plan) -> bool:
    return the_plan.intra_kind in NVLS_KINDS


#: NVLink generation -> the GPU generation NCCL's tables name (LL128 and the ring plateau).
_ARCH = {2: "volta", 3: "ampere", 4: "hopper", 5: "blackwell"}

#: The protocols NCCL runs across each network kind (any other: Simple only).
#: - LL128 needs GPUDirect RDMA NICs beside the GPUs (NCCL enables it only when the NIC sits
#:   under the GPU's PCIe switch): InfiniBand and RoCE with NCCL's own verbs transport, and EFA.
#: - EFA before its second generation delivers bytes out of order, so aws-ofi-nccl runs Simple
#:   only there (AWS's maintainer in aws/aws-ofi-nccl#76, 2021-12-17; on P5's EFA the plugin no
#:   longer forces it, aws/aws-ofi-nccl#280, 2023-09-29): `EFA_IN_ORDER`.
#: - GPUDirect-TCPX (A3 High) runs Simple only: apple/axlearn's A3 job environment,
#:   axlearn/cloud/gcp/job.py at 3f3ad8e630154d3be53f6b8f7976169ecd95b257 ("TCPX only supports
#:   Simple protocol").
#: - GPUDirect-TCPXO (A3 Mega) never runs LL: the NCCL environment profile Google ships with it
#:   sets NCCL_PROTO to Simple (to Simple and LL128 in its 2025 version), as the job
#:   configurations that reproduce it show.
NETWORK_PROTOCOLS: dict[str, frozenset[str]] = {
    "infiniband": frozenset({"simple", "ll", "ll128"}),
    "roce": frozenset({"simple", "ll", "ll128"}),
    "efa": frozenset({"simple", "ll", "ll128"}),
    "erdma": frozenset({"simple", "ll"}),
    "ethernet": frozenset({"simple", "ll"}),
    "tcpx": frozenset({"simple"}),
    "tcpxo": frozenset({"simple", "ll128"}),
}
#: The share of the fitted per-call network latency an LL or LL128 call pays (tuning.cc adds the
#: network plugin's latency to a network step once, and once more for Simple's flush).
LL_NETWORK_LATENCY_SHARE = 0.5

#: Networks NCCL runs only rings over: GPUDirect-TCPX ("TCPX only supports Ring algorithm",
#: "TCPX is not compatible with NVLS": the axlearn environment cited in `protocols`).
RING_ONLY_NETWORKS = ("tcpx",)

#: EFA generations that deliver in order (None: unknown, taken as the first generation's).
EFA_IN_ORDER = ("efa-v2", "efa-v3", "efa-v4")


def _arch(instance: InstanceSpec) -> str | None:
    link = instance.link
    if link.technology != "nvlink" or link.generation is None:
        return None
    return _ARCH.get(link.generation)


def protocols(algorithm: str, the_plan: Plan, instance: InstanceSpec) -> tuple[str, ...]:
    """The protocols NCCL may run `algorithm` with here (tuning.cc's rules): NVLS and CollNet
    run Simple only; LL128 only over NVLink of Volta, Ampere or Hopper GPUs (this NCCL leaves it
    off on Blackwell); between nodes, what the network allows (NETWORK_PROTOCOLS), Simple only
    over EFA that does not deliver in order."""
    if algorithm in ("nvls", "sharp", "p2p"):
        return ("simple",)
    allowed = {"simple", "ll", "ll128"}
    if the_plan.groups > 1:
        network = the_plan.inter_kind
        allowed &= NETWORK_PROTOCOLS.get(network, {"simple"})
        if network == "efa" and instance.fabric.generation not in EFA_IN_ORDER:
            allowed = {"simple"}
    nvlink = the_plan.intra_kind in ("nvlink", *NVLS_KINDS) or the_plan.group_gpus == 1
    if not (nvlink and _arch(instance) in ("volta", "ampere", "hopper")):
        allowed.discard("ll128")
    return tuple(protocol for protocol in ("simple", "ll", "ll128") if protocol in allowed)


def _bandwidths(
    the_plan: Plan, constants: Constants, link_kind: str | None, network_kind: str | None
) -> tuple[float | None, float | None]:
    """(a GPU's link bandwidth, a group's network bandwidth), GB/s per direction after the
    efficiency factors; None where unused or unknown."""
    link = effective_bandwidth(link_kind, the_plan.intra_raw, constants)
    network = effective_bandwidth(network_kind, the_plan.inter_raw, constants)
    if network is not None:
        # A node uses all its GPUs' ports; a domain spanning nodes leaves through few of them.
        ports = the_plan.group_gpus
        if the_plan.spanning:
            ports = min(ports, constants.domain_exit_channels)
        network *= ports
    return link, network


def _family(algorithm: str, collective: str) -> str:
    """Whose latency tables a call takes: alltoall's point-to-point sends, all-gathers and
    reduce-scatters are timed as rings (see `_stages`); an all-reduce as its algorithm."""
    return "ring" if algorithm == "p2p" or collective != "all_reduce" else algorithm


def _step_latency(
    constants: Constants, family: str, kind: str, protocol: str, multi_group: bool
) -> float:
    """NCCL's latency of one step of `family`'s algorithm over `kind` with `protocol`, us."""
    table = constants.nccl_latency_us[family]
    latency = table[link_hardware(kind)][protocol]
    if family == "ring" and multi_group and link_hardware(kind) != "net" and latency > 0:
        # An inter-node ring's NVLink steps still post network operations (a perfect run,
        # `line_rate`, has no latency at all and keeps none).
        latency = max(latency, NET_OVERHEAD_US[protocol])
    return latency


def _stages(
    algorithm: str,
    collective: str,
    size: float,
    the_plan: Plan,
    constants: Constants,
    protocol: str,
) -> tuple[Stage, ...]:
    g, m, d = the_plan.gpus, the_plan.group_gpus, the_plan.groups
    link_kind = the_plan.intra_kind
    if link_kind in NVLS_KINDS and algorithm not in ("nvls", "sharp"):
        link_kind = "nvlink"  # a ring or tree through an NVSwitch reduces on the GPUs
    network_kind = the_plan.inter_kind
    if algorithm == "sharp":
        network_kind = "infiniband-sharp"
    if collective in ("all_gather", "reduce_scatter"):
        # All-gather and reduce-scatter: every shard reaches every GPU whatever the algorithm
        # (NVLS and SHARP measure as a ring does, Together's B200 runs), so each is timed as one.
        link_kind = "nvlink" if link_kind in NVLS_KINDS else link_kind
        network_kind = the_plan.inter_kind
        algorithm = "ring"
    link_bw, network_bw = _bandwidths(the_plan, constants, link_kind, network_kind)
    family = _family(algorithm, collective)
    share = PROTOCOL_SHARE.get(algorithm, {}).get(protocol, 1.0)
    if algorithm == "ring" and protocol == "ll" and d == 1 and collective != "all_reduce":
        share = 1 / 3
    if algorithm == "ring" and protocol == "ll128" and m == 1:
        share = 0.7  # one GPU a node sends and receives through the same NIC (tuning.cc)
    stages: list[Stage] = []

    def add(
        name: str,
        kind: str | None,
        nbytes: float,
        bandwidth: float | None,
        steps: float,
        latency: float | None = None,
    ):
        assert kind is not None
        assert bandwidth is not None
        bandwidth *= share
        if latency is None:
            latency = _step_latency(constants, family, kind, protocol, d > 1)
        seconds = nbytes / (bandwidth * GB) + steps * latency * 1e-6
        stages.append(Stage(name, kind, nbytes, bandwidth, steps, latency, seconds))

    if collective == "alltoall":
        if m > 1:
            add("link", link_kind, (m - 1) / g * size, link_bw, 1)
        if d > 1:
            add("network", the_plan.inter_kind, m * (g - m) / g * size, network_bw, 1)
        return tuple(stages)
    if algorithm == "ring":
        # NCCL's steps: 2(G-1) for an all-reduce, G-1 for the others; 2D (D-1) of them cross
        # the network when there are several groups.
        a = 2 if collective == "all_reduce" else 1
        network_steps = (2 * d if a == 2 else d - 1) if d > 1 else 0
        if m > 1:
            add("link", link_kind, a * (g - 1) / g * size, link_bw, a * (g - 1) - network_steps)
        if d > 1:
            add("network", the_plan.inter_kind, a * (g - 1) / g * size, network_bw, network_steps)
        return tuple(stages)
    if algorithm == "tree":
        if m > 1:
            add("link", link_kind, 2 * (m - 1) / m * size, link_bw, 2 * (m - 1))
        tree_bw = network_bw * tree_factor(the_plan.inter_kind, constants)
        add("network", the_plan.inter_kind, tree_bytes(d, size), tree_bw, 2 * math.log2(d))
        return tuple(stages)
    if algorithm == "sharp":
        # NCCL's CollNet Direct: 2 x (one NVLink step + 0.4 us per other GPU), then one
        # network step.
        if m > 1:
            table = constants.nccl_latency_us["sharp"]
            intra = table[link_hardware(link_kind)]["simple"]
            latency = 2 * (intra + table["arity"]["simple"] * (m - 1))
            add("link", link_kind, 2 * (m - 1) / m * size, link_bw, 1, latency)
        if d > 1:
            add("network", network_kind, size, network_bw, 1)
        return tuple(stages)
    # nvls: the switch reduces inside the group (one NVLS latency), then NCCL's NVLS tree, a
    # double binary tree between the groups.
    if m > 1:
        add("link", link_kind, 2 * (m - 1) / m * size, link_bw, 1)
    if d > 1:
        add("network", the_plan.inter_kind, tree_bytes(d, size), network_bw, 2 * math.log2(d))
    return tuple(stages)


def _call_time(
    algorithm: str,
    collective: str,
    protocol: str,
    stages: tuple[Stage, ...],
    the_plan: Plan,
    instance: InstanceSpec,
    size: float,
    constants: Constants,
) -> tuple[float, float, float]:
    """(seconds, the call's own latency in us, the bytes' share of the seconds), as NCCL's model
    times a call: the slowest stage's bytes plus every step's latency plus the call's base
    latency, with the fitted per-call network latency when the call crosses the network (half
    of it for LL and LL128)."""
    family = _family(algorithm, collective)
    base = constants.nccl_base_latency_us[family][protocol]
    steps = sum(stage.steps_s for stage in stages)
    plateau = family == "ring" and protocol == "simple" and collective == "all_reduce"
    if plateau and the_plan.groups > 1 and not the_plan.spanning:
        factor = RING_PLATEAU["volta" if _arch(instance) == "volta" else "later"]
        base += (factor - 1) * (steps * 1e6 + base)
    transfer = max(stage.transfer_s for stage in stages)
    if family == "tree":
        index = int(math.log2(max(1, int(size) >> 6)))
        if index < len(TREE_CORRECTION[protocol]):
            transfer /= TREE_CORRECTION[protocol][index]
    if protocol == "ll":
        d = the_plan.groups
        cap = (
            LL_MAX_BUSBW["one-node-volta" if _arch(instance) == "volta" else "one-node"]
            if d == 1
            else LL_MAX_BUSBW["two-nodes" if d == 2 else "more-nodes"]
        )
        transfer = max(transfer, size * BUSBW_FACTOR[collective](the_plan.gpus) / (cap * GB))
    network = [stage.kind for stage in stages if stage.name == "network"]
    if network:
        # The network's own latency (fitted per call): NCCL counts a network's latency once
        # for LL and LL128 and twice for Simple (its flush), so LL and LL128 take half.
        share = 1.0 if protocol == "simple" else LL_NETWORK_LATENCY_SHARE
        base += share * constants.network_call_latency_us.get(network[0], 0.0)
    return transfer + steps + base * 1e-6, base, transfer


def band_kind(result: Expectation) -> str | None:
    """The link kind whose held-out errors bound this answer (and which a published run of it
    calibrates): a tree's own factor where the answer is a tree, else the network's kind between
    groups, else the link's inside one."""
    network = [stage.kind for stage in result.stages if stage.name == "network"]
    if network and result.algorithm == "tree":
        return "tree-efa" if network[0] == "efa" else "tree"
    if network:
        return network[0]
    link = [stage.kind for stage in result.stages if stage.name == "link"]
    return link[0] if link else None


def tree_factor(fabric: str | None, constants: Constants) -> float:
    """The tree's share of a ring's network bandwidth: the fabric's own where one is fitted
    ("tree-efa": aws-ofi-nccl's trees, above 1: they beat EFA's fitted ring), else the one fitted on
    InfiniBand."""
    factors = constants.efficiency
    return factors.get(f"tree-{fabric}", factors["tree"])


def tree_bytes(groups: int, size: float) -> float:
    """Bytes a group sends (and receives) in a double binary tree all-reduce of `size` bytes
    between `groups` groups: with two, each is the other's parent in one tree and child in the
    other, so each sends the message once; with more, a group is an inner node of one tree (up
    from two children, down to them) and a leaf of the other, which makes twice the message."""
    return size if groups == 2 else 2 * size


def _refusal(
    algorithm: str, collective: str, the_plan: Plan, fabric: str, sharp: bool | None
) -> tuple[tuple[str, dict] | None, tuple[str, ...]]:
    """Why `algorithm` cannot run `collective` on this plan (or which fact is missing)."""
    if collective == "alltoall":
        if algorithm not in ("auto",):
            return (NOT_THIS_COLLECTIVE, {"allowed": "point-to-point sends (algorithm=auto)"}), ()
        return None, ()
    if collective in ("all_gather", "reduce_scatter") and algorithm == "tree":
        return (NOT_THIS_COLLECTIVE, {"allowed": "ring, NVLS or SHARP"}), ()
    if algorithm in ("tree", "sharp") and the_plan.groups < 2:
        return (ONE_GROUP, {"algorithm": algorithm}), ()
    if algorithm == "nvls" and not nvls_capable(the_plan):
        if the_plan.intra_kind is None and the_plan.missing:
            return None, the_plan.missing
        return (NO_NVLS, {}), ()
    if algorithm == "sharp":
        if fabric not in FABRIC_KINDS:
            return None, (gettext_noop("fabric technology"),)
        if fabric != "infiniband":
            return (NO_SHARP_FABRIC, {"fabric": fabric}), ()
        if sharp is None:
            return None, (SHARP_UNKNOWN,)
        if not sharp:
            return (SHARP_NOT_OFFERED, {}), ()
    return None, ()


def _candidates(collective: str, the_plan: Plan) -> list[str]:
    """What `auto` chooses among, as NCCL would on this hardware: the fastest of these."""
    if collective == "alltoall":
        return ["p2p"]
    if collective != "all_reduce":
        return ["ring"]
    if the_plan.groups < 2:
        # NCCL weighs NVLS against its ring: a few kilobytes go faster around the ring with LL.
        return ["nvls", "ring"] if nvls_capable(the_plan) else ["ring"]
    if the_plan.inter_kind in RING_ONLY_NETWORKS:
        return ["ring"]
    # SHARP (CollNet) is left out: NCCL runs it only when NCCL_COLLNET_ENABLE asks for it.
    return ["nvls", "ring"] if nvls_capable(the_plan) else ["ring", "tree"]


def expect(
    instance: InstanceSpec,
    collective: str,
    nodes: int,
    message_bytes: int,
    algorithm: str = "auto",
    *,
    sharp: bool | None = None,
    constants: Constants = DEFAULT_CONSTANTS,
) -> Expectation:
    """The expected time and bandwidth of `collective` over `message_bytes` on `nodes` nodes.

    `sharp` is whether the provider offers SHARP (its readiness fact; None: unknown). An
    unknown fact the answer needs makes it `missing`, never a guess; an algorithm the hardware
    cannot run makes it `refused`.
    """
    if collective not in COLLECTIVES or algorithm not in ALGORITHMS:
        raise ValueError(f"unknown collective {collective!r} or algorithm {algorithm!r}")
    the_plan = plan(instance, nodes, constants)
    blank = Expectation(
        collective=collective,
        algorithm=algorithm,
        nodes=nodes,
        gpus=the_plan.gpus,
        message_bytes=message_bytes,
        plan=the_plan,
    )
    if the_plan.gpus < 2:
        return replace(blank, refused=(ONE_GPU, {}))
    fabric = instance.fabric.technology
    refused, missing = _refusal(algorithm, collective, the_plan, fabric, sharp)
    if refused is not None:
        return replace(blank, refused=refused)
    if missing:
        return replace(blank, missing=missing)
    if the_plan.missing:
        return replace(blank, missing=the_plan.missing)
    options = _candidates(collective, the_plan) if algorithm == "auto" else [algorithm]
    best: Expectation | None = None
    considered: dict[str, float] = {}
    for option in options:
        for protocol in protocols(option, the_plan, instance):
            stages = _stages(option, collective, message_bytes, the_plan, constants, protocol)
            seconds, call, transfer = _call_time(
                option, collective, protocol, stages, the_plan, instance, message_bytes, constants
            )
            if option not in considered or seconds < considered[option]:
                considered[option] = seconds
            if best is None or seconds < best.time_s:
                best = replace(
                    blank,
                    algorithm=option,
                    stages=stages,
                    base_latency_us=call,
                    time_s=seconds,
                    protocol=protocol,
                    transfer_s=transfer,
                )
    assert best is not None
    return replace(best, considered=considered if algorithm == "auto" else {})


def line_rate(constants: Constants) -> Constants:
    """The constants of a perfect run: every factor at least 1 (in-network reduction keeps its
    factor above 1), no latency. An answer's error band never goes above what this reaches."""
    return replace(
        constants,
        efficiency={kind: max(1.0, factor) for kind, factor in constants.efficiency.items()},
        nccl_latency_us={
            algorithm: {hw: dict.fromkeys(row, 0.0) for hw, row in table.items()}
            for algorithm, table in constants.nccl_latency_us.items()
        },
        nccl_base_latency_us={
            algorithm: dict.fromkeys(row, 0.0)
            for algorithm, row in constants.nccl_base_latency_us.items()
        },
        network_call_latency_us=dict.fromkeys(constants.network_call_latency_us, 0.0),
    )


def communication(
    instance: InstanceSpec,
    nodes: int,
    calls: tuple[tuple[str, float, int], ...],
    constants: Constants = DEFAULT_CONSTANTS,
) -> CommTimes:
    """A training step's or a token's communication: `calls` is (collective, bytes, how many
    times), each timed by `expect` with `auto`. The link and network seconds are summed over the
    calls as the page shows them; the total is the sum of each call's time (its slower stage plus
    its base latency). None where a fact is missing."""
    intra = inter = total = 0.0
    for collective, size, count in calls:
        result = expect(
            instance,
            collective,
            nodes,
            max(1, round(size)),
            constants=constants,
        )
        if result.refused is not None:  # one GPU: nothing to talk to
            continue
        if result.time_s is None:
            return CommTimes(None, None, None)
        for stage in result.stages:
            if stage.name == "link":
                intra += count * stage.seconds
            else:
                inter += count * stage.seconds
        total += count * result.time_s
    return CommTimes(intra, inter, total)
