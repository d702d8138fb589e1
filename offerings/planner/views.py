"""`GET /api/plan` and `/plan/`: the shapes that give N GPUs, feasible first."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.db.models import FETCH_PEERS, Q, prefetch_related_objects
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from offerings.estimator import core as estimator
from offerings.estimator.estimation import assumptions as estimator_assumptions
from offerings.estimator.page import MODE_LABELS
from offerings.models import (
    InstanceType,
    Offer,
    OfferKind,
    ProviderReadiness,
    listing_prefetches,
    undated_last,
)
from offerings.money import RateTable
from offerings.planner import core
from offerings.planner.jobs import (
    JOB_PARAMETERS,
    TOKENS_TOTAL_MAX,
    Job,
    estimate_shapes,
    parse_job,
)
from offerings.purchase import purchase_modes_of
from offerings.table.parameters import (
    ListingQuery,
    invalid_parameters,
    known_parameters,
    match_condition,
    offer_condition,
    parse_listing_query,
)
from offerings.table.reference import listing_reference
from offerings.table.rows import detail_path, money
from offerings.web.caching import DISPLAY_ONLY, absolute_url, cached_response
from offerings.web.context import request_currency

PLAN_PARAMETERS = frozenset({"gpus", "max_price_per_hour", "tokens_total"})


@dataclass
class PlanQuery:
    gpus: int | None
    max_price_per_hour: Decimal | None
    listing: ListingQuery
    job: Job | None
    errors: dict[str, list[str]] = field(default_factory=dict)
    asked: bool = True
    tokens_total: int | None = None

    @property
    def is_valid(self) -> bool:
        return not self.errors


def parse_plan_query(query: QueryDict, *, required: bool = True, page: bool = False) -> PlanQuery:
    """Validate `gpus`, `max_price_per_hour`, the job and the listing's filters, all at once
    (`page`: the form's empty `mode` means no job)."""
    errors: dict[str, list[str]] = {}
    gpus = None
    raw = query.get("gpus", "").strip()
    if not raw:
        if required:
            errors["gpus"] = [
                _("Give the number of GPUs you need (1 to %(max)s).") % {"max": core.MAX_GPUS}
            ]
    else:
        try:
            gpus = int(raw)
            if not 1 <= gpus <= core.MAX_GPUS:
                raise ValueError
        except ValueError:
            errors["gpus"] = [
                _("Give a whole number of GPUs from 1 to %(max)s.") % {"max": core.MAX_GPUS}
            ]
            gpus = None
    budget = None
    raw = query.get("max_price_per_hour", "").strip()
    if raw:
        try:
            budget = Decimal(raw)
            if not budget.is_finite() or budget <= 0:
                raise InvalidOperation
        except InvalidOperation:
            errors["max_price_per_hour"] = [_("Give a positive amount in US dollars per hour.")]
            budget = None
    listing = parse_listing_query(query, extra=PLAN_PARAMETERS | JOB_PARAMETERS)
    errors.update(listing.errors)
    job, job_errors = parse_job(query, page=page)
    errors.update(job_errors)
    tokens_total = None
    raw = query.get("tokens_total", "").strip()
    if raw and not job_errors and not (page and job is None):
        # On the page, the form's "no job" choice leaves a run length in the form unread.
        if job is None or not job.is_training:
            errors["tokens_total"] = [
                _("A run length needs a training job: give params_b and a training mode.")
            ]
        elif not (len(raw) <= 16 and raw.isascii() and raw.isdigit()) or not (
            1 <= int(raw) <= TOKENS_TOTAL_MAX
        ):
            errors["tokens_total"] = [
                _("Give a whole number of tokens from 1 to %(max)s.") % {"max": TOKENS_TOTAL_MAX}
            ]
        else:
            tokens_total = int(raw)
    return PlanQuery(
        gpus,
        budget,
        listing,
        job,
        errors,
        asked=bool(set(query) - DISPLAY_ONLY),
        tokens_total=tokens_total,
    )


# The price kinds a plan weighs unless `price_kind` names others.
PLANNED_KINDS = (
    OfferKind.ON_DEMAND,
    OfferKind.RESERVED,
    OfferKind.CAPACITY_BLOCK,
)


def plan(query: PlanQuery) -> list[core.Shape]:
    """Every shape for the request, ranked: the matching rows, then each row's cheapest current
    offer per (price kind, term) in one DISTINCT ON query."""
    parameters = query.listing.parameters
    matching = InstanceType.objects.for_table().filter(match_condition(parameters))
    if query.job is None:  # the ranking reads a few fields; the page's rows load in full later
        rows = [core.PlanRow.of(row) for row in matching.values_list(*core.PlanRow.FIELDS)]
        rows.sort(key=lambda row: row.pk)
    else:  # the job's estimate reads each type's GPU, link and fabric
        rows = list(matching.order_by("pk"))
    conditions = offer_condition(parameters)
    # A cluster planned on spot capacity can be taken away mid-run: spot prices compete only
    # when the buyer asks for them (`price_kind=spot`).
    kinds = Q() if "price_kind" in parameters.given else Q(kind__in=PLANNED_KINDS)
    offers: dict[int, list[core.PlanOffer]] = {}
    cheapest = (
        Offer.objects.current()
        .filter(instance__in=matching.values("pk"), price_per_gpu_hour_usd__isnull=False)
        .filter(kinds)
        .filter(conditions if conditions is not None else Q())
        # Dated before undated within a way to buy, as the row's headline (headline_first).
        .annotate(undated=undated_last())
        .order_by(
            "instance_id",
            "kind",
            "term_months",
            "undated",
            "price_per_gpu_hour_usd",
            "region__code",
            "pk",
        )
        .distinct("instance_id", "kind", "term_months")
        .values_list(*core.PlanOffer.FIELDS)
    )
    for row in cheapest:
        offer = core.PlanOffer.of(row)
        offers.setdefault(offer.instance_id, []).append(offer)
    stated = ProviderReadiness.objects.filter(fact="max_self_serve_gpus", gpus__isnull=False)
    shapes = core.shapes_for(
        rows,
        offers,
        query.gpus,
        RateTable(),
        priced_only=conditions is not None,
        max_price_per_hour=query.max_price_per_hour,
        provider_gpus=dict(stated.values_list("provider_id", "gpus")),
    )
    if query.job is not None:
        estimate_shapes(shapes, query.job, query.tokens_total)
    return core.ranked(shapes, by_job=query.job is not None)


def with_page_rows(shapes: list[core.Shape]) -> None:
    """Load the shown rows in full (a shape ranked from a PlanRow gets its type, provider, GPU,
    link and fabric) with their purchase modes (curated, and the kinds current prices show)."""
    light = {shape.instance.pk for shape in shapes if isinstance(shape.instance, core.PlanRow)}
    if light:
        # Not `for_table()`, which keeps visible rows only: a row ranked a moment ago is shown.
        full = InstanceType.objects.select_related("provider", "gpu", "gpu_link", "fabric")
        full = full.fetch_mode(FETCH_PEERS).in_bulk(light)
        for shape in shapes:
            if isinstance(shape.instance, core.PlanRow):
                shape.instance = full.get(shape.instance.pk, shape.instance)
        # A type deleted since it was ranked (a write in between) is left out of the page.
        shapes[:] = [shape for shape in shapes if not isinstance(shape.instance, core.PlanRow)]
    instances = list({shape.instance.pk: shape.instance for shape in shapes}.values())
    prefetch_related_objects(instances, *listing_prefetches())
    for shape in shapes:
        shape.modes = purchase_modes_of(shape.instance)


def serialize_shape(shape: core.Shape, absolute) -> dict:
    instance = shape.instance
    offer = shape.offer
    item = {
        "instance": {
            "id": instance.pk,
            "provider": instance.provider.slug,
            "name": instance.name,
            "url": absolute(detail_path(instance)),
        },
        "nodes": shape.nodes,
        "gpus": shape.gpus,
        "feasible": shape.feasible,
        "bookable": shape.bookable,
        "reason": shape.reason,
        "warnings": shape.warnings,
        "region": offer.region.code if offer else None,
        "available": offer.available if offer else None,
        "price_kind": offer.kind if offer else None,
        "term_months": offer.term_months if offer else None,
        "price_per_hour_usd": money(shape.price_per_hour_usd),
        "price_per_gpu_hour_usd": money(shape.price_per_gpu_hour_usd),
        "fabric": instance.fabric.technology,
        "fabric_gbits_per_s_per_gpu": shape.fabric_gbits_per_s_per_gpu,
        "network_gbits_per_s_per_gpu": shape.network_gbits_per_s_per_gpu,
        "one_nvlink_domain": shape.one_nvlink_domain,
        "purchase_modes": [mode.as_json() for mode in shape.modes],
    }
    if shape.estimate is not None:
        item.update(shape.estimate)
    return item


def assumptions(query: PlanQuery) -> dict:
    return {
        "gpus": query.gpus,
        "max_price_per_hour_usd": float(query.max_price_per_hour)
        if query.max_price_per_hour
        else None,
        "ranking": (
            "price_per_hour_usd"
            if query.job is None
            else "cost_per_billion_tokens_usd"
            if query.job.is_training
            else "cost_per_hour_usd"
        ),
        "job": estimator_assumptions(query.job) if query.job else None,
        "tokens_total": query.tokens_total,
    }


def plan_parameters() -> set[str]:
    """What the planner reads: the filters, the listing options, the shape and the job."""
    return known_parameters() | PLAN_PARAMETERS | JOB_PARAMETERS


@require_safe
@cached_response(plan_parameters)
def api_plan(request: HttpRequest) -> JsonResponse:
    """`GET /api/plan`: one page of the ranked shapes."""
    query = parse_plan_query(request.GET)
    if not query.is_valid:
        return invalid_parameters(query.errors)
    page = query.listing.page_of(plan(query), query.errors)
    if page is None:
        return invalid_parameters(query.errors)
    next_url = None
    if page.has_next():
        following = request.GET.copy()
        following["page"] = page.next_page_number()
        next_url = absolute_url(request, f"{request.path}?{following.urlencode()}")
    with_page_rows(page.object_list)
    body = {
        "count": page.paginator.count,
        "next": next_url,
        "results": [
            serialize_shape(shape, lambda path: absolute_url(request, path)) for shape in page
        ],
        "assumptions": assumptions(query),
    }
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False, "allow_nan": False})


@require_safe
@cached_response(plan_parameters)
def plan_page(request: HttpRequest) -> HttpResponse:
    """`/plan/`: the form and its shapes, in the page's language. A bad parameter answers 400
    with the page and its message at the field, as `/` and `/estimate/` do. Only a name the page
    reads asks for a plan: a link with nothing but ignored names (`utm_*`) is the empty form."""
    # The response cache left only the names the page reads; the reader's currency alone (a
    # link of the navigation carries it) asks for nothing.
    asked = bool(set(request.GET) - DISPLAY_ONLY)
    query = parse_plan_query(request.GET, required=asked, page=True)
    page = None
    if query.asked and query.is_valid and query.gpus is not None:
        page = query.listing.page_of(plan(query), query.errors)
        if page is not None:
            with_page_rows(page.object_list)
    context = {
        "query": query,
        "form": query.listing.filterset.form,
        "page": page,
        "feasible": sum(1 for shape in page.paginator.object_list if shape.feasible) if page else 0,
        "modes": [(value, MODE_LABELS[value]) for value in estimator.MODES],
        "currency": request_currency(request),
    }
    if context["currency"] != "USD":  # the rates convert the USD figures (`usd_as`)
        context["rates"] = listing_reference(request).rates
        context["display_rate"] = context["rates"].display_rate(context["currency"])
    return render(request, "planner/plan.html", context, status=400 if query.errors else 200)
