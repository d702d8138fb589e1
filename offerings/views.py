"""The catalog's public pages and its JSON API.

The filter table and its CSV/JSON exports, an instance type and its correction form, the
comparison, a GPU and a provider; `/api/instances` and its OpenAPI document. The health check is
`offerings/health.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers
from django_ratelimit.decorators import ratelimit

from offerings import openapi
from offerings.caching import (
    KeptRow,
    fetch_all,
    fetch_one,
    kept_statement,
    listing_row_key,
    parameters_key,
    rendered_parts,
    versioned,
)
from offerings.comparison import compare_table
from offerings.drawing.diagrams import price_history_svg, topology_svg
from offerings.facets import listing_counts
from offerings.filters import (
    LISTING_OPTIONS,
    ListingQuery,
    invalid_parameters,
    parse_instance_ids,
    parse_listing_query,
    row_parameters,
)
from offerings.forms import CorrectionForm
from offerings.listing import (
    attach_collective_results,
    attach_row_offers,
    render_csv,
    serialize_instance,
    serialized_rows,
    with_display_prices,
)
from offerings.models import GpuModel, InstanceType, LinkTechnology, Offer, Provider, ScrapeRun
from offerings.money import RateTable
from offerings.presets import PRESETS
from offerings.pricing.price_pages import price_links


def paginate(request: HttpRequest, listing: ListingQuery, count: int | None = None):
    """The requested page of the matching rows, or an error for a page past the end. The page's
    `object_list` is the rows' positions (a range; `page_slice` has the rows), so a page whose
    queries are kept never builds its queryset. `count`: the number of matching rows, when a
    query the page runs anyway has counted them (else it is counted here, its statement kept)."""
    if count is None:
        count = kept_statement(
            getattr(request, "catalog_version", None),
            ("count", request.path, *parameters_key(request.GET, row_parameters(listing))),
            lambda: listing.filterset.qs,
            lambda rows: rows.count(),
            fetch_one,
        )
    return listing.page_of(range(count), listing.errors)


def page_slice(listing: ListingQuery, page) -> QuerySet:
    """The rows of a page `paginate` made."""
    return listing.filterset.qs[page.object_list.start : page.object_list.stop]


def page_values(
    request: HttpRequest, listing: ListingQuery, name: str, build: Callable[[], QuerySet]
) -> list[tuple]:
    """`list(build())`, a values_list query the listing's parameters decide, its statement kept
    for the data version (`kept_statement`: `build` runs only when it is not kept)."""
    return kept_statement(
        getattr(request, "catalog_version", None),
        (name, request.path, *parameters_key(request.GET, listing.filterset.form.fields)),
        build,
        list,
        fetch_all,
    )


def export(request: HttpRequest, listing: ListingQuery, rates: RateTable) -> HttpResponse:
    """Every matching row, unpaged, in the page's order, as a CSV or JSON download."""
    # Exports carry every current price of a row (the API's shape), so they filter the rows
    # that come with all their offers.
    rows = attach_collective_results(
        attach_row_offers(listing.filterset.filter_queryset(InstanceType.objects.for_listing()))
    )
    now = timezone.now()
    items = [serialize_instance(row, rates, now, request.build_absolute_uri) for row in rows]
    fmt = listing.options["format"]
    if fmt == "csv":
        body = render_csv(items, listing.options["currency"], rates)
        response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    else:
        body = json.dumps({"count": len(items), "results": items}, ensure_ascii=False)
        response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="gpucatalog-instances.{fmt}"'
    return response


def compare_selection(query: QueryDict) -> tuple[list[int], str]:
    """The rows ticked for comparison, and the compare link that remembers the filters."""
    ids = list(
        dict.fromkeys(
            int(v) for v in query.getlist("compare") if v.isascii() and v.isdigit() and len(v) < 19
        )
    )
    filters = query.copy()
    for name in ("compare", "page"):
        filters.pop(name, None)
    link = QueryDict(mutable=True)
    link["ids"] = ",".join(map(str, ids))
    link["from"] = filters.urlencode()
    return ids, f"{reverse('offerings:compare')}?{link.urlencode()}"


# The parameters that narrow the rows, with the names the filter form gives them (the same
# strings as its labels), for naming the filters that emptied a result.
FILTER_LABELS = {
    "q": _("Search"),
    "interconnect": _("NVLink inside, RDMA between nodes"),
    "nvlink": _("NVLink or Infinity Fabric"),
    "nvswitch": _("All GPUs on one NVSwitch"),
    "nvlink_bw_min": _("NVLink GB/s per GPU, at least"),
    "rdma": _("RDMA fabric"),
    "fabric": _("Fabric"),
    "fabric_gbps_min": _("Back-end Gb/s per node, at least"),
    "gpudirect_rdma": _("GPUDirect RDMA"),
    "multi_node": _("Self-serve multi-node"),
    "basis": _("Count interconnect facts that are"),
    "gpu": _("GPU model"),
    "gpu_count_min": _("GPUs per instance, at least"),
    "gpu_memory_min": _("GiB per GPU, at least"),
    "node_memory_min": _("GPU GiB per instance, at least"),
    "provider": _("Provider"),
    "price_kind": _("Price kind"),
    "max_gpu_hour": _("USD per GPU-hour, at most"),
    "region": _("Region"),
    "geo": _("Continent"),
    "available": _("Available now"),
}


def _shown_values(form, name: str, values: list[str]) -> str:
    """The values of one parameter as the form shows them (`Europe`, `yes`, `H100 SXM`)."""
    if name in ("nvlink", "nvswitch", "rdma", "gpudirect_rdma", "multi_node", "available"):
        words = {"true": gettext("yes"), "false": gettext("no (known)")}
        return ", ".join(words.get(value, value) for value in values)
    choices = getattr(form.fields[name], "choices", None)
    labels = {str(value): str(label) for value, label in choices} if choices else {}
    return ", ".join(labels.get(value, value) for value in values)


def empty_result_causes(query: QueryDict, form) -> list[dict]:
    """For a query that matches nothing: each filter given, and how many rows dropping it gives."""
    causes = []
    for name, label in FILTER_LABELS.items():
        values = [value.strip() for value in query.getlist(name) if value.strip()]
        if not values:
            continue
        rest = query.copy()
        for dropped in (name, "page"):
            rest.pop(dropped, None)
        other = parse_listing_query(rest)
        count = (
            other.filterset.filter_rows(InstanceType.objects.visible()).count()
            if other.is_valid
            else 0
        )
        causes.append(
            {
                "name": name,
                "label": label,
                "value": _shown_values(form, name, values),
                "count": count,
                "url": f"?{rest.urlencode()}",
            }
        )
    return sorted(causes, key=lambda cause: cause["count"] == 0)  # the ones that help first


def page_rows(
    request: HttpRequest,
    listing: ListingQuery,
    page,
    rates: RateTable,
    currency: str,
    compare_ids: list[int],
) -> list:
    """The page's rows for the filter table: a `KeptRow` (its markup) for each row kept for this
    data version, the row loaded in full, with its offer and prices, for each one that is not.

    The page's rows and their chosen offers are read as values first (two small queries); only
    rows not kept are loaded as models (one more query and their offers), so a page of kept rows
    builds no model at all.
    """
    version = getattr(request, "catalog_version", None)
    ids = page_values(
        request,
        listing,
        "page-ids",
        lambda: page_slice(listing, page).values_list("pk", "row_offer_id"),
    )
    offers = sorted({o for _, o in ids if o})
    observed = dict(
        kept_statement(
            version,
            ("page-observed", *offers),  # the offers themselves: the SQL holds their ids
            lambda: Offer.objects.filter(pk__in=offers).values_list("pk", "observed_at"),
            list,
            fetch_all,
        )
    )
    now = timezone.now()
    language, minute = get_language(), int(now.timestamp() // 60)
    keys = {}
    for pk, offer_id in ids:
        keys[pk] = listing_row_key(
            pk,
            offer_id,
            Offer.stale_at(observed.get(offer_id), now) if offer_id is not None else None,
            language=language,
            currency=currency,
            checked=pk in compare_ids,
            badges=False,
            minute=minute,
        )
    found = rendered_parts.get_many(version, keys.values())
    missing = [pk for pk in keys if keys[pk] not in found]
    loaded: dict[int, InstanceType] = {}
    if missing:
        full = attach_row_offers(listing.filterset.qs.filter(pk__in=missing))
        loaded = {row.pk: row for row in with_display_prices(full, rates, currency)}
    # A row not kept that is gone by now (a write since its id was read) is left out.
    return [
        KeptRow(pk, found[keys[pk]]) if keys[pk] in found else loaded[pk]
        for pk, _ in ids
        if keys[pk] in found or pk in loaded
    ]


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
    listing = parse_listing_query(request.GET, InstanceType.objects.for_table())
    rates = RateTable.of_version(getattr(request, "catalog_version", None))
    if listing.is_valid and listing.options["format"]:
        return export(request, listing, rates)
    counts = listing_counts(listing, getattr(request, "catalog_version", None))
    page = paginate(request, listing, counts.total) if listing.is_valid else None
    currency = listing.options["currency"] if listing.is_valid else "USD"
    compare_ids, compare_url = compare_selection(request.GET)
    if page is not None and decorate is None:
        rows = page_rows(request, listing, page, rates, currency, compare_ids)
    else:
        rows = attach_row_offers(page_slice(listing, page)) if page else []
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
        "form": form,
        "errors": listing.errors,
        "compare_ids": compare_ids,
        "facets": counts.facets,
        "compare_url": compare_url,
        "page": page,
        "rows": rows,
        "currency": currency,
        "display_rate": rates.display_rate(currency),
        "rates": rates,
        "presets": PRESETS,
        "sort": listing.options["sort"] if listing.is_valid else "price_gpu_hour",
        "query": request.GET.urlencode(),
        "feed_url": reverse("feed-price-changes")
        + (f"?{feed_query.urlencode()}" if feed_query else ""),
        "availability": counts.availability,
        "empty_causes": causes(request.GET, form) if empty else [],
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
    }
    return context, 200 if listing.is_valid else 400


@require_safe
@vary_on_headers("HX-Request")
@versioned
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
@versioned
def api_instances(request: HttpRequest) -> HttpResponse:
    """`GET /api/instances`: the filtered rows, paged, in the contract's JSON shape.

    The page's rows come as table rows; each row's JSON is kept per data version
    (`serialized_rows`), and only the rows not kept load their offers."""
    listing = parse_listing_query(request.GET, InstanceType.objects.for_table())
    if not listing.is_valid:
        return invalid_parameters(listing.errors)
    rates = RateTable.of_version(getattr(request, "catalog_version", None))
    if listing.options["format"]:
        return export(request, listing, rates)
    page = paginate(request, listing)
    if page is None:
        return invalid_parameters(listing.errors)
    results = serialized_rows(
        lambda: listing.filterset.qs,
        page_values(
            request,
            listing,
            "page-ids",
            lambda: page_slice(listing, page).values_list("pk", "row_offer_id"),
        ),
        rates,
        request.build_absolute_uri,
        getattr(request, "catalog_version", None),
    )
    next_url = None
    if page.has_next():
        query = request.GET.copy()
        query["page"] = page.next_page_number()
        next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
    # The envelope JsonResponse would write, around rows that are JSON text already.
    body = (
        f'{{"count": {int(page.paginator.count)}, "next": '
        f"{json.dumps(next_url, ensure_ascii=False)}, "
        f'"results": [{", ".join(results)}]}}'
    )
    return HttpResponse(body, content_type="application/json")


@require_safe
def api_openapi(request: HttpRequest) -> JsonResponse:
    return JsonResponse(openapi.document(request.build_absolute_uri("/")))


def _detail_context(instance: InstanceType, form: CorrectionForm | None = None) -> dict:
    """Everything the detail page shows: facts, diagrams, price history, similar rows."""
    rates = RateTable()
    now = timezone.now()
    offers = instance.current_offers
    for offer in offers:
        offer.links = price_links(offer, instance.provider.slug)
    charted = next((o for o in offers if o.kind == "on-demand"), offers[0] if offers else None)
    chart = single = None
    if charted is not None:
        history = list(charted.history.all())  # newest first, an undated one last
        points = [(o.observed_at, o.price_per_hour) for o in history if o.observed_at]
        if len(points) >= 2:
            chart = price_history_svg(points, charted.currency, now)
        elif history:
            single = history[0]  # one price is a fact with a date, not a line
    similar = parse_listing_query(
        QueryDict(f"gpu={instance.gpu.slug}&gpu_count_min={instance.gpu_count}")
    ).filterset.qs.exclude(pk=instance.pk)[:5]
    return {
        "instance": instance,
        "rates": rates,
        "now": now,
        "topology": topology_svg(instance),
        "chart": chart,
        "single_observation": single,
        "charted": charted,
        "similar": with_display_prices(attach_row_offers(similar), rates, "USD"),
        "form": form or CorrectionForm(),
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
    }


def _visible_instance(provider: str, slug: str) -> InstanceType:
    rows = attach_row_offers(
        InstanceType.objects.for_listing()
        .with_collective_results()
        .filter(provider__slug=provider, slug=slug)
    )
    if not rows:
        raise Http404("No such instance type")
    return rows[0]


@require_safe
def instance_detail(request: HttpRequest, provider: str, slug: str) -> HttpResponse:
    """One instance type with every fact and its source."""
    if provider in Provider.ALIASES:
        canonical = {"provider": Provider.ALIASES[provider], "slug": slug}
        return redirect("offerings:instance-detail", permanent=True, **canonical)
    instance = _visible_instance(provider, slug)
    context = _detail_context(instance) | {"reported": request.GET.get("reported") == "1"}
    return render(request, "offerings/instance_detail.html", context)


@require_POST
@ratelimit(key="ip", rate=lambda group, request: settings.CORRECTION_RATE, block=False)
def report_correction(request: HttpRequest, provider: str, slug: str) -> HttpResponse:
    """Take a reader's correction into the review queue; nothing is sent anywhere."""
    instance = _visible_instance(Provider.ALIASES.get(provider, provider), slug)
    if getattr(request, "limited", False):
        context = _detail_context(instance) | {"limited": True}
        return render(request, "offerings/instance_detail.html", context, status=429)
    form = CorrectionForm(request.POST)
    if not form.is_valid():
        context = _detail_context(instance, form)
        return render(request, "offerings/instance_detail.html", context, status=400)
    report = form.save(commit=False)
    report.instance = instance
    report.save()
    url = reverse("offerings:instance-detail", kwargs={"provider": provider, "slug": slug})
    return redirect(f"{url}?reported=1#report")


@require_safe
def compare(request: HttpRequest) -> HttpResponse:
    """2 to 4 instance types side by side, differences highlighted."""
    if any(name.startswith("_") or "__" in name for name in request.GET):
        errors = [gettext("This parameter name is not allowed.")]
        return render(request, "offerings/compare.html", {"errors": errors}, status=400)
    values = request.GET.getlist("ids")
    if len(values) != 1:
        rows, errors = (
            [],
            [gettext("Give ids once, e.g. ?ids=aws/p5-48xlarge,azure/standard-nd96isr-h100-v5.")],
        )
    else:
        listed = parse_listing_query(QueryDict("")).filterset.qs  # carries the row prices
        rows, errors = parse_instance_ids(values[0], queryset=listed, minimum=2, maximum=4)
    if errors:
        return render(request, "offerings/compare.html", {"errors": errors}, status=400)
    rows = with_display_prices(attach_row_offers(rows), RateTable(), "USD")
    table = compare_table(rows)
    # The filter state the reader came from, as a query string for the way back.
    origin = request.GET.get("from", "")
    back = reverse("offerings:instance-list") + "?" + origin[:2000] if origin else ""
    return render(request, "offerings/compare.html", {"rows": rows, "table": table, "back": back})


def _link_group(technology, topology, domain_size, gpu_count) -> str:
    """The GPU page's heading for a type's GPU-to-GPU link."""
    if technology == LinkTechnology.NONE:
        key = _("PCIe only")
    elif technology in (LinkTechnology.UNKNOWN, None):
        key = _("GPU-to-GPU link unknown")
    elif topology == "nvswitch" and (domain_size or 0) >= gpu_count:
        key = _("All GPUs on one NVSwitch")
    elif topology in ("bridge", "mesh", "hybrid-cube-mesh"):
        key = _("NVLink bridges or direct mesh")
    else:
        key = _("NVLink, topology unknown")
    return str(key)


# The cheapest types of each link group the GPU page shows; the filter table has them all.
GPU_PAGE_GROUP_ROWS = 20


@require_safe
def gpu_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A GPU's specs and the instances with it by GPU-to-GPU link, cheapest per GPU-hour first:
    each group's cheapest GPU_PAGE_GROUP_ROWS, with its count (the table lists them all)."""
    gpu = get_object_or_404(GpuModel, slug=slug)
    listing = parse_listing_query(QueryDict(f"gpu={slug}"), InstanceType.objects.for_table())
    matching = listing.filterset.qs
    links = matching.values_list(
        "pk", "gpu_link__technology", "gpu_link__topology", "gpu_link__domain_size", "gpu_count"
    )
    grouped: dict[str, list[int]] = {}
    for pk, *link in links:
        grouped.setdefault(_link_group(*link), []).append(pk)
    shown = {pk for ids in grouped.values() for pk in ids[:GPU_PAGE_GROUP_ROWS]}
    rows = attach_row_offers(matching.filter(pk__in=shown))
    loaded = {row.pk: row for row in with_display_prices(rows, RateTable(), "USD")}
    groups = [  # a row gone since its id was read (a write in between) is left out
        (name, [loaded[pk] for pk in ids[:GPU_PAGE_GROUP_ROWS] if pk in loaded], len(ids))
        for name, ids in grouped.items()
    ]
    return render(
        request,
        "offerings/gpu_detail.html",
        {"gpu": gpu, "groups": groups, "count": sum(len(ids) for ids in grouped.values())},
    )


@require_safe
def provider_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A provider's offerings, interconnect story, multi-node options and data freshness."""
    if slug in Provider.ALIASES:
        return redirect("offerings:provider-detail", permanent=True, slug=Provider.ALIASES[slug])
    provider = get_object_or_404(
        Provider.objects.exclude(kind=Provider.Kind.PRICE_SOURCE), slug=slug
    )
    rows = attach_row_offers(
        parse_listing_query(QueryDict(f"provider={slug}&sort=gpu_count")).filterset.qs
    )
    rates = RateTable()
    with_display_prices(rows, rates, "USD")
    fabrics: dict[str, int] = {}
    for row in rows:
        name = str(row.fabric.get_technology_display())
        fabrics[name] = fabrics.get(name, 0) + 1
    offers = [offer for row in rows for offer in row.current_offers]
    runs = ScrapeRun.objects.filter(provider=provider)
    context = {
        "provider": provider,
        "rows": rows,
        "fabrics": sorted(fabrics.items(), key=lambda item: -item[1]),
        "multi_node": [row for row in rows if row.fabric.multi_node],
        "sales_only": [row for row in rows if row.fabric.sales_only],
        "newest": max((o.observed_at for o in offers if o.observed_at), default=None),
        "oldest": min((o.observed_at for o in offers if o.observed_at), default=None),
        "stale": sum(1 for o in offers if o.is_stale()),
        "offer_count": len(offers),
        "last_run": runs.first(),
        "last_good_run": runs.filter(status=ScrapeRun.Status.SUCCEEDED).first(),
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
    }
    return render(request, "offerings/provider_detail.html", context)
