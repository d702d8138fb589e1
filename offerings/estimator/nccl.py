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

Time: each stage's bytes over its bandwidth plus its steps times NCCL's Simple-protocol latency
per step (core.LATENCY_US): a ring all-reduce 2(G-D) link and 2(D-1) network steps, a tree or
NVLS 2(m-1) and 2 log2 D, SHARP 2(m-1) and 2, alltoall one of each. NCCL pipelines the stages,
so a call takes its slower stage (the other stage's step latencies hide behind it, where NCCL's
own tuning model adds them: a simplification), plus the base latency and, when it crosses the
network, the fitted per-call network latency. Bus bandwidth as nccl-tests computes it
(doc/PERFORMANCE.md): algbw = S / t, busbw = algbw x 2(G-1)/G for all_reduce, x (G-1)/G for
the others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from offerings.estimator.collectives import CommTimes, Plan, effective_bandwidth, plan
from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    FABRIC_KINDS,
    GB,
    Constants,
    InstanceSpec,
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
    bandwidth_gbytes_per_s: float  # after efficiency: per GPU, or per group
    steps: float  # latency steps over this stage
    latency_us: float  # per step
    seconds: float


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
    base_latency_us: float = 0.0
    time_s: float | None = None
    missing: tuple[str, ...] = ()  # unknown facts: cannot estimate
    refused: tuple[str, dict] | None = None  # the algorithm cannot run here: (message, values)
    considered: dict[str, float] = field(default_factory=dict)  # auto: algorithm -> seconds

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
        """The slower stage ("link" or "network"), or "latency" when the steps' latency is
        more than the slower stage's bandwidth time."""
        if not self.stages or self.time_s is None:
            return None
        slowest = max(self.stages, key=lambda stage: stage.seconds)
        transfer = slowest.bytes / (slowest.bandwidth_gbytes_per_s * GB)
        if transfer < self.time_s - transfer:
            return "latency"
        return slowest.name


def nvls_capable(the_plan: Plan) -> bool:
    return the_plan.intra_kind in NVLS_KINDS


def _stage(
    name: str,
    kind: str,
    size: float,
    bandwidth: float,
    steps: float,
    constants: Constants,
    small_messages: bool,
) -> Stage:
    table = constants.latency_ll_us if small_messages else constants.latency_us
    latency = table[kind]
    seconds = size / (bandwidth * GB) + steps * latency * 1e-6
    return Stage(name, kind, size, bandwidth, steps, latency, seconds)


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


def _stages(
    algorithm: str,
    collective: str,
    size: float,
    the_plan: Plan,
    constants: Constants,
    small_messages: bool,
) -> tuple[Stage, ...]:
    g, m, d = the_plan.gpus, the_plan.group_gpus, the_plan.groups
    link_kind = the_plan.intra_kind
    if link_kind in NVLS_KINDS and algorithm not in ("nvls", "sharp"):
        link_kind = "nvlink"  # a ring or tree through an NVSwitch reduces on the GPUs
    network_kind = the_plan.inter_kind
    if algorithm == "sharp":
        network_kind = "infiniband-sharp"
    link_bw, network_bw = _bandwidths(the_plan, constants, link_kind, network_kind)
    a = 2 if collective == "all_reduce" else 1
    stages: list[Stage] = []

    def add(name: str, kind: str | None, nbytes: float, bandwidth: float | None, steps: float):
        assert kind is not None
        assert bandwidth is not None
        stages.append(_stage(name, kind, nbytes, bandwidth, steps, constants, small_messages))

    if collective == "alltoall":
        if m > 1:
            add("link", link_kind, (m - 1) / g * size, link_bw, 1)
        if d > 1:
            add("network", the_plan.inter_kind, m * (g - m) / g * size, network_bw, 1)
        return tuple(stages)
    if collective != "all_reduce":
        # All-gather and reduce-scatter: every shard reaches every GPU whatever the algorithm
        # (NVLS and SHARP measure as a ring does, Together's B200 runs), so each is timed as one.
        link_kind = "nvlink" if link_kind in NVLS_KINDS else link_kind
        link_bw, network_bw = _bandwidths(the_plan, constants, link_kind, the_plan.inter_kind)
        algorithm = "ring"
    if algorithm == "ring":
        if m > 1:
            add("link", link_kind, a * (g - 1) / g * size, link_bw, a * (g - d))
        if d > 1:
            add("network", the_plan.inter_kind, a * (g - 1) / g * size, network_bw, a * (d - 1))
        return tuple(stages)
    if algorithm == "tree":
        if m > 1:
            add("link", link_kind, 2 * (m - 1) / m * size, link_bw, 2 * (m - 1))
        tree_bw = network_bw * tree_factor(the_plan.inter_kind, constants)
        add("network", the_plan.inter_kind, tree_bytes(d, size), tree_bw, 2 * math.log2(d))
        return tuple(stages)
    # nvls and sharp: reduce inside the group, then between groups.
    if m > 1:
        add("link", link_kind, 2 * (m - 1) / m * size, link_bw, 2 * (m - 1))
    if d > 1:
        if algorithm == "sharp":
            add("network", network_kind, size, network_bw, 2)
        else:  # NCCL's NVLS tree: a double binary tree between the groups
            add("network", the_plan.inter_kind, tree_bytes(d, size), network_bw, 2 * math.log2(d))
    return tuple(stages)


def _network_call_latency(
    stages: tuple[Stage, ...], constants: Constants, small_messages: bool
) -> float:
    """Microseconds a call that crosses the network adds (Simple protocol; NCCL's LL figures
    stand alone for small messages)."""
    if small_messages:
        return 0.0
    kinds = [stage.kind for stage in stages if stage.name == "network"]
    return constants.network_call_latency_us.get(kinds[0], 0.0) if kinds else 0.0


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
        return ["nvls"] if nvls_capable(the_plan) else ["ring"]
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
    small_messages: bool = False,
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
    base = constants.base_latency_ll_us if small_messages else constants.base_latency_us
    best: Expectation | None = None
    considered: dict[str, float] = {}
    for option in options:
        stages = _stages(option, collective, message_bytes, the_plan, constants, small_messages)
        call = base + _network_call_latency(stages, constants, small_messages)
        seconds = max(stage.seconds for stage in stages) + call * 1e-6
        considered[option] = seconds
        if best is None or seconds < best.time_s:
            best = replace(
                blank, algorithm=option, stages=stages, base_latency_us=call, time_s=seconds
            )
    assert best is not None
    return replace(best, considered=considered if algorithm == "auto" else {})


def line_rate(constants: Constants) -> Constants:
    """The constants of a perfect run: every factor at least 1 (in-network reduction keeps its
    factor above 1), no latency. An answer's error band never goes above what this reaches."""
    return replace(
        constants,
        efficiency={kind: max(1.0, factor) for kind, factor in constants.efficiency.items()},
        latency_us=dict.fromkeys(constants.latency_us, 0.0),
        base_latency_us=0.0,
        network_call_latency_us=dict.fromkeys(constants.network_call_latency_us, 0.0),
    )


def communication(
    instance: InstanceSpec,
    nodes: int,
    calls: tuple[tuple[str, float, int], ...],
    constants: Constants = DEFAULT_CONSTANTS,
    small_messages: bool = False,
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
            small_messages=small_messages,
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
