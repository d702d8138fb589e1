"""The explainer's diagrams as server-rendered SVG: no script, no inline style (the CSP forbids
both); shapes, drawn with `offerings.web.svg.Pen`, carry classes styled in
static/css/content.css, labels go through gettext and `escape`, and every bar length comes from
`offerings.content.facts`."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from offerings.content.facts import stated_figures
from offerings.content.markup import format_figure
from offerings.web.svg import Pen

PEN = Pen("g")  # coordinates without trailing zeros


def _svg(slug: str, width: int, height: int, title: str, desc: str, body: list[str]) -> SafeString:
    head = (
        f'<svg class="diagram" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="{slug}-title {slug}-desc" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{slug}-title">{escape(title)}</title>'
        f'<desc id="{slug}-desc">{escape(desc)}</desc>'
    )
    return mark_safe(head + "".join(body) + "</svg>")  # every text above is escaped


def cluster_svg() -> SafeString:
    """Two 8-GPU nodes: NVLink through NVSwitch inside each, one NIC per GPU to the fabric."""
    body: list[str] = []
    fabric_y = 268
    for index, left in enumerate((10, 370)):
        body.append(PEN.rect(left, 10, 340, 218, "node"))
        body.append(PEN.text(left + 12, 30, _("Node %(n)s") % {"n": index + 1}, "title", "start"))
        switch_x, switch_y = left + 24, 110
        body.append(PEN.rect(switch_x, switch_y, 292, 22, "switch"))
        body.append(PEN.text(left + 170, switch_y + 15, _("NVSwitch (NVLink)"), "label on-dark"))
        for row, y in enumerate((50, 150)):
            for col in range(4):
                x = left + 24 + col * 76
                cx = x + 28
                body.append(
                    PEN.line(cx, y + 36 if row == 0 else y, cx, 110 if row == 0 else 132, "nvlink")
                )
                body.append(PEN.rect(x, y, 56, 36, "gpu"))
                body.append(PEN.text(cx, y + 23, "GPU"))
        for nic in range(8):
            x = left + 24 + nic * 37
            body.append(PEN.line(x + 13, 214, x + 13, fabric_y, "fabric-line"))
            body.append(PEN.rect(x, 200, 26, 14, "nic"))
        body.append(PEN.text(left + 332, 224, _("NICs"), "small", "end"))
    body.append(PEN.rect(10, fabric_y, 700, 28, "fabric"))
    body.append(
        PEN.text(
            360,
            fabric_y + 19,
            _("InfiniBand or another RDMA fabric: between nodes"),
            "label on-dark",
        )
    )
    return _svg(
        "cluster",
        720,
        306,
        _("Two nodes: NVLink inside each, the fabric between them"),
        _(
            "Each node holds eight GPUs joined through an NVSwitch. Each GPU has its own network "
            "card, and the cards of both nodes connect to the same fabric."
        ),
        body,
    )


def topologies_svg() -> SafeString:
    """Three ways four GPUs are joined: PCIe only, bridged pairs, one NVSwitch domain."""
    panels = (
        ("pcie", _("PCIe only")),
        ("bridge", _("Bridged pairs")),
        ("switch", _("NVSwitch")),
    )
    body: list[str] = []
    for index, (kind, title) in enumerate(panels):
        left = 10 + index * 240
        body.append(PEN.rect(left, 10, 220, 190, "node"))
        body.append(PEN.text(left + 110, 32, title, "title"))
        xs = [left + 14 + i * 50 for i in range(4)]
        if kind == "switch":
            body.append(PEN.rect(left + 14, 70, 192, 20, "switch"))
            body.append(PEN.text(left + 110, 84, "NVSwitch", "small on-dark"))
            for x in xs:
                body.append(PEN.line(x + 21, 90, x + 21, 116, "nvlink"))
        if kind == "bridge":
            for x in (xs[0], xs[2]):
                body.append(PEN.rect(x + 8, 104, 76, 12, "bridge"))
            body.append(PEN.text(left + 110, 94, _("NVLink bridges"), "small"))
        body.append(PEN.rect(left + 14, 170, 192, 18, "pcie-switch"))
        body.append(PEN.text(left + 110, 183, _("PCIe switch / CPU"), "small"))
        for x in xs:
            body.append(PEN.line(x + 21, 152, x + 21, 170, "pcie-line"))
            body.append(PEN.rect(x, 116, 42, 36, "gpu"))
            body.append(PEN.text(x + 21, 139, "GPU"))
    return _svg(
        "topologies",
        730,
        210,
        _("Three ways to join four GPUs"),
        _(
            "PCIe only: every GPU talks to the others through the PCIe switch or the CPU. "
            "Bridged pairs: two GPUs share a fast bridge, other pairs still go through PCIe. "
            "NVSwitch: every GPU reaches every other at full NVLink speed."
        ),
        body,
    )


BANDWIDTH_ROWS = (
    ("PCIe 4.0 x16", "pcie4", "pcie"),
    ("PCIe 5.0 x16", "pcie5", "pcie"),
    ("NVLink 3 · A100", "nvlink3", "nvlink"),
    ("NVLink 4 · H100, H200", "nvlink4", "nvlink"),
    ("NVLink 5 · B200, GB200", "nvlink5", "nvlink"),
)


def bandwidth_svg() -> SafeString:
    """Bars of GPU-to-GPU bandwidth per GPU, both directions, drawn to scale from the facts."""
    figures = stated_figures()
    widest = max(figures[name].value for _label, name, _kind in BANDWIDTH_ROWS)
    body: list[str] = []
    for index, (label, name, kind) in enumerate(BANDWIDTH_ROWS):
        y = 12 + index * 36
        width = 400 * figures[name].value / widest
        body.append(PEN.text(190, y + 17, label, "label", "end"))
        body.append(PEN.rect(200, y, max(width, 2), 24, f"bar-{kind}"))
        body.append(PEN.text(208 + width, y + 17, format_figure(figures[name]), "label", "start"))
    return _svg(
        "bandwidth",
        720,
        12 + len(BANDWIDTH_ROWS) * 36,
        _("GPU-to-GPU bandwidth per GPU, both directions added"),
        _("PCIe 4.0 and 5.0 x16 slots against NVLink 3, 4 and 5, drawn to scale."),
        body,
    )


def rails_svg() -> SafeString:
    """Rail-optimised wiring: GPU n of every node reaches the same leaf switch."""
    lines: list[str] = []
    boxes: list[str] = []
    rails = 4
    for node in range(3):
        left = 20 + node * 236
        boxes.append(PEN.rect(left, 10, 210, 70, "node"))
        boxes.append(PEN.text(left + 10, 26, _("Node %(n)s") % {"n": node + 1}, "small", "start"))
        for gpu in range(rails):
            x = left + 12 + gpu * 49
            boxes.append(PEN.rect(x, 36, 40, 32, "gpu"))
            boxes.append(PEN.text(x + 20, 57, f"GPU{gpu}", "small"))
            leaf_x = 40 + gpu * 170 + 50
            lines.append(PEN.line(x + 20, 68, leaf_x, 140, f"fabric-line rail{gpu}"))
    body = lines + boxes  # lines first, so the boxes sit on top of them
    for gpu in range(rails):
        x = 40 + gpu * 170
        body.append(PEN.rect(x, 140, 100, 26, f"leaf rail{gpu}"))
        body.append(PEN.text(x + 50, 157, _("Rail %(n)s leaf") % {"n": gpu}, "small on-dark"))
        body.append(PEN.line(x + 50, 166, x + 50, 196, "fabric-line"))
    body.append(PEN.rect(20, 196, 680, 24, "fabric"))
    body.append(PEN.text(360, 212, _("Spine switches"), "small on-dark"))
    return _svg(
        "rails",
        720,
        230,
        _("A rail-optimised fabric"),
        _(
            "The first GPU of every node connects to the first leaf switch, the second GPU to "
            "the second, and so on; the leaf switches meet at the spine."
        ),
        body,
    )
