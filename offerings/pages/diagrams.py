"""Server-rendered SVG: the node's topology and an offer's price history.

Everything is drawn from the catalog's data; nothing that is unknown is drawn as if it were
known (an unknown link is labelled so). Shapes are drawn with `offerings.web.svg.Pen`; text goes
through `escape`; no script, no inline CSS (the CSP forbids both): presentation comes from
classes in static/css/site.css.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from offerings.models import InstanceType, LinkTechnology, LinkTopology
from offerings.money import shown_gpu_hour_price, shown_price
from offerings.web.svg import Pen

GPU_W, GPU_H, GPU_GAP = 74, 40, 12
NIC_W, NIC_H, NIC_GAP = 40, 22, 5
PEN = Pen(".1f")  # coordinates to one decimal place


@dataclass(frozen=True)
class Layout:
    """A drawing's width and how many boxes a row holds: the wide one for screens, the narrow
    one (rows of four GPUs, shorter captions) for phones, so neither is shrunk to fit."""

    width: int
    gpus_per_row: int
    nics_per_row: int
    narrow: bool = False
    suffix: str = ""  # keeps the ids of two drawings on one page apart


WIDE = Layout(760, 8, 14)
NARROW = Layout(360, 4, 7, narrow=True, suffix="-narrow")


def _row_positions(
    count: int, per_row: int, width: float, gap: float, top: float, height: float, total: float
):
    """(x, y) of each box, rows centred in a drawing `total` wide."""
    positions = []
    for index in range(count):
        row, col = divmod(index, per_row)
        in_row = min(per_row, count - row * per_row)
        span = in_row * width + (in_row - 1) * gap
        left = (total - span) / 2
        positions.append((left + col * (width + gap), top + row * (height + gap + 14)))
    return positions


def topology_svg(instance: InstanceType, layout: Layout = WIDE) -> SafeString:
    """The node: its GPUs, how they are linked, its NICs and the fabric they reach."""
    width = layout.width
    narrow = layout.narrow
    link = getattr(instance, "gpu_link", None)
    fabric = getattr(instance, "fabric", None)
    technology = link.technology if link else LinkTechnology.UNKNOWN
    topology = link.topology if link else ""
    count = instance.gpu_count
    parts: list[str] = []

    gpu_top = 58
    gpus = _row_positions(count, layout.gpus_per_row, GPU_W, GPU_GAP, gpu_top, GPU_H, width)
    gpu_bottom = gpus[-1][1] + GPU_H
    bar_y = gpu_bottom + 34
    centres = [(x + GPU_W / 2, y) for x, y in gpus]

    # GPU-to-GPU link, drawn first so the boxes sit on top of the lines.
    linked = technology in (LinkTechnology.NVLINK, LinkTechnology.INFINITY_FABRIC)
    name = "Infinity Fabric" if technology == LinkTechnology.INFINITY_FABRIC else "NVLink"
    if linked and topology == LinkTopology.NVSWITCH:
        for cx, y in centres:
            parts.append(PEN.line(cx, y + GPU_H, cx, bar_y, "nvlink"))
        parts.append(PEN.rect(40, bar_y, width - 80, 26, "switch"))
        label = (
            _("NVSwitch: all-to-all at full speed")
            if narrow
            else _("NVSwitch: every GPU reaches every other at full NVLink bandwidth")
        )
        if link.domain_size and link.domain_size > count:
            across = (
                _("NVLink Switch: %(n)s GPUs on %(nodes)s nodes")
                if narrow
                else _("NVLink Switch: one domain of %(n)s GPUs across %(nodes)s nodes")
            )
            label = across % {"n": link.domain_size, "nodes": link.domain_size // count}
        parts.append(PEN.text(width / 2, bar_y + 17, label, "label on-dark"))
    elif linked and topology == LinkTopology.BRIDGE:
        for index in range(0, count - 1, 2):
            (x1, y1), (x2, _y2) = gpus[index], gpus[index + 1]
            parts.append(PEN.line(x1 + GPU_W, y1 + GPU_H / 2, x2, y1 + GPU_H / 2, "nvlink bridge"))
        parts.append(
            PEN.text(
                width / 2, gpu_top - 10, _("%(name)s bridges join GPUs in pairs") % {"name": name}
            )
        )
    elif linked and topology in (LinkTopology.MESH, LinkTopology.HYBRID_CUBE_MESH):
        step = 1 if topology == LinkTopology.MESH else None
        for a in range(count):
            for b in range(a + 1, count):
                if step is None and b - a not in (1, 3, 4) and not (a % 4 == 0 and b - a == 3):
                    continue
                (ax, ay), (bx, by) = centres[a], centres[b]
                if ay != by:
                    parts.append(PEN.line(ax, ay + GPU_H, bx, by, "nvlink mesh"))
                    continue
                lift = 10 + 6 * (b - a)
                parts.append(
                    f'<path d="M{ax:.1f},{ay:.1f} Q{(ax + bx) / 2:.1f},{ay - lift:.1f} '
                    f'{bx:.1f},{by:.1f}" class="nvlink mesh"/>'
                )
        if topology == LinkTopology.MESH:
            mesh = (
                _("%(name)s: direct links, no switch")
                if narrow
                else _("%(name)s: every GPU linked directly to every other, no switch")
            )
            caption = mesh % {"name": name}
        else:
            caption = (
                _("NVLink hybrid cube-mesh (partial)")
                if narrow
                else _("NVLink hybrid cube-mesh: not every pair is linked directly")
            )
        parts.append(PEN.text(width / 2, 16, caption))
    elif linked:
        parts.append(PEN.text(width / 2, 16, _("%(name)s, topology unknown") % {"name": name}))

    # PCIe and the host: every GPU and NIC hangs off it.
    host_y = bar_y + (44 if linked and topology == LinkTopology.NVSWITCH else 0)
    for cx, y in centres:
        if not (linked and topology == LinkTopology.NVSWITCH):
            parts.append(PEN.line(cx, y + GPU_H, cx, host_y, "pcie"))
    parts.append(PEN.rect(40, host_y, width - 80, 22, "host"))
    host_label = _("CPU and PCIe")
    if technology == LinkTechnology.NONE:
        host_label = (
            _("PCIe only, through the CPU")
            if narrow
            else _("PCIe only: GPU-to-GPU traffic crosses PCIe and the CPU")
        )
    elif technology == LinkTechnology.UNKNOWN:
        host_label = (
            _("PCIe (NVLink unknown)")
            if narrow
            else _("PCIe (whether the GPUs have NVLink too is unknown)")
        )
    parts.append(PEN.text(width / 2, host_y + 15, host_label))

    for index, (x, y) in enumerate(gpus):
        parts.append(PEN.rect(x, y, GPU_W, GPU_H, "gpu"))
        parts.append(PEN.text(x + GPU_W / 2, y + 17, f"GPU {index}", "label on-dark"))
        # The memory, which fits the box (the GPU's name is in the page's heading).
        memory = f"{instance.gpu.memory_gib} GiB"
        parts.append(PEN.text(x + GPU_W / 2, y + 32, memory, "small on-dark"))

    # NICs and the fabric.
    nic_top = host_y + 50
    nic_count = fabric.nics if fabric and fabric.nics else 0
    fabric_name = fabric.technology_label if fabric else _("Unknown")
    if nic_count:
        nics = _row_positions(nic_count, layout.nics_per_row, NIC_W, NIC_GAP, nic_top, NIC_H, width)
        for index, (x, y) in enumerate(nics):
            parts.append(PEN.line(x + NIC_W / 2, host_y + 22, x + NIC_W / 2, y, "pcie"))
            parts.append(PEN.rect(x, y, NIC_W, NIC_H, "nic"))
            parts.append(PEN.text(x + NIC_W / 2, y + 15, f"NIC {index}", "small"))
        fabric_y = nics[-1][1] + NIC_H + 30
    else:
        parts.append(PEN.rect(width / 2 - 90, nic_top, 180, NIC_H, "nic unknown"))
        parts.append(PEN.text(width / 2, nic_top + 15, _("NICs: number unknown"), "small"))
        parts.append(PEN.line(width / 2, host_y + 22, width / 2, nic_top, "pcie"))
        fabric_y = nic_top + NIC_H + 30
    parts.append(PEN.line(width / 2, fabric_y - 30 + NIC_H, width / 2, fabric_y, "fabric-link"))
    fabric_w = min(400, width - 40)
    parts.append(PEN.rect((width - fabric_w) / 2, fabric_y, fabric_w, 30, "fabric"))
    if fabric and fabric.bandwidth_gbits_per_s:
        bandwidth = _("%(gbps)s Gb/s per node") % {"gbps": fabric.bandwidth_gbits_per_s}
    elif fabric and fabric.technology == "ethernet" and fabric.network_gbits_per_s:
        # No back-end: the nodes talk over the general network, whose figure is known.
        bandwidth = _("general network %(n)s Gb/s") % {"n": fabric.network_gbits_per_s}
    else:
        bandwidth = _("bandwidth unknown")
    parts.append(PEN.text(width / 2, fabric_y + 19, f"{fabric_name} · {bandwidth}"))
    height = fabric_y + 40

    title = _("Topology of %(name)s") % {"name": instance.name}
    description = _("%(count)s GPUs, %(link)s, %(nics)s NICs to %(fabric)s") % {
        "count": count,
        "link": link.get_technology_display() if link else _("unknown link"),
        "nics": nic_count or _("an unknown number of"),
        "fabric": fabric_name,
    }
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height:.0f}" '
        f'class="topology{" narrow" if narrow else ""}" role="img" '
        f'aria-labelledby="topo-title{layout.suffix} topo-desc{layout.suffix}">'
        f'<title id="topo-title{layout.suffix}">{escape(title)}</title>'
        f'<desc id="topo-desc{layout.suffix}">{escape(description)}</desc>{"".join(parts)}</svg>'
    )
    return mark_safe(svg)  # every interpolated string above is escaped


@dataclass(frozen=True)
class ChartFrame:
    """The plot area of a price chart: its value range (padded, never below zero) and time span,
    with the axes and their labels drawn once for every chart."""

    low: float
    high: float
    start: date | datetime
    end: date | datetime
    width: int = 640
    height: int = 200
    left: int = 64
    right: int = 16
    top: int = 16
    bottom: int = 36

    @classmethod
    def around(cls, values: Sequence[float], start, end) -> ChartFrame:
        low, high = min(values), max(values)
        if low == high:
            low, high = low * 0.9, high * 1.1 or 1.0
        pad = (high - low) * 0.1
        return cls(max(0.0, low - pad), high + pad, start, end)

    def x(self, moment) -> float:
        span = max((self.end - self.start).total_seconds(), 1.0)
        return self.left + (moment - self.start).total_seconds() / span * (
            self.width - self.left - self.right
        )

    def y(self, value: float) -> float:
        return self.top + (self.high - value) / (self.high - self.low) * (
            self.height - self.top - self.bottom
        )

    def axes(self, currency: str) -> list[str]:
        bottom = self.height - self.bottom
        return [
            PEN.line(self.left, self.top, self.left, bottom, "axis"),
            PEN.line(self.left, bottom, self.width - self.right, bottom, "axis"),
            PEN.text(self.left - 6, self.y(self.high) + 4, f"{self.high:,.2f}", "small", "end"),
            PEN.text(self.left - 6, self.y(self.low) + 4, f"{self.low:,.2f}", "small", "end"),
            PEN.text(self.left, self.height - 12, f"{self.start:%Y-%m-%d}", "small", "start"),
            PEN.text(
                self.width - self.right, self.height - 12, f"{self.end:%Y-%m-%d}", "small", "end"
            ),
            PEN.text(self.left + 6, self.top + 10, currency, "small", "start"),
        ]

    def svg(self, title: str, parts: list[str]) -> SafeString:
        return mark_safe(  # every interpolated string is escaped or numeric
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
            f'class="price-chart" role="img" aria-label="{escape(title)}">'
            f"<title>{escape(title)}</title>{''.join(parts)}</svg>"
        )


def _point(frame: ChartFrame, moment, value: Decimal, label: str) -> str:
    return (
        f'<circle cx="{frame.x(moment):.1f}" cy="{frame.y(float(value)):.1f}" r="3" '
        f'class="price-point"><title>{escape(label)}</title></circle>'
    )


def price_history_svg(
    points: Sequence[tuple[datetime, Decimal]], currency: str, now: datetime
) -> SafeString:
    """A step chart of one offer's price per hour over time, up to now."""
    if not points:
        return mark_safe("")
    points = sorted(points)
    frame = ChartFrame.around([float(p) for _, p in points], points[0][0], max(now, points[-1][0]))
    first_moment, first_price = points[0]
    path = [f"M{frame.x(first_moment):.1f},{frame.y(float(first_price)):.1f}"]
    for moment, price in points[1:]:  # a step: the old price held
        path.append(f"H{frame.x(moment):.1f} V{frame.y(float(price)):.1f}")
    path.append(f"H{frame.x(frame.end):.1f}")
    parts = [*frame.axes(currency), f'<path d="{" ".join(path)}" class="price-line"/>']
    for moment, price in points:
        label = f"{moment:%Y-%m-%d}: {shown_price(price, currency)}"
        parts.append(_point(frame, moment, price, label))
    return frame.svg(_("Price history, %(currency)s per hour") % {"currency": currency}, parts)


def price_index_svg(points: Sequence[tuple[date, Decimal, int]], currency: str) -> SafeString:
    """A line of weekly medians per GPU-hour (`points`: week, median, offers), oldest first."""
    if len(points) < 2:
        return mark_safe("")
    frame = ChartFrame.around([float(m) for _, m, _ in points], points[0][0], points[-1][0])
    line = " ".join(
        f"{'M' if i == 0 else 'L'}{frame.x(day):.1f},{frame.y(float(median)):.1f}"
        for i, (day, median, _) in enumerate(points)
    )
    parts = [*frame.axes(currency), f'<path d="{line}" class="price-line"/>']
    for day, median, offers in points:
        label = _("Week of %(day)s: %(price)s per GPU-hour, median of %(offers)s offers") % {
            "day": f"{day:%Y-%m-%d}",
            "price": shown_gpu_hour_price(median, currency),
            "offers": offers,
        }
        parts.append(_point(frame, day, median, label))
    title = _("Price index, median %(currency)s per GPU-hour by week") % {"currency": currency}
    return frame.svg(title, parts)
