"""Facts the vendor's platform forces, and the basis of every interconnect fact.

A fact's basis says why the catalog believes it: `provider` (the provider's own documentation or
API states it), `platform` (it follows from the vendor's published specification of the board
the instance must be: eight H100 SXM GPUs in one instance sit on an HGX H100 8-GPU baseboard,
which has NVSwitch), or `third-party` (benchmark submissions, other catalogs, articles). A fact
derived from others takes the weakest basis of its inputs: a platform rule applied to a GPU that
only a third party names is `third-party`.

The rules live here, each with the vendor document it rests on and the conditions under which it
applies. `derive_link()` fills only the GPU-link fields no source states; a rule never overrides
a stated fact, and a disagreement between the two is returned as a conflict (the catalog lint
fails on it). The writer applies the rules when it loads the curated catalog, skipping fields a
curator has locked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from offerings.schemas import RDMA_FABRICS

PROVIDER = "provider"
PLATFORM = "platform"
THIRD_PARTY = "third-party"
# Strongest first: the weakest basis of several inputs is the one furthest down this list.
BASES = (PROVIDER, PLATFORM, THIRD_PARTY)

# The GPU-link fields a rule can state, in the order the API lists them.
LINK_FIELDS = ("technology", "generation", "topology", "domain_size", "bandwidth_gbytes_per_s")
# The fabric fields whose basis the API reports (the `fabric` object's fields).
FABRIC_FIELDS = (
    "technology",
    "bandwidth_gbits_per_s",
    "nics",
    "gpudirect_rdma",
    "multi_node",
    "max_nodes",
)
# The instance's general network (VPC, storage, internet): a top-level API field beside `fabric`.
NETWORK_FIELDS = ("network_gbits_per_s", "network_shared")
# Every fabric field that carries a basis in the database (the API reports FABRIC_FIELDS).
FABRIC_BASIS_FIELDS = (
    "technology",
    "generation",
    "port_speed_gbits_per_s",
    "nics",
    "bandwidth_gbits_per_s",
    "rdma",
    "gpudirect_rdma",
    "rail_optimized",
    "multi_node",
    "max_nodes",
    "sales_only",
    *NETWORK_FIELDS,
)


def is_known(value: Any) -> bool:
    """Whether a fact is known: unknown is None, an empty string or the word "unknown"."""
    return value not in (None, "", "unknown")


def _weaker(basis: str | None, than: str) -> bool:
    return basis is None or BASES.index(basis) > BASES.index(than)


def weakest(*bases: str | None) -> str | None:
    """The weakest of the given bases; None when any input is unknown (has no basis)."""
    if not bases or any(basis is None for basis in bases):
        return None
    return max(bases, key=BASES.index)


# -- the vendor documents -------------------------------------------------------------------------
# Checked 2026-12-01 in stored copies: NVIDIA's NVSwitch page (docs corpus) lists the HGX A100,
# H100, H200, B200 and B300 8-GPU baseboards under "Platform Support for NVIDIA NVSwitch"; the
# per-GPU NVLink figures are the product pages' (A100 SXM 600 GB/s, H100/H200 SXM 900 GB/s, HGX
# B200/B300 14.4 TB/s total over 8 GPUs = 1.8 TB/s each); AMD's CDNA 3 white paper: seven Infinity
# Fabric links "form a fully connected 8-GPU system", 896 GB/s peer aggregate (MI300X, MI325X);
# the CDNA 4 white paper: 1,075.2 GB/s (MI355X, stored here as 1,075); the DGX-1 V100 white paper:
# eight V100 "in a hybrid cube-mesh network", six 25 GB/s links per GPU each way (300 GB/s).

NVSWITCH_PLATFORMS = (
    "https://docs.nvidia.com/ai-enterprise/release-9/latest/infra-software/vgpu/features/"
    "nvswitch.html"
)
A100_PAGE = "https://www.nvidia.com/en-us/data-center/a100/"
H100_PAGE = "https://www.nvidia.com/en-us/data-center/h100/"
H200_PAGE = "https://www.nvidia.com/en-us/data-center/h200/"
BLACKWELL_ULTRA_DATASHEET = (
    "https://resources.nvidia.com/en-us-blackwell-architecture/blackwell-ultra-datasheet"
)
GB200_NVL72_PAGE = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
# Fabric Manager's virtualization models (checked 2026-12-01, docs corpus): a VM of 2 or 4 GPUs of an
# NVSwitch baseboard gets a GPU partition whose GPUs all reach each other over NVLink (the shared
# NVSwitch model gives "complete bandwidth for two and four GPU VMs"); 4-GPU HGX boards wire their
# four GPUs all-to-all without a switch.
FABRIC_MANAGER_GUIDE = (
    "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
)
GB300_NVL72_PAGE = "https://www.nvidia.com/en-us/data-center/gb300-nvl72/"
DGX1_V100_WHITEPAPER = (
    "https://images.nvidia.com/content/pdf/dgx1-v100-system-architecture-whitepaper.pdf"
)
CDNA3_WHITEPAPER = (
    "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/"
    "amd-cdna-3-white-paper.pdf"
)
CDNA4_WHITEPAPER = (
    "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/"
    "amd-cdna-4-architecture-whitepaper.pdf"
)


@dataclass(frozen=True)
class Board:
    """What the rules look at: the GPU model and count, and what the provider names."""

    gpu: str
    gpu_count: int
    # The rack the provider names the instance part of ("nvl72"), or "" when it names none.
    rack: str = ""


@dataclass(frozen=True)
class Rule:
    """One platform fact set: the system it describes, its document and when it applies."""

    slug: str
    system: str  # the vendor system it rests on, by name: "NVIDIA HGX H100 8-GPU"
    document_url: str
    gpus: frozenset[str]
    facts: Mapping[str, Any]
    gpu_count: int | None = None  # None: any count
    min_gpus: int = 1
    rack: str = ""  # the rack the provider must name ("" : no condition)
    needs_link: str = ""  # the link technology already known ("" : no condition)
    needs_topology: str = ""  # the link topology already known ("" : no condition)

    def applies(self, board: Board, technology: str, topology: str = "") -> bool:
        return (
            board.gpu in self.gpus
            and (self.gpu_count is None or board.gpu_count == self.gpu_count)
            and board.gpu_count >= self.min_gpus
            and (not self.rack or board.rack == self.rack)
            and (not self.needs_link or technology == self.needs_link)
            and (not self.needs_topology or topology == self.needs_topology)
        )


def _hgx8(slug: str, system: str, url: str, gpus: set[str], generation: int, gbytes: int) -> Rule:
    facts = {
        "technology": "nvlink",
        "generation": generation,
        "topology": "nvswitch",
        "domain_size": 8,
        "bandwidth_gbytes_per_s": gbytes,
    }
    return Rule(slug, system, url, frozenset(gpus), facts, gpu_count=8)


def _oam8(slug: str, system: str, url: str, gpu: str, gbytes: int) -> Rule:
    facts = {
        "technology": "infinity-fabric",
        "topology": "mesh",
        "domain_size": 8,
        "bandwidth_gbytes_per_s": gbytes,
    }
    return Rule(slug, system, url, frozenset({gpu}), facts, gpu_count=8)


def _nvlink_of(slug: str, system: str, url: str, gpus: set[str], generation: int, gbytes: int):
    # A GPU's whole NVLink bandwidth reaches its peers through a switch. Without one (a slice of
    # a 4-GPU board wired all-to-all, or a pair) each peer gets only its share of the links, so
    # the figure follows only where the NVSwitch is known: from a board rule or from the source.
    facts = {"generation": generation, "bandwidth_gbytes_per_s": gbytes}
    return Rule(
        slug, system, url, frozenset(gpus), facts, needs_link="nvlink", needs_topology="nvswitch"
    )


# The NVLink generation of each SXM module (the GPU's own specification).
SXM_GENERATIONS = {
    "v100-sxm2-16gb": ("V100 SXM2", DGX1_V100_WHITEPAPER, 2),
    "v100-sxm2-32gb": ("V100 SXM2", DGX1_V100_WHITEPAPER, 2),
    "a100-sxm-40gb": ("A100 SXM", A100_PAGE, 3),
    "a100-sxm-80gb": ("A100 SXM", A100_PAGE, 3),
    "h100-sxm": ("H100 SXM", H100_PAGE, 4),
    "h200-sxm": ("H200 SXM", H200_PAGE, 4),
    "b200": ("B200", GB200_NVL72_PAGE, 5),
    "b300": ("B300", BLACKWELL_ULTRA_DATASHEET, 5),
}

# GPU models that have no NVLink at all (no connector for a bridge or a baseboard): however many
# of them an instance holds, their GPUs meet only over PCIe. Each rests on the GPU's own page, as
# fixtures/gpus.toml records it (checked 2026-12-04: the L40/L40S datasheet table, "NVLink is not
# supported"; no Ada Lovelace part has an NVLink connector (L4, L20, L40, L40S, RTX 4090, RTX 6000
# Ada); T4 and T4G (Turing) and A10/A10G list PCIe Gen4 (T4: Gen3) as their only interconnect; the
# V100 PCIe card has no NVLink ports (its SXM2 sibling does)).
NO_NVLINK: Mapping[str, tuple[str, str]] = {
    "l4": ("NVIDIA L4", "https://www.nvidia.com/en-us/data-center/l4/"),
    "l20": ("NVIDIA L20 (Ada Lovelace)", "https://www.nvidia.com/en-us/data-center/l40s/"),
    "l40": ("NVIDIA L40", "https://www.nvidia.com/en-us/data-center/l40/"),
    "l40s": ("NVIDIA L40S", "https://www.nvidia.com/en-us/data-center/l40s/"),
    "rtx-4090": (
        "NVIDIA GeForce RTX 4090",
        "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/",
    ),
    "rtx-6000-ada": (
        "NVIDIA RTX 6000 Ada Generation",
        "https://www.nvidia.com/en-us/design-visualization/rtx-6000/",
    ),
    "t4": ("NVIDIA T4", "https://www.nvidia.com/en-us/data-center/tesla-t4/"),
    "t4g": ("NVIDIA T4G (Turing)", "https://www.nvidia.com/en-us/data-center/tesla-t4/"),
    "a10": ("NVIDIA A10", "https://www.nvidia.com/en-us/data-center/products/a10-gpu/"),
    "a10g": (
        "NVIDIA A10G (A10 variant)",
        "https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
    ),
    "v100-pcie-16gb": ("NVIDIA V100 PCIe", "https://www.nvidia.com/en-us/data-center/v100/"),
    "v100-pcie-32gb": ("NVIDIA V100 PCIe", "https://www.nvidia.com/en-us/data-center/v100/"),
}
# Board rules first: they can establish the link that the per-model rules below need.
RULES: tuple[Rule, ...] = (
    _hgx8(
        "hgx-a100-8",
        "NVIDIA HGX A100 8-GPU",
        NVSWITCH_PLATFORMS,
        {"a100-sxm-40gb", "a100-sxm-80gb"},
        3,
        600,
    ),
    _hgx8("hgx-h100-8", "NVIDIA HGX H100 8-GPU", NVSWITCH_PLATFORMS, {"h100-sxm"}, 4, 900),
    _hgx8("hgx-h200-8", "NVIDIA HGX H200 8-GPU", NVSWITCH_PLATFORMS, {"h200-sxm"}, 4, 900),
    _hgx8("hgx-b200-8", "NVIDIA HGX B200 8-GPU", NVSWITCH_PLATFORMS, {"b200"}, 5, 1800),
    _hgx8("hgx-b300-8", "NVIDIA HGX B300 8-GPU", NVSWITCH_PLATFORMS, {"b300"}, 5, 1800),
    Rule(
        "dgx1-v100-8",
        "NVIDIA DGX-1 (V100)",
        DGX1_V100_WHITEPAPER,
        frozenset({"v100-sxm2-16gb", "v100-sxm2-32gb"}),
        {
            "technology": "nvlink",
            "generation": 2,
            "topology": "hybrid-cube-mesh",
            "domain_size": 8,
            "bandwidth_gbytes_per_s": 300,
        },
        gpu_count=8,
    ),
    Rule(
        "gb200-nvl72",
        "NVIDIA GB200 NVL72",
        GB200_NVL72_PAGE,
        frozenset({"gb200"}),
        {
            "technology": "nvlink",
            "generation": 5,
            "topology": "nvswitch",
            "domain_size": 72,
            "bandwidth_gbytes_per_s": 1800,
        },
        rack="nvl72",
    ),
    Rule(
        "gb300-nvl72",
        "NVIDIA GB300 NVL72",
        GB300_NVL72_PAGE,
        frozenset({"gb300"}),
        {
            "technology": "nvlink",
            "generation": 5,
            "topology": "nvswitch",
            "domain_size": 72,
            "bandwidth_gbytes_per_s": 1800,
        },
        rack="nvl72",
    ),
    _oam8("oam-mi300x-8", "AMD Instinct MI300X 8-GPU", CDNA3_WHITEPAPER, "mi300x", 896),
    _oam8("oam-mi325x-8", "AMD Instinct MI325X 8-GPU", CDNA3_WHITEPAPER, "mi325x", 896),
    _oam8("oam-mi355x-8", "AMD Instinct MI355X 8-GPU", CDNA4_WHITEPAPER, "mi355x", 1075),
    Rule(
        "hgx-a100-16",
        "NVIDIA HGX A100 16-GPU",
        A100_PAGE,
        frozenset({"a100-sxm-40gb", "a100-sxm-80gb"}),
        {
            "technology": "nvlink",
            "generation": 3,
            "topology": "nvswitch",
            "domain_size": 16,
            "bandwidth_gbytes_per_s": 600,
        },
        gpu_count=16,
    ),
    # An SXM module sits on an HGX baseboard whose GPUs are wired to each other by NVLink, so
    # a slice of 2 or 4 of them has a link, of the model's generation (domain and topology of a
    # slice are the provider's to state).
    Rule(
        "sxm-nvlink",
        "NVIDIA HGX (SXM)",
        NVSWITCH_PLATFORMS,
        frozenset(SXM_GENERATIONS),
        {"technology": "nvlink"},
        min_gpus=2,
    ),
    # A 2- or 4-GPU slice of an A100-or-later HGX board is one NVLink domain of its GPUs (a slice
    # of a V100 hybrid cube-mesh need not be fully linked, so V100 is not included).
    *(
        Rule(
            f"hgx-slice-{count}",
            f"NVIDIA HGX {count}-GPU partition",
            FABRIC_MANAGER_GUIDE,
            frozenset(gpu for gpu in SXM_GENERATIONS if not gpu.startswith("v100")),
            {"domain_size": count},
            gpu_count=count,
            needs_link="nvlink",
        )
        for count in (2, 4)
    ),
    *(
        Rule(
            f"nvlink-generation-{gpu}",
            f"NVIDIA {name}",
            url,
            frozenset({gpu}),
            {"generation": generation},
            needs_link="nvlink",
        )
        for gpu, (name, url, generation) in SXM_GENERATIONS.items()
    ),
    # NVLink per GPU keyed by the GPU model (not the generation), wherever a link is known.
    _nvlink_of(
        "nvlink-a100-sxm",
        "NVIDIA A100 SXM",
        A100_PAGE,
        {"a100-sxm-40gb", "a100-sxm-80gb"},
        3,
        600,
    ),
    _nvlink_of("nvlink-h100-sxm", "NVIDIA H100 SXM", H100_PAGE, {"h100-sxm"}, 4, 900),
    _nvlink_of("nvlink-h200-sxm", "NVIDIA H200 SXM", H200_PAGE, {"h200-sxm"}, 4, 900),
    _nvlink_of("nvlink-b200", "NVIDIA B200", GB200_NVL72_PAGE, {"b200"}, 5, 1800),
    _nvlink_of("nvlink-b300", "NVIDIA B300", BLACKWELL_ULTRA_DATASHEET, {"b300"}, 5, 1800),
    _nvlink_of("nvlink-gb200", "NVIDIA GB200", GB200_NVL72_PAGE, {"gb200"}, 5, 1800),
    _nvlink_of("nvlink-gb300", "NVIDIA GB300", GB300_NVL72_PAGE, {"gb300"}, 5, 1800),
    # Last: GPUs with no NVLink at all meet only over PCIe, however many an instance holds.
    *(
        Rule(f"no-nvlink-{gpu}", system, url, frozenset({gpu}), {"technology": "none"}, min_gpus=2)
        for gpu, (system, url) in NO_NVLINK.items()
    ),
)
RULES_BY_SLUG = {rule.slug: rule for rule in RULES}


@dataclass
class Derived:
    """A GPU link after the rules: each field's value, basis and (for platform facts) rule."""

    values: dict[str, Any]
    basis: dict[str, str]
    rules: dict[str, str] = field(default_factory=dict)
    # (field, message): each stated fact a rule contradicts, once.
    conflicts: list[tuple[str, str]] = field(default_factory=list)


def derive_link(
    board: Board,
    stated: Mapping[str, Any],
    stated_basis: Mapping[str, str],
    gpu_basis: str = PROVIDER,
    locked: frozenset[str] | set[str] = frozenset(),
) -> Derived:
    """Fill the link fields no source states from the rules that apply to `board`.

    `stated` holds the fields a source states (unknown ones absent or None, technology
    "unknown" counting as absent); `stated_basis` their bases. A rule's fact takes the weakest of
    `platform`, the GPU's basis and the basis of any stated fact it needs. Locked fields are left
    as they are. A stated value that a rule contradicts is kept and reported in `conflicts`.
    """
    values = {
        name: stated.get(name) if is_known(stated.get(name)) else None for name in LINK_FIELDS
    }
    basis = {name: stated_basis[name] for name in LINK_FIELDS if values[name] is not None}
    derived = Derived(values, basis)
    if values["technology"] == "none":
        return derived  # a verified absence: no rule adds anything to it
    conflicting: set[str] = set()
    for rule in RULES:
        if not rule.applies(board, values["technology"] or "unknown", values["topology"] or ""):
            continue
        needs = [basis.get("technology")] if rule.needs_link else []
        needs += [basis.get("topology")] if rule.needs_topology else []
        fact_basis = weakest(PLATFORM, gpu_basis, *needs)
        for name, value in rule.facts.items():
            if values[name] is None:
                if name in locked:
                    continue
                values[name] = value
                basis[name] = fact_basis
                derived.rules[name] = rule.slug
            elif values[name] == value:
                # A third party confirming what the platform forces: the stronger basis holds.
                if fact_basis and _weaker(basis.get(name), fact_basis) and name not in locked:
                    basis[name] = fact_basis
                    derived.rules[name] = rule.slug
            elif name not in derived.rules and name not in conflicting:
                conflicting.add(name)  # one conflict per fact, from the first rule that applies
                derived.conflicts.append(
                    (
                        name,
                        f"{name} = {values[name]!r} contradicts the {rule.system} specification "
                        f"({rule.slug}: {value!r}, {rule.document_url})",
                    )
                )
    return derived


def stated_of(table: Any, fields: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    """A fixture table's known fields and the basis of each (its `basis`, or `basis_of`)."""
    values = {}
    for name in fields:
        value = getattr(table, name, None)
        values[name] = value if is_known(value) else None
    bases = {
        name: table.basis_of.get(name, table.basis)
        for name, value in values.items()
        if value is not None
    }
    return values, bases


def link_of_entry(entry: Any, locked: frozenset[str] | set[str] = frozenset()) -> Derived:
    """A fixture instance's GPU link after the rules (`entry` is an `InstanceIn`).

    Facts the fixture marks `platform` are the rules' to state: they are set aside, derived
    again, and reported as a conflict when no rule gives them or a rule gives another value.
    """
    values, bases = stated_of(entry.nvlink, LINK_FIELDS)
    claimed = {name: values.pop(name) for name, basis in list(bases.items()) if basis == PLATFORM}
    for name in claimed:
        bases.pop(name)
    # A provider that states a 72-GPU domain of GB200/GB300 trays names the NVL72 rack.
    rack = entry.rack or ("nvl72" if values.get("domain_size") == 72 else "")
    board = Board(entry.gpu, entry.gpu_count, rack)
    derived = derive_link(board, values, bases, entry.gpu_basis, locked)
    for name, value in claimed.items():
        if name not in derived.rules:
            derived.values[name] = value
            derived.basis[name] = weakest(PLATFORM, entry.gpu_basis)
            derived.conflicts.append(
                (name, f"{name} = {value!r} is marked platform but no platform rule gives it")
            )
        elif derived.values[name] != value:
            message = (
                f"{name} = {value!r} is marked platform but {derived.rules[name]} gives "
                f"{derived.values[name]!r}"
            )
            derived.conflicts.append((name, message))
    return derived


def fabric_of_entry(entry: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """A fixture instance's fabric facts and bases, `rdma` following from a known technology."""
    values, bases = stated_of(entry.fabric, FABRIC_BASIS_FIELDS)
    if values["rdma"] is None and values["technology"] is not None:
        values["rdma"] = rdma_of(values["technology"])
        bases["rdma"] = bases["technology"]
    # GPUDirect RDMA needs an RDMA fabric: over plain Ethernet or TCPX it is known to be absent.
    if values["gpudirect_rdma"] is None and values["rdma"] is False:
        values["gpudirect_rdma"] = False
        bases["gpudirect_rdma"] = bases["rdma"]
    return values, bases


def rdma_of(technology: str) -> bool | None:
    """Whether a fabric technology is RDMA: None when the technology is unknown."""
    if not is_known(technology):
        return None
    return technology in RDMA_FABRICS
