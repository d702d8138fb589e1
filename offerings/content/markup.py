"""What the content pages share: links from prose into the table, figures, and a small markup.

- `TABLE_LINKS`: every pre-filtered view of the table a sentence may point at, by slug, in the
  filter page's public query parameters (the README's public interface section).
  `table_link_counts()` counts the matching instance types of every link in one query; a page
  reads them once and hands them to what renders its links.
- Figures come from `offerings.content.facts` and are rendered with their source as the link.
- `render_markup()` turns the FAQ's plain text into HTML: `[text](https://...)` is a source link,
  `[text](table:slug)` a table link with its live count, `{name}` a figure, `` `x` `` code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Count
from django.http import QueryDict
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from offerings.content.facts import Figure, stated_figures
from offerings.models import Fabric, InstanceType
from offerings.table.parameters import match_condition, parse_listing_query

Absolute = Callable[[str], str]
RDMA_QUERY = "&".join(f"fabric={technology}" for technology in Fabric.RDMA_TECHNOLOGIES)


@dataclass(frozen=True)
class TableLink:
    """A pre-filtered view of the filter page, in its public query parameters."""

    slug: str
    query: str


TABLE_LINKS: dict[str, TableLink] = {
    link.slug: link
    for link in (
        TableLink("nvlink", "nvlink=true&gpu_count_min=2"),
        TableLink("nvlink-infiniband", "nvlink=true&fabric=infiniband"),
        TableLink("nvlink-ethernet", "nvlink=true&fabric=ethernet"),
        TableLink("pcie-only", "nvlink=false&gpu_count_min=2"),
        TableLink("nvswitch-8", "nvswitch=true&gpu_count_min=8"),
        TableLink("nvlink-640gb", "nvlink=true&node_memory_min=640"),
        TableLink("nvlink-5", "nvlink_bw_min=1800"),
        TableLink("nvl72", "gpu=gb200&gpu=gb300"),
        TableLink("infiniband", "fabric=infiniband"),
        TableLink("infiniband-3200", "fabric=infiniband&fabric_gbps_min=3200"),
        TableLink("rdma", RDMA_QUERY),
        TableLink("roce", "fabric=roce"),
        TableLink("efa", "fabric=efa"),
        TableLink("erdma", "fabric=erdma"),
        TableLink("tcpx", "fabric=tcpx"),
        TableLink("ethernet", "fabric=ethernet&gpu_count_min=2"),
        TableLink("gpudirect-rdma", "gpudirect_rdma=true"),
        TableLink("multi-node", "multi_node=true"),
        TableLink("nvlink-rdma-multi-node", f"nvlink=true&{RDMA_QUERY}&multi_node=true"),
        TableLink("spot-nvlink", "nvlink=true&price_kind=spot"),
        # The page /nvlink-infiniband/ and its FAQ.
        TableLink("interconnect-both", "interconnect=both"),
        TableLink("nvlink-no-rdma", "nvlink=true&rdma=false"),
        TableLink("rdma-no-nvlink", "nvlink=false&rdma=true"),
        TableLink("nvlink-fabric-unknown", "nvlink=true&fabric=unknown"),
        TableLink("seed-spot", "interconnect=nvlink-or-infiniband&price_kind=spot"),
        TableLink("seed-reserved", "interconnect=nvlink-or-infiniband&price_kind=reserved"),
        TableLink("seed-multi-node", "interconnect=nvlink-or-infiniband&multi_node=true"),
    )
}

Counts = dict[str, int | None]


def count_matches(query: str) -> int | None:
    """How many visible instance types the filter page lists for `query`; None if invalid."""
    listing = parse_listing_query(QueryDict(query))
    if not listing.is_valid:
        return None
    return listing.filterset.qs.count()


def table_link_counts() -> Counts:
    """The live count behind every table link, in one query (None for an invalid link)."""
    aggregates = {}
    for slug, link in TABLE_LINKS.items():
        listing = parse_listing_query(QueryDict(link.query))
        if listing.is_valid:
            aggregates[slug] = Count("pk", filter=match_condition(listing.parameters))
    counts = InstanceType.objects.visible().aggregate(**aggregates) if aggregates else {}
    return {slug: counts.get(slug) for slug in TABLE_LINKS}


def table_url(slug: str) -> str:
    """The filter page in the active language, pre-filtered for the link `slug`."""
    return f"{reverse('offerings:instance-list')}?{TABLE_LINKS[slug].query}"


def count_label(count: int | None) -> str:
    if not count:
        return gettext("(none listed yet)")
    return gettext("(%(count)s listed)") % {"count": number_format(count, force_grouping=True)}


def table_link_html(
    slug: str, text: str, counts: Counts, *, plain: bool = False, absolute: Absolute | None = None
) -> SafeString:
    """`text` (already HTML) linked to the pre-filtered table, followed by its live count."""
    label = count_label(counts.get(slug))
    # A full-width parenthesis (Chinese) carries its own spacing.
    space = "" if label.startswith("\N{FULLWIDTH LEFT PARENTHESIS}") else " "
    if plain:
        url = absolute(table_url(slug)) if absolute else table_url(slug)
        return format_html('<a href="{}">{}</a>{}{}', url, text, space, label)
    return format_html(
        '<a class="table-link" href="{}">{}</a>{}<span class="live-count">{}</span>',
        table_url(slug),
        text,
        space,
        label,
    )


def format_figure(figure: Figure) -> str:
    """`1,800 GB/s` in English, `1800 GB/s` in Chinese: the number per locale, a no-break space."""
    number = number_format(figure.value, force_grouping=True)
    if figure.unit in ("GB/s", "Gb/s"):
        return f"{number}\N{NO-BREAK SPACE}{figure.unit}"
    return number


def figure_html(name: str) -> SafeString:
    """A stated figure linked to the page that states it."""
    figure = stated_figures()[name]
    return format_html(
        '<a class="fig" href="{}" rel="external">{}</a>', figure.source_url, format_figure(figure)
    )


MARKUP = re.compile(
    r"\[(?P<text>[^\]]+)\]\((?P<target>[^)\s]+)\)|`(?P<code>[^`]+)`|\{(?P<figure>[a-z0-9_]+)\}"
)


def render_markup(
    text: str, counts: Counts, *, plain: bool = False, absolute: Absolute | None = None
) -> SafeString:
    """One paragraph of FAQ markup as HTML.

    `plain` keeps only the tags schema.org answers allow (for JSON-LD), with the site's own links
    made absolute by `absolute`.
    """
    parts: list[str] = []
    position = 0
    for match in MARKUP.finditer(text):
        parts.append(escape(text[position : match.start()]))
        position = match.end()
        if match["code"] is not None:
            parts.append(
                escape(match["code"]) if plain else f"<code>{escape(match['code'])}</code>"
            )
        elif match["figure"] is not None:
            figure = stated_figures()[match["figure"]]
            if plain:
                parts.append(
                    format_html('<a href="{}">{}</a>', figure.source_url, format_figure(figure))
                )
            else:
                parts.append(figure_html(match["figure"]))
        elif match["target"].startswith("table:"):
            slug = match["target"].removeprefix("table:")
            parts.append(
                table_link_html(slug, escape(match["text"]), counts, plain=plain, absolute=absolute)
            )
        elif match["target"].startswith("https://"):
            parts.append(
                format_html(
                    '<a href="{}">{}</a>' if plain else '<a href="{}" rel="external">{}</a>',
                    match["target"],
                    match["text"],
                )
            )
        else:
            raise ValueError(f"unknown link target {match['target']!r} in {text!r}")
    parts.append(escape(text[position:]))
    return mark_safe("".join(parts))  # every piece above is escaped or built by format_html
