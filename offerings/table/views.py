"""The filter table's views: the page with its htmx fragment, its CSV/JSON exports,
`/api/instances` and its OpenAPI document (the feed is `table/feed.py`)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import get_language
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from offerings.models import (
    InstanceType,
)
from offerings.money import DISPLAY_CURRENCIES, RateTable, page_currency
from offerings.table.counts import listing_counts
from offerings.table.parameters import (
    LISTING_OPTIONS,
    ListingQuery,
    invalid_parameters,
    known_parameters,
    match_condition,
    parse_id,
    parse_listing_query,
)
from offerings.table.presets import PRESETS
from offerings.table.reference import listing_reference
from offerings.table.rows import (
    attach_row_offers,
    for_serializing,
    render_csv,
    serialize_instance,
    with_display_prices,
)
from offerings.web.caching import absolute_url, cached_response
from offerings.web.paths import attach_paths
from offerings.web.responses import CatalogJSONResponse


def paginate(listing: ListingQuery, count: int | None = None):
    """The requested page of the matching rows, or None with an error for a page past the end.
    The page's `object_list` is the rows' positions (a range; `page_slice` has the rows).
    `count`: the number of matching rows, when a query the page runs anyway counted them."""
    if count is None:
        count = InstanceType.objects.visible().filter(match_condition(listing.parameters)).count()
    return listing.page_of(range(count), listing.errors)


def page_slice(listing: ListingQuery, page) -> QuerySet:
    """The rows of a page `paginate` made."""
    return listing.filterset.qs[page.object_list.start : page.object_list.stop]


def export(request: HttpRequest, listing: ListingQuery, rates: RateTable) -> HttpResponse:
    """Every matching row, unpaged, in the page's order, as a CSV or JSON download."""
    # Exports carry every current price of a row (the API's shape), so they filter the rows
    # that come with all their offers.
    rows = for_serializing(listing.filterset.filter_queryset(InstanceType.objects.for_table()))
    now = timezone.now()
    items = [serialize_instance(row, rates, now, absolute(request)) for row in rows]
    fmt = listing.options["format"]
    if fmt == "csv":
        body = render_csv(items, listing.options["currency"], rates)
        response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    else:
        response = CatalogJSONResponse({"count": len(items), "results": items})
    response["Content-Disposition"] = f'attachment; filename="gpucatalog-instances.{fmt}"'
    return response


def compare_selection(query: QueryDict) -> tuple[list[int], str]:
    """The rows ticked for comparison, and the compare link that remembers the filters."""
    ids = list(
        dict.fromkeys(pk for pk in map(parse_id, query.getlist("compare")) if pk is not None)
    )
    filters = query.copy()
    for name in ("compare", "page"):
        filters.pop(name, None)
    link = QueryDict(mutable=True)
    link["ids"] = ",".join(map(str, ids))
    if query.get("currency") in DISPLAY_CURRENCIES:
        link["currency"] = query["currency"]  # the compare page shows the same currency
    link["from"] = filters.urlencode()
    return ids, f"{reverse('offerings:compare')}?{link.urlencode()}"


# The parameters that narrow the rows, in the order the filter form shows them.
NARROWING = (
    "q",
    "interconnect",
    "nvlink",
    "nvswitch",
    "nvlink_bw_min",
    "rdma",
    "fabric",
    "fabric_gbps_min",
    "gpudirect_rdma",
    "multi_node",
    "basis",
    "gpu",
    "gpu_count_min",
    "gpu_memory_min",
    "node_memory_min",
    "provider",
    "price_kind",
    "max_gpu_hour",
    "region",
    "geo",
    "available",
)


def _shown_values(form, name: str, values: list[str]) -> str:
    """The values of one parameter as the form shows them (`Europe`, `yes`, `H100 SXM`)."""
    choices = getattr(form.fields[name], "choices", None)
    labels = {str(value): str(label) for value, label in choices} if choices else {}
    return ", ".join(labels.get(value, value) for value in values)


def empty_result_causes(query: QueryDict, listing: ListingQuery) -> list[dict]:
    """For a query that matches nothing: each filter given, and how many rows dropping it gives
    (all counted in one query)."""
    form = listing.filterset.form
    given = {
        name: values
        for name in NARROWING
        if (values := [value.strip() for value in query.getlist(name) if value.strip()])
    }
    parameters = listing.parameters
    counts = InstanceType.objects.visible().aggregate(
        **{
            f"without:{name}": Count("pk", filter=match_condition(parameters.dropping(name)))
            for name in given
        }
    )
    causes = []
    for name, values in given.items():
        rest = query.copy()
        for dropped in (name, "page"):
            rest.pop(dropped, None)
        causes.append(
            {
                "name": name,
                "label": form.fields[name].label,
                "value": _shown_values(form, name, values),
                "count": counts[f"without:{name}"],
                "url": f"?{rest.urlencode()}",
            }
        )
    return sorted(causes, key=lambda cause: cause["count"] == 0)  # the ones that help first


def listing_context(
    request: HttpRequest,
    *,
    causes: Callable = empty_result_causes,
    decorate: Callable | None = None,
) -> tuple[dict, int] | HttpResponse:
    """What the filter page's template needs for `request.GET` (an export answers at once).

    Shared by the filter page and the pages built on its table (`/nvlink-infiniband/`): `causes`
    names the filters that emptied a result, `decorate(rows, listing)` adds what a page shows more.
    """
    # The page shows one price per row, so it needs no row's full list of offers.
    listing = parse_listing_query(
        request.GET,
        InstanceType.objects.for_table(),
        default_currency=page_currency(get_language()),
    )
    rates = listing_reference(request).rates
    if listing.is_valid and listing.options["format"]:
        return export(request, listing, rates)
    counts = listing_counts(listing)
    page = paginate(listing, counts.total) if listing.is_valid else None
    currency = listing.options["currency"] if listing.is_valid else listing.default_currency
    compare_ids, compare_url = compare_selection(request.GET)
    rows = attach_paths(attach_row_offers(page_slice(listing, page))) if page else []
    with_display_prices(rows, rates, currency)
    form = listing.filterset.form
    for name, messages in listing.errors.items():
        if name in form.fields and name not in form.errors:
            form.add_error(name, messages)  # show the contract's errors at their fields
    if decorate is not None and listing.is_valid:
        decorate(rows, listing)
    feed_query = request.GET.copy()
    for name in LISTING_OPTIONS:
        feed_query.pop(name, None)
    empty = page is not None and page.paginator.count == 0
    context = {
        "listing": listing if listing.is_valid else None,
        "form": form,
        "errors": listing.errors,
        "compare_ids": compare_ids,
        "facets": counts.facets,
        "compare_url": compare_url,
        "page": page,
        "rows": rows,
        "currency": currency,
        "currency_default": listing.default_currency,
        "display_rate": rates.display_rate(currency),
        "rates": rates,
        "presets": PRESETS,
        "sort": listing.options["sort"] if listing.is_valid else "price_gpu_hour",
        "query": request.GET.urlencode(),
        "feed_url": reverse("feed-price-changes")
        + (f"?{feed_query.urlencode()}" if feed_query else ""),
        "availability": counts.availability,
        "undated_notice": undated_share(rows) > 0.5,
        "empty_causes": causes(request.GET, listing) if empty else [],
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
    }
    return context, 200 if listing.is_valid else 400


def undated_share(rows: list) -> float:
    """The share of the shown prices whose source shows no date (0 without prices)."""
    prices = [row.row_offer for row in rows if getattr(row, "row_offer", None) is not None]
    return sum(o.observed_at is None for o in prices) / len(prices) if prices else 0.0


def listing_parameters() -> set[str]:
    """What the filter page reads: the filters, the listing options and the compare ticks."""
    return known_parameters() | {"compare"}


def absolute(request: HttpRequest) -> Callable[[str], str]:
    """A site path -> its absolute URL (on SITE_URL when set)."""
    return lambda path: absolute_url(request, path)


@require_safe
@vary_on_headers("HX-Request")
@cached_response(listing_parameters)
def instance_list(request: HttpRequest) -> HttpResponse:
    """The filter page: one row per instance type; htmx asks for the results fragment only."""
    built = listing_context(request)
    if isinstance(built, HttpResponse):
        return built
    context, status = built
    template = "offerings/instance_list.html"
    if request.headers.get("HX-Request") == "true":
        template += "#results"
    return render(request, template, context, status=status)


@require_safe
@cached_response(known_parameters)
def api_instances(request: HttpRequest) -> HttpResponse:
    """`GET /api/instances`: the filtered rows, paged, in the contract's JSON shape."""
    listing = parse_listing_query(request.GET, InstanceType.objects.for_table())
    if not listing.is_valid:
        return invalid_parameters(listing.errors)
    rates = listing_reference(request).rates
    if listing.options["format"]:
        return export(request, listing, rates)
    page = paginate(listing)
    if page is None:
        return invalid_parameters(listing.errors)
    rows = for_serializing(page_slice(listing, page))
    now = timezone.now()
    results = [serialize_instance(row, rates, now, absolute(request)) for row in rows]
    next_url = None
    if page.has_next():
        query = request.GET.copy()
        query["page"] = page.next_page_number()
        next_url = absolute_url(request, f"{request.path}?{query.urlencode()}")
    body = {"count": page.paginator.count, "next": next_url, "results": results}
    return CatalogJSONResponse(body)
