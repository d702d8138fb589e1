"""The SVG shapes every server-rendered diagram is drawn with: text, rectangles and lines.

The node topology on the detail page (`offerings.pages.diagrams`) and the explainer's diagrams
(`offerings.content.diagrams`) both draw with a `Pen`. Text goes through `escape`; shapes carry
classes and no inline style (the CSP forbids it), so presentation stays in the stylesheets.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import escape


@dataclass(frozen=True)
class Pen:
    """Writes shapes with every coordinate in one format spec: `.1f`, or `g` to drop zeros."""

    number: str

    def text(
        self, x: float, y: float, text: str, cls: str = "label", anchor: str = "middle"
    ) -> str:
        n = self.number
        return (
            f'<text x="{x:{n}}" y="{y:{n}}" class="{cls}" text-anchor="{anchor}">'
            f"{escape(text)}</text>"
        )

    def rect(self, x: float, y: float, w: float, h: float, cls: str) -> str:
        n = self.number
        return (
            f'<rect x="{x:{n}}" y="{y:{n}}" width="{w:{n}}" height="{h:{n}}" rx="4" class="{cls}"/>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
        n = self.number
        return f'<line x1="{x1:{n}}" y1="{y1:{n}}" x2="{x2:{n}}" y2="{y2:{n}}" class="{cls}"/>'
