"""The comparison table: 2 to 4 instance types fact by fact, with what differs marked.

Every line says whether its cells differ; price lines also say which price is the lowest and
how far each other one is above it, so $10.98 against $12.29 (or a price against none) is never
left for the reader to spot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from django.utils.translation import gettext_lazy as _

from offerings.models import InstanceType


def _price_kind(row: InstanceType) -> str | None:
    offer = row.row_offer
    if offer is None:
        return None
    kind = str(offer.get_kind_display())
    if offer.term_months:
        kind = _("%(kind)s, %(months)s months") % {"kind": kind, "months": offer.term_months}
    return f"{kind} · {offer.region.code}"


def _price_date(row: InstanceType) -> str | None:
    offer = row.row_offer
    if offer is None:
        return None
    day = f"{offer.observed_at:%Y-%m-%d}" if offer.observed_at else str(_("date unknown"))
    return _("%(day)s (stale)") % {"day": day} if offer.is_stale() else day


Fact = tuple[Any, Any, Callable[[InstanceType], Any]]  # (label, explanation, value getter)

HEAD: list[Fact] = [
    (_("Provider"), "", lambda r: r.provider.local_name),
    (_("GPUs"), "", lambda r: f"{r.gpu_count} × {r.gpu.name}"),
]
# Under the two price lines: what the price is and how old.
ABOUT_PRICE: list[Fact] = [
    (_("Price kind and region"), "", _price_kind),
    (
        _("Price observed"),
        _("The day the price was read; a stale or undated price may have changed."),
        _price_date,
    ),
]
FACTS: list[Fact] = [
    (_("GPU memory per instance (GiB)"), "", lambda r: r.gpu_count * r.gpu.memory_gib),
    (_("vCPUs"), "", lambda r: r.vcpus),
    (_("RAM (GiB)"), "", lambda r: r.ram_gib),
    (
        _("GPU-to-GPU link"),
        _("NVLink or Infinity Fabric moves data between GPUs of one node without PCIe."),
        lambda r: r.gpu_link.get_technology_display(),
    ),
    (
        _("Topology"),
        _("NVSwitch links every GPU to every other; bridges only join pairs."),
        lambda r: r.gpu_link.get_topology_display() if r.gpu_link.topology else None,
    ),
    (
        _("GPUs per NVLink domain"),
        _("How many GPUs share one NVLink domain; 72 on a GB200 NVL72 rack."),
        lambda r: r.gpu_link.domain_size,
    ),
    (
        _("NVLink GB/s per GPU"),
        _("Both directions added, as vendors quote it."),
        lambda r: r.gpu_link.bandwidth_gbytes_per_s,
    ),
    (
        _("Inter-node fabric"),
        _("What a multi-node job's collectives cross; EFA, RoCE and eRDMA are RDMA, TCPX is not."),
        lambda r: r.fabric.get_technology_display(),
    ),
    (
        _("Back-end Gb/s per node"),
        _("Sum of the GPU-facing NICs; front-end NICs are not counted."),
        lambda r: (
            _("none: general network only")
            if r.fabric.technology == "ethernet"
            else r.fabric.bandwidth_gbits_per_s
        ),
    ),
    (_("Back-end NICs"), "", lambda r: r.fabric.nics),
    (
        _("General network Gb/s"),
        _(
            "VPC, storage and internet traffic; plain-Ethernet nodes also talk to each other over it."
        ),
        lambda r: r.fabric.network_gbits_per_s,
    ),
    (
        _("GPUDirect RDMA"),
        _("NICs read and write GPU memory directly, without a copy through the host."),
        lambda r: r.fabric.gpudirect_rdma,
    ),
    (
        _("Self-serve multi-node"),
        _("Several nodes on one fabric can be booked without talking to sales."),
        lambda r: r.fabric.multi_node,
    ),
    (_("Largest self-serve cluster (nodes)"), "", lambda r: r.fabric.max_nodes),
]

CENT = Decimal("0.01")


@dataclass
class PriceCell:
    value: Decimal | None
    row: InstanceType
    lowest: bool = False
    above: Decimal | None = None  # how much more than the lowest price
    above_percent: int | None = None


@dataclass
class Line:
    label: Any
    explanation: Any
    cells: list
    differs: bool
    is_price: bool = False
    per_gpu_hour: bool = False  # shown to three significant figures below one unit


def _same(value: Any) -> str:
    """One spelling per value: 2048.0 and 2048 GiB are the same amount, None is its own."""
    if isinstance(value, Decimal | int | float) and not isinstance(value, bool):
        return format(Decimal(str(value)).normalize(), "f")
    return repr(value) if value is None or isinstance(value, bool) else str(value)


def _price_line(
    label, explanation, rows: list[InstanceType], attribute: str, per_gpu_hour: bool = False
) -> Line:
    cells = [PriceCell(getattr(row, attribute, None), row) for row in rows]
    priced = [c.value for c in cells if c.value is not None]
    differs = len({_same(c.value) for c in cells}) > 1
    if differs and len(priced) >= 2:
        low = min(priced)
        for cell in cells:
            if cell.value is None:
                continue
            if cell.value == low:
                cell.lowest = True
            else:
                cell.above = cell.value - low
                if not per_gpu_hour:
                    cell.above = cell.above.quantize(CENT, rounding=ROUND_HALF_EVEN)
                if low > 0:
                    cell.above_percent = round((cell.value - low) / low * 100)
    return Line(label, explanation, cells, differs, is_price=True, per_gpu_hour=per_gpu_hour)


def _fact_lines(facts: list[Fact], rows: list[InstanceType]) -> list[Line]:
    lines = []
    for label, explanation, getter in facts:
        cells = [getter(row) for row in rows]
        lines.append(Line(label, explanation, cells, len({_same(c) for c in cells}) > 1))
    return lines


def compare_table(rows: list[InstanceType], currency: str = "USD") -> list[Line]:
    """What the rows are, their prices (in `currency`), then the interconnect facts; each line
    says whether its cells differ. Rows need `row_offer` and `with_display_prices` in
    `currency`."""
    named = {"currency": currency}
    prices = [
        _price_line(
            _("Price per GPU-hour (%(currency)s)") % named,
            _("Cheapest current price, on-demand preferred."),
            rows,
            "shown_per_gpu_hour",
            per_gpu_hour=True,
        ),
        _price_line(_("Price per hour (%(currency)s)") % named, "", rows, "shown_per_hour"),
    ]
    return (
        _fact_lines(HEAD, rows) + prices + _fact_lines(ABOUT_PRICE, rows) + _fact_lines(FACTS, rows)
    )
