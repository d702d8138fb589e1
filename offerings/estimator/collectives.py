"""How the GPUs of a row are grouped: the link inside a group and the network between groups.

A row's G = nodes x GPUs per node GPUs form groups of m that share NVLink, Infinity Fabric or
PCIe (the node, or an NVLink domain spanning nodes), joined by the network (`plan`), with the raw
bandwidth of each and the facts missing to know them. The time of a collective over them is
offerings.estimator.nccl's. Pure Python, as offerings.estimator.core.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    FABRIC_KINDS,
    Constants,
    InstanceSpec,
)
from offerings.estimator.phrases import gettext_noop


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
    spanning: bool = False  # a group is an NVLink domain spanning several nodes (NVL72)


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
            return None, None, None, [DOMAIN_SIZE_UNKNOWN[technology]]
        if domain >= instance.gpu_count:
            if not link.bandwidth_gbytes_per_s or link.bandwidth_gbytes_per_s <= 0:
                return None, None, domain, [BANDWIDTH_UNKNOWN[technology]]
            kind = "infinity-fabric" if technology == "infinity-fabric" else "nvlink"
            if (
                kind == "nvlink"
                and link.topology == "nvswitch"
                and link.generation is not None
                and link.generation >= 4
            ):
                kind = "nvlink5-sharp" if link.generation >= 5 else "nvlink-sharp"
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
DOMAIN_SIZE_UNKNOWN = {
    "nvlink": gettext_noop("NVLink domain size"),
    "infinity-fabric": gettext_noop("Infinity Fabric domain size"),
}
BANDWIDTH_UNKNOWN = {
    "nvlink": gettext_noop("NVLink bandwidth"),
    "infinity-fabric": gettext_noop("Infinity Fabric bandwidth"),
}


def spanning_domain(instance: InstanceSpec, domain: int | None) -> int | None:
    """The domain size when an NVLink domain spans nodes (NVSwitch only, as GB200 NVL72)."""
    if domain is None or domain <= instance.gpu_count or instance.link.topology != "nvswitch":
        return None
    return domain


def plan(instance: InstanceSpec, nodes: int, constants: Constants = DEFAULT_CONSTANTS) -> Plan:
    """Group the GPUs of `nodes` nodes into NVLink/PCIe groups joined by the fabric."""
    g = instance.gpu_count
    gpus = nodes * g
    kind, raw, domain, missing = intra_link(instance, constants)
    domain = spanning_domain(instance, domain) if kind != "pcie" else None
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
            inter_kind = fabric.kind
        between = fabric.between_nodes_gbits_per_s
        if between is None or between <= 0:
            missing.append(
                gettext_noop("general network bandwidth")
                if fabric.technology == "ethernet"
                else gettext_noop("fabric bandwidth")
            )
        else:
            inter_raw = between / 8 / g
    return Plan(
        gpus=gpus,
        group_gpus=group,
        groups=groups,
        intra_kind=intra_kind,
        intra_raw=intra_raw,
        inter_kind=inter_kind,
        inter_raw=inter_raw,
        missing=tuple(missing),
        spanning=group > g,
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
