"""How much of the catalog is known: per interconnect fact, per provider, split by basis.

`lint_catalog --coverage` computes it from the fixtures (after the platform rules), the data page
(`/about/data/`) from the database; both go through `coverage()`, so they print the same table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef
from django.utils.translation import gettext_lazy as _

from offerings.models import InstanceType, Offer
from offerings.platform import BASES, FABRIC_FIELDS, LINK_FIELDS, NETWORK_FIELDS, is_known
from offerings.table.parameters import NVLINK_TECHNOLOGIES


@dataclass(frozen=True)
class Facts:
    """One visible instance type's interconnect facts and their bases."""

    provider: str
    link: Mapping[str, Any]
    link_basis: Mapping[str, str]
    fabric: Mapping[str, Any]
    fabric_basis: Mapping[str, str]
    priced: bool = False  # has a price: a fixture price, or a current offer in the database


@dataclass(frozen=True)
class Measure:
    """One coverage figure: which fact, among which types, and the share the catalog aims at."""

    key: str
    label: str
    part: str  # "link", "fabric" or "price"
    name: str  # the field
    target: float | None = None  # None: shown, with no aim of its own
    among_linked: bool = False  # counted only among types with a GPU-to-GPU link
    among_back_ends: bool = False  # counted only among types with a back-end fabric known

    @property
    def has_basis(self) -> bool:
        """Whether its known values are counted by basis: a price has a source, not a basis."""
        return self.part != "price"


# The aims of issue 30: the GPU link of 95% of types, the fabric technology of 85%, a price for
# 75%. The back-end's Gb/s is counted only where a back-end is known: plain Ethernet has none.
MEASURES = (
    Measure("nvlink", _("NVLink technology (or verified none)"), "link", "technology", 0.95),
    Measure(
        "domain", _("NVLink domain size, of those with a link"), "link", "domain_size", None, True
    ),
    Measure("fabric", _("Fabric technology"), "fabric", "technology", 0.85),
    Measure(
        "fabric_gbps",
        _("Back-end Gb/s, of those with a back-end fabric"),
        "fabric",
        "bandwidth_gbits_per_s",
        among_back_ends=True,
    ),
    Measure("network", _("General network Gb/s"), "fabric", "network_gbits_per_s"),
    Measure("multi_node", _("Multi-node booking"), "fabric", "multi_node"),
    Measure("gpudirect", _("GPUDirect RDMA"), "fabric", "gpudirect_rdma"),
    Measure("priced", _("Priced"), "price", "priced", 0.75),
)


def meets(measure: Measure, cell: Cell) -> bool:
    return measure.target is None or (cell.share or 0.0) >= measure.target


@dataclass
class Cell:
    """Known count out of a total, with the known ones counted by basis."""

    known: int = 0
    total: int = 0
    by_basis: Counter = field(default_factory=Counter)

    @property
    def share(self) -> float | None:
        return self.known / self.total if self.total else None


def coverage(rows: Iterable[Facts]) -> tuple[dict[str, Cell], dict[str, dict[str, Cell]]]:
    """The overall cell of each measure, and the same per provider."""
    overall = {m.key: Cell() for m in MEASURES}
    per_provider: dict[str, dict[str, Cell]] = {}
    for row in rows:
        cells = per_provider.setdefault(row.provider, {m.key: Cell() for m in MEASURES})
        linked = row.link.get("technology") in NVLINK_TECHNOLOGIES
        back_end = row.fabric.get("technology") not in (None, "unknown", "ethernet")
        for measure in MEASURES:
            if (measure.among_linked and not linked) or (measure.among_back_ends and not back_end):
                continue
            if not measure.has_basis:
                known, basis = row.priced, None
            else:
                values = row.link if measure.part == "link" else row.fabric
                bases = row.link_basis if measure.part == "link" else row.fabric_basis
                known, basis = is_known(values.get(measure.name)), bases.get(measure.name)
            for cell in (overall[measure.key], cells[measure.key]):
                cell.total += 1
                if known:
                    cell.known += 1
                    if measure.has_basis:
                        cell.by_basis[basis or "none given"] += 1
    return overall, dict(sorted(per_provider.items()))


def format_table(overall: Mapping[str, Cell], per_provider: Mapping[str, Mapping[str, Cell]]):
    """Plain-text lines of the coverage table (the lint's `--coverage` output)."""
    lines = [f"{'fact':<48} {'known':>12} {'target':>7}   " + "  ".join(BASES)]
    failing = []
    for measure in MEASURES:
        cell = overall[measure.key]
        share = cell.share or 0.0
        mark = "" if meets(measure, cell) else "  < target"
        if mark:
            failing.append(measure.key)
        by_basis = "  ".join(f"{cell.by_basis.get(b, 0):>{len(b)}}" for b in BASES)
        target = f"{measure.target:>6.0%}" if measure.target is not None else f"{'-':>6}"
        lines.append(
            f"{measure.label!s:<48} {cell.known:>4}/{cell.total:<4}{share:>4.0%} "
            f"{target}   {by_basis}{mark}"
        )
    lines.append("")
    header = f"{'provider':<12}" + "".join(f"{m.key:>14}" for m in MEASURES)
    lines.append(header)
    for provider, cells in per_provider.items():
        row = f"{provider:<12}"
        for measure in MEASURES:
            cell = cells[measure.key]
            row += f"{(f'{cell.known}/{cell.total}' if cell.total else '-'):>14}"
        lines.append(row)
    return lines, failing


def catalog_facts() -> list[Facts]:
    """Every visible instance type's stored facts (the data page's coverage table reads these)."""
    rows = []
    current = Offer.objects.filter(instance=OuterRef("pk"), is_active=True)
    types = (
        InstanceType.objects.visible()
        .select_related("provider", "gpu_link", "fabric")
        .annotate(priced=Exists(current))
    )
    for instance in types.order_by("provider__slug", "slug"):
        link = getattr(instance, "gpu_link", None)
        fabric = getattr(instance, "fabric", None)
        rows.append(
            Facts(
                instance.provider.slug,
                {name: getattr(link, name, None) for name in LINK_FIELDS},
                link.basis if link else {},
                {name: getattr(fabric, name, None) for name in FABRIC_FIELDS + NETWORK_FIELDS},
                fabric.basis if fabric else {},
                instance.priced,
            )
        )
    return rows


def table_rows(overall: Mapping[str, Cell]) -> list[dict]:
    """The coverage table for a page: one row per measure, counts by basis, against its target."""
    rows = []
    for measure in MEASURES:
        cell = overall[measure.key]
        rows.append(
            {
                "label": measure.label,
                "known": cell.known,
                "total": cell.total,
                "share": cell.share,
                "target": measure.target,
                "meets": meets(measure, cell),
                "by_basis": [cell.by_basis.get(basis, 0) for basis in BASES],
                "has_basis": measure.has_basis,
            }
        )
    return rows
