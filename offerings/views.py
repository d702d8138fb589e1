"""Public pages, the JSON API and the health check."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.paginator import Paginator
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from offerings import openapi
from offerings.filters import PROVIDER_ALIASES, ListingQuery, parse_listing_query
from offerings.listing import (
    RateTable,
    attach_row_offers,
    render_csv,
    serialize_instance,
    with_display_prices,
)
from offerings.models import InstanceType
from offerings.presets import PRESETS


def invalid_parameters(errors: dict[str, list[str]]) -> JsonResponse:
    return JsonResponse({"error": "invalid_parameters", "fields": errors}, status=400)


def paginate(listing: ListingQuery):
    """The requested page, or an error for a page past the end."""
    options = listing.options
    paginator = Paginator(listing.filterset.qs, options["page_size"])
    if options["page"] > paginator.num_pages:
        listing.errors["page"] = [f"There are only {paginator.num_pages} page(s)."]
        return None
    return paginator.page(options["page"])


def export(request: HttpRequest, listing: ListingQuery, rates: RateTable) -> HttpResponse:
    """Every matching row, unpaged, in the page's order, as a CSV or JSON download."""
    rows = attach_row_offers(listing.filterset.qs)
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


@require_safe
@vary_on_headers("HX-Request")
def instance_list(request: HttpRequest) -> HttpResponse:
    """The filter page: one row per instance type; htmx asks for the results fragment only."""
    listing = parse_listing_query(request.GET)
    rates = RateTable()
    if listing.is_valid and listing.options["format"]:
        return export(request, listing, rates)
    page = paginate(listing) if listing.is_valid else None
    currency = listing.options["currency"] if listing.is_valid else "USD"
    rows = attach_row_offers(page.object_list) if page else []
    with_display_prices(rows, rates, currency)
    form = listing.filterset.form
    for name, messages in listing.errors.items():
        if name in form.fields and name not in form.errors:
            form.add_error(name, messages)
    context = {
        "form": form,
        "errors": listing.errors,
        "page": page,
        "rows": rows,
        "currency": currency,
        "display_rate": rates.display_rate(currency),
        "rates": rates,
        "presets": PRESETS,
        "sort": listing.options["sort"] if listing.is_valid else "price_gpu_hour",
        "query": request.GET.urlencode(),
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
    }
    template = "offerings/instance_list.html"
    if request.headers.get("HX-Request") == "true":
        template += "#results"
    return render(request, template, context, status=200 if listing.is_valid else 400)


@require_safe
def api_instances(request: HttpRequest) -> JsonResponse:
    """`GET /api/instances`: the filtered rows, paged, in the contract's JSON shape."""
    listing = parse_listing_query(request.GET)
    if not listing.is_valid:
        return invalid_parameters(listing.errors)
    rates = RateTable()
    if listing.options["format"]:
        return export(request, listing, rates)
    page = paginate(listing)
    if page is None:
        return invalid_parameters(listing.errors)
    now = timezone.now()
    results = [
        serialize_instance(row, rates, now, request.build_absolute_uri)
        for row in attach_row_offers(page.object_list)
    ]
    next_url = None
    if page.has_next():
        query = request.GET.copy()
        query["page"] = page.next_page_number()
        next_url = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
    return JsonResponse(
        {"count": page.paginator.count, "next": next_url, "results": results},
        json_dumps_params={"ensure_ascii": False},
    )


@require_safe
def api_openapi(request: HttpRequest) -> JsonResponse:
    return JsonResponse(openapi.document(request.build_absolute_uri("/")))


@require_safe
def instance_detail(request: HttpRequest, provider: str, slug: str) -> HttpResponse:
    """One instance type with every fact and its source."""
    if provider in PROVIDER_ALIASES:
        canonical = {"provider": PROVIDER_ALIASES[provider], "slug": slug}
        return redirect("offerings:instance-detail", permanent=True, **canonical)
    instance = get_object_or_404(
        InstanceType.objects.for_listing(), provider__slug=provider, slug=slug
    )
    rows = attach_row_offers([instance])
    return render(
        request,
        "offerings/instance_detail.html",
        {"instance": rows[0], "rates": RateTable(), "now": timezone.now()},
    )


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Report whether the database answers and whether a broker is configured."""
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # any failure means unhealthy
        checks["database"] = f"error: {type(exc).__name__}"
    checks["broker"] = "configured" if settings.CELERY_BROKER_URL else "not configured"
    healthy = checks["database"] == "ok"
    return JsonResponse(
        {"status": "ok" if healthy else "error", "checks": checks},
        status=200 if healthy else 503,
    )
