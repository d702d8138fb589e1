"""The pages of one thing: an instance type with its correction form, a comparison of two to
four, a GPU and a provider (the providers' readiness side by side is `pages/readiness.py`)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db.models import Case, Q, Value, When
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST, require_safe
from django_ratelimit.decorators import ratelimit

from offerings.estimator.collective_views import expected_on_page
from offerings.models import (
    GpuModel,
    InstanceType,
    LinkTechnology,
    Provider,
    ScrapeRun,
)
from offerings.money import RateTable
from offerings.pages.comparison import compare_table
from offerings.pages.diagrams import NARROW, price_history_svg, price_index_svg, topology_svg
from offerings.pages.forms import CorrectionForm
from offerings.pages.price_index import MIN_OFFERS, MIN_WEEKS, price_index
from offerings.pages.price_pages import price_links
from offerings.schemas import instance_slug
from offerings.table.parameters import (
    NVLINK_TECHNOLOGIES,
    PARTIAL_TOPOLOGIES,
    nvswitch_condition,
    parse_instance_ids,
    parse_listing_query,
)
from offerings.table.rows import (
    attach_row_offers,
    offer_usd,
    with_display_prices,
)
from offerings.web.caching import cached_response, render_limited
from offerings.web.context import request_currency
from offerings.web.paths import attach_paths


def _detail_context(
    instance: InstanceType, currency: str, form: CorrectionForm | None = None
) -> dict:
    """Everything the detail page shows: facts, diagrams, price history, similar rows; prices in
    `currency`."""
    rates = RateTable()
    now = timezone.now()
    offers = instance.current_offers
    # The kinds a dated price exists for: an undated price beside one is marked "older source".
    dated_kinds = {o.kind for o in offers if o.observed_at is not None}
    converted = [o for o in offers if o.currency != currency and o.exchange_rate_date]
    for offer in offers:
        offer.links = price_links(offer, instance.provider.slug)
        per_hour, per_gpu_hour = offer_usd(offer, instance.gpu_count, rates)
        offer.shown_per_hour = rates.display(per_hour, currency)
        offer.shown_per_gpu_hour = rates.display(per_gpu_hour, currency)
        offer.older_source = offer.observed_at is None and offer.kind in dated_kinds
    # The history drawn is the row's headline price's (InstanceType.best_offer), else the first.
    charted = next(
        (o for o in offers if o.pk == instance.best_offer_id), offers[0] if offers else None
    )
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
        "topology_narrow": topology_svg(instance, NARROW),
        "chart": chart,
        "single_observation": single,
        "charted": charted,
        # The reference rate a charged amount was converted at (its date is shown).
        "rate_date": max((o.exchange_rate_date for o in converted), default=None),
        "similar": with_display_prices(attach_paths(attach_row_offers(similar)), rates, currency),
        "currency": currency,
        "display_rate": rates.display_rate(currency),
        "form": form or CorrectionForm(),
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
        "expected": expected_on_page(instance),
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
@render_limited
def instance_detail(request: HttpRequest, provider: str, slug: str) -> HttpResponse:
    """One instance type with every fact and its source."""
    if provider in Provider.ALIASES:
        canonical = {"provider": Provider.ALIASES[provider], "slug": slug}
        return redirect("offerings:instance-detail", permanent=True, **canonical)
    try:
        instance = _visible_instance(provider, slug)
    except Http404:
        renamed = _renamed_to(provider, slug)
        if renamed is None:
            raise
        target = reverse(
            "offerings:instance-detail", kwargs={"provider": provider, "slug": renamed}
        )
        query = request.GET.urlencode()
        return redirect(f"{target}?{query}" if query else target, permanent=True)
    context = _detail_context(instance, request_currency(request)) | {
        "reported": request.GET.get("reported") == "1"
    }
    return render(request, "offerings/instance_detail.html", context)


def _renamed_to(provider: str, slug: str) -> str | None:
    """The slug of the visible type that `slug` names by one of its aliases (a former name or
    slug, kept when the type was renamed), or None."""
    candidates = InstanceType.objects.visible().filter(provider__slug=provider).exclude(aliases="")
    for current, aliases in candidates.values_list("slug", "aliases"):
        if any(slug in (alias, instance_slug(alias)) for alias in aliases.splitlines()):
            return current
    return None


@require_POST
@ratelimit(key="ip", rate=lambda group, request: settings.CORRECTION_RATE, block=False)
def report_correction(request: HttpRequest, provider: str, slug: str) -> HttpResponse:
    """Take a reader's correction into the review queue; nothing is sent anywhere."""
    instance = _visible_instance(Provider.ALIASES.get(provider, provider), slug)
    if getattr(request, "limited", False):
        context = _detail_context(instance, request_currency(request)) | {"limited": True}
        return render(request, "offerings/instance_detail.html", context, status=429)
    form = CorrectionForm(request.POST)
    if not form.is_valid():
        context = _detail_context(instance, request_currency(request), form)
        return render(request, "offerings/instance_detail.html", context, status=400)
    report = form.save(commit=False)
    report.instance = instance
    report.save()
    url = reverse("offerings:instance-detail", kwargs={"provider": provider, "slug": slug})
    return redirect(f"{url}?reported=1#report")


@require_safe
@cached_response({"ids", "from", "currency"})
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
    currency = request_currency(request)
    rows = with_display_prices(attach_row_offers(rows), RateTable(), currency)
    table = compare_table(rows, currency)
    # The filter state the reader came from, as a query string for the way back.
    origin = request.GET.get("from", "")
    back = reverse("offerings:instance-list") + "?" + origin[:2000] if origin else ""
    context = {"rows": rows, "table": table, "back": back, "currency": currency}
    return render(request, "offerings/compare.html", context)


# The GPU page's groups, each by the condition on its types (the filters' rules, written once).
LINK_GROUPS = (
    ("none", _("PCIe only"), Q(gpu_link__technology=LinkTechnology.NONE)),
    ("nvswitch", _("All GPUs on one NVSwitch"), nvswitch_condition(True)),
    (
        "partial",
        _("NVLink bridges or direct mesh"),
        Q(gpu_link__technology__in=NVLINK_TECHNOLOGIES, gpu_link__topology__in=PARTIAL_TOPOLOGIES),
    ),
    ("nvlink", _("NVLink, topology unknown"), Q(gpu_link__technology__in=NVLINK_TECHNOLOGIES)),
)
UNKNOWN_LINK = _("GPU-to-GPU link unknown")


def link_group() -> Case:
    """Which of LINK_GROUPS a type falls in (the first that holds), or "unknown"."""
    return Case(
        *(When(condition, then=Value(key)) for key, _label, condition in LINK_GROUPS),
        default=Value("unknown"),
    )


# The cheapest types of each link group the GPU page shows; the filter table has them all.
GPU_PAGE_GROUP_ROWS = 20


@require_safe
@cached_response({"currency"})
def gpu_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A GPU's specs and the instances with it by GPU-to-GPU link, cheapest per GPU-hour first:
    each group's cheapest GPU_PAGE_GROUP_ROWS, with its count (the table lists them all)."""
    gpu = get_object_or_404(GpuModel, slug=slug)
    listing = parse_listing_query(QueryDict(f"gpu={slug}"), InstanceType.objects.for_table())
    matching = listing.filterset.qs
    labels = {key: str(label) for key, label, _condition in LINK_GROUPS} | {
        "unknown": str(UNKNOWN_LINK)
    }
    grouped: dict[str, list[int]] = {}
    for pk, key in matching.annotate(link_group=link_group()).values_list("pk", "link_group"):
        grouped.setdefault(labels[key], []).append(pk)
    shown = {pk for ids in grouped.values() for pk in ids[:GPU_PAGE_GROUP_ROWS]}
    rows = attach_paths(attach_row_offers(matching.filter(pk__in=shown)))
    currency = request_currency(request)
    rates = RateTable()
    loaded = {row.pk: row for row in with_display_prices(rows, rates, currency)}
    index = price_index(gpu.slug, rates)
    # In the page's currency, or in USD when no reference rate converts to it.
    index_currency = currency if rates.display(Decimal(1), currency) is not None else "USD"
    shown_weeks = [
        (week.start, rates.display(week.median_usd_per_gpu_hour, index_currency), week.offers)
        for week in index.weeks
    ]
    groups = [  # a row gone since its id was read (a write in between) is left out
        (name, [loaded[pk] for pk in ids[:GPU_PAGE_GROUP_ROWS] if pk in loaded], len(ids))
        for name, ids in grouped.items()
    ]
    return render(
        request,
        "offerings/gpu_detail.html",
        {
            "gpu": gpu,
            "groups": groups,
            "count": sum(len(ids) for ids in grouped.values()),
            "currency": currency,
            "index": index,
            "index_weeks": shown_weeks,
            "index_currency": index_currency,
            "index_chart": price_index_svg(shown_weeks, index_currency) if index.drawable else "",
            "index_min_offers": MIN_OFFERS,
            "index_min_weeks": MIN_WEEKS,
        },
    )


@require_safe
@cached_response({"currency"})
def provider_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A provider's offerings, interconnect story, multi-node options and data freshness."""
    if slug in Provider.ALIASES:
        return redirect("offerings:provider-detail", permanent=True, slug=Provider.ALIASES[slug])
    provider = get_object_or_404(
        Provider.objects.exclude(kind=Provider.Kind.PRICE_SOURCE), slug=slug
    )
    rows = attach_paths(
        attach_row_offers(
            parse_listing_query(QueryDict(f"provider={slug}&sort=gpu_count")).filterset.qs
        )
    )
    rates = RateTable()
    currency = request_currency(request)
    with_display_prices(rows, rates, currency)
    fabrics: dict[str, int] = {}
    for row in rows:
        name = str(row.fabric.get_technology_display())
        fabrics[name] = fabrics.get(name, 0) + 1
    offers = [offer for row in rows for offer in row.current_offers]
    runs = ScrapeRun.objects.filter(provider=provider)
    context = {
        "provider": provider,
        "rows": rows,
        "currency": currency,
        "fabrics": sorted(fabrics.items(), key=lambda item: -item[1]),
        "multi_node": [row for row in rows if row.fabric.multi_node],
        "sales_only": [row for row in rows if row.fabric.sales_only],
        "newest": max((o.observed_at for o in offers if o.observed_at), default=None),
        "oldest": min((o.observed_at for o in offers if o.observed_at), default=None),
        "stale": sum(1 for o in offers if o.is_stale()),
        "offer_count": len(offers),
        "last_run": runs.first(),
        # A replay reads a recording: it is reported as one, never as a refresh.
        "last_good_run": runs.filter(status=ScrapeRun.Status.SUCCEEDED, replay_of="").first(),
        "dated": sum(1 for o in offers if o.observed_at is not None),
        "stale_hours": settings.PRICE_STALE_AFTER_HOURS,
    }
    return render(request, "offerings/provider_detail.html", context)
