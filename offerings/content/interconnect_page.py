"""`/nvlink-infiniband/`: cloud GPU instances with NVLink or InfiniBand.

The filter page's table and form, preset to `interconnect=nvlink-or-infiniband` (NVLink or AMD's
Infinity Fabric inside the node, or InfiniBand between nodes) with one-click choices to widen it
to any RDMA fabric or narrow it, and adjustable like the filter page (the same FilterSet, the same
partial templates, the same htmx fragment); a badge on each row saying which it is known to have;
then a short account of both, what renting them costs and how old the table's prices are, and the
page's own FAQ with its FAQPage JSON-LD. The text is one template per language, `templates/content/
nvlink_infiniband.<lang>.html`; the FAQ is `offerings.content.interconnect_faq`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Max, Min, Q
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from offerings.content import interconnect_faq
from offerings.content.faq import faq_entries, faq_jsonld
from offerings.content.markup import table_link_counts
from offerings.models import InstanceType
from offerings.schemas import RDMA_FABRICS
from offerings.table import views as listing_views
from offerings.table.parameters import NVLINK_TECHNOLOGIES, ListingQuery, match_condition
from offerings.web.caching import absolute_url, cached_response

PRESET = ("interconnect", "nvlink-or-infiniband")


def preset_query(query: QueryDict) -> QueryDict:
    """The query the page lists: the preset `interconnect` unless the query chooses its own value.

    The filter form leaves out the fields it sends empty, so on this page an absent
    `interconnect` is the preset, and the form's empty choice says so (`interconnect_empty`).
    """
    effective = query.copy()
    name, value = PRESET
    if not [v for v in effective.getlist(name) if v.strip()]:
        effective.setlist(name, [value])
    return effective


def known_interconnects(row: InstanceType, bases: Iterable[str] | None) -> list[str]:
    """Which of the two a row is known to have, as `interconnect_condition` counts them."""
    known = []
    for kind, fact, technologies in (
        ("nvlink", row.gpu_link, NVLINK_TECHNOLOGIES),
        ("rdma", row.fabric, RDMA_FABRICS),
    ):
        if (
            fact
            and fact.technology in technologies
            and (bases is None or (fact.basis or {}).get("technology") in bases)
        ):
            known.append(kind)
    return known


def badge_label(row: InstanceType, known: list[str]) -> str:
    """`NVLink + InfiniBand`, `NVLink + RDMA`, `Infinity Fabric`, `InfiniBand`, `RDMA`, ..., or
    empty when neither is known: InfiniBand by name, its rivals as RDMA."""
    parts = []
    if "nvlink" in known:
        parts.append(
            "Infinity Fabric" if row.gpu_link.technology == "infinity-fabric" else "NVLink"
        )
    if "rdma" in known:
        parts.append("InfiniBand" if row.fabric.technology == "infiniband" else "RDMA")
    return " + ".join(parts)


def with_interconnect_badges(rows: list[InstanceType], bases: list[str] | None) -> None:
    for row in rows:
        known = known_interconnects(row, bases)
        row.interconnects = "both" if len(known) == 2 else (known[0] if known else "")
        row.interconnects_label = badge_label(row, known)


def interconnect_choices() -> list[tuple[str, str]]:
    """The page's quick choices above the table: (value of `interconnect`, label)."""
    return [
        ("nvlink-or-infiniband", gettext("NVLink or InfiniBand")),
        ("either", gettext("NVLink or any RDMA fabric (RoCE, EFA, eRDMA too)")),
        ("both", gettext("both NVLink and RDMA")),
        ("nvlink", gettext("NVLink")),
        ("rdma", gettext("any RDMA fabric")),
    ]


def empty_result_causes(query: QueryDict, listing) -> list[dict]:
    """The filter page's "drop this filter" links; dropping `interconnect` leaves this page,
    which would apply its preset again, for the whole table on the filter page."""
    causes = listing_views.empty_result_causes(query, listing)
    for cause in causes:
        if cause["name"] == PRESET[0]:
            cause["url"] = reverse("offerings:instance-list") + cause["url"]
    return causes


@dataclass(frozen=True)
class PriceAges:
    """How old the prices behind a table are: every current price of the rows it lists."""

    rows: int
    priced: int  # rows with at least one current price
    prices: int
    dated: int
    newest: datetime | None
    oldest: datetime | None

    @property
    def dated_percent(self) -> int:
        return round(100 * self.dated / self.prices) if self.prices else 0


def price_ages(listing: ListingQuery) -> PriceAges:
    """The ages of the current prices of every row `listing` matches, in one query."""
    current = Q(offers__is_active=True)
    dated = current & Q(offers__observed_at__isnull=False)
    found = (
        InstanceType.objects.visible()
        .filter(match_condition(listing.parameters))
        .aggregate(
            rows=Count("pk", distinct=True),
            priced=Count("pk", filter=current, distinct=True),
            prices=Count("offers", filter=current),
            dated=Count("offers", filter=dated),
            newest=Max("offers__observed_at", filter=dated),
            oldest=Min("offers__observed_at", filter=dated),
        )
    )
    return PriceAges(**found)


def listing_context(request: HttpRequest) -> tuple[dict, int] | HttpResponse:
    """The filter page's context (`offerings.table.views.listing_context`) for the preset query, with
    this page's badges and quick choices; an export answers at once."""

    def badges(rows, listing) -> None:
        with_interconnect_badges(rows, listing.parameters.bases)

    built = listing_views.listing_context(request, causes=empty_result_causes, decorate=badges)
    if isinstance(built, HttpResponse):
        return built
    context, status = built
    context.update(
        {
            "interconnect_badges": True,
            "interconnect_empty": gettext("NVLink or InfiniBand (this page's default)"),
            "interconnect_choices": interconnect_choices(),
            "interconnect_current": request.GET.get(PRESET[0]),
        }
    )
    return context, status


@require_safe
@vary_on_headers("HX-Request")
@cached_response(listing_views.listing_parameters)
def nvlink_infiniband(request: HttpRequest) -> HttpResponse:
    """The table preset to NVLink or InfiniBand, the account of both, and the page's FAQ."""
    # Every link the partials build from the query (sort, pages, exports, compare) then names
    # the preset, so it survives a move to the filter page.
    request.GET = preset_query(request.GET)
    built = listing_context(request)
    if isinstance(built, HttpResponse):
        return built
    context, status = built
    if request.headers.get("HX-Request") == "true":
        fragment = "content/_nvlink_infiniband_fragment.html"
        return render(request, fragment, context, status=status)
    language = get_language()
    counts = table_link_counts()
    entries = faq_entries(
        language,
        counts,
        absolute=lambda path: absolute_url(request, path),
        faq=interconnect_faq.FAQ,
    )
    listing = context["listing"]
    context |= {
        "price_ages": price_ages(listing) if listing is not None else None,
        "faq_entries": entries,
        "table_link_counts": counts,
        "jsonld": faq_jsonld(entries, language),
        "explainer_url": reverse("offerings:learn"),
    }
    templates = [f"content/nvlink_infiniband.{language}.html", "content/nvlink_infiniband.en.html"]
    return render(request, templates, context, status=status)
