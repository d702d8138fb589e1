"""The estimator's page `/estimate/` and `GET /api/estimate` (the README's "Public interface"), and
the parsing of their query string.

Catalog rows become `InstanceSpec`s, the query string a `Job` (`parse_job`), and
`offerings.estimator.estimation.estimate()` does the rest. Page and API go through
`run_estimate()`, so they show the same numbers in the same order: every float in the output is
rounded to 6 significant digits, once. Both are paginated like `/api/instances` (`page`,
`page_size`), with one ranking across the pages: every matching instance is estimated and ranked,
then the page is cut from the ranking. What the page shows besides the numbers is made in
offerings.estimator.page and offerings.estimator.chart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_safe

from offerings.estimator.calibration import RECORDED_RUNS
from offerings.estimator.chart import CHART_INSTANCES, efficiency_chart
from offerings.estimator.core import (
    FORMULA_MESSAGES,
    JOB_KEYS,
    MODES,
    UNCALIBRATED_KINDS,
    InstanceSpec,
    Job,
    parse_job,
)
from offerings.estimator.estimation import SIGNIFICANT_DIGITS, estimate, rounded, tier
from offerings.estimator.estimation import assumptions as estimator_assumptions
from offerings.estimator.page import (
    BAR_WIDTH,
    EXAMPLES,
    INFERENCE_FIELDS,
    JOB_FIELDS,
    MODE_LABELS,
    calibration_rows,
    count_choices,
    display_row,
    field_errors,
    held_out_rows,
    interconnect_summary,
    job_assumptions,
    job_inputs,
    link_label,
    money_formatter,
    result_segments,
    tier_sentence,
    with_default_gpus,
)
from offerings.estimator.phrases import AT_LEAST, FieldError, Phrase
from offerings.estimator.ranking import (
    first_results,
    instance_spec,
    lean_rows,
    ranked_results,
)
from offerings.models import InstanceType, OfferKind
from offerings.money import RateTable
from offerings.table.parameters import (
    ListingQuery,
    invalid_parameters,
    known_parameters,
    parse_instance_ids,
    parse_listing_query,
)
from offerings.table.reference import listing_reference
from offerings.table.rows import attach_row_offers
from offerings.web.caching import absolute_url, cached_response
from offerings.web.context import request_currency
from offerings.web.paths import instance_paths

#: Listing options that mean nothing here (the ranking is fixed): ignored. `page` and
#: `page_size` are read as `/api/instances` reads them; `currency` is the page's money (the API
#: answers USD).
IGNORED_OPTIONS = frozenset({"format", "currency", "sort"})
ESTIMATE_PARAMETERS = frozenset({"ids", *JOB_KEYS}) | IGNORED_OPTIONS
IDS_MAX = 100
#: parse_job accepts any mfu > 0; below this the compute time overflows a float.
MFU_MIN = 0.001


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


@dataclass
class EstimateQuery:
    """A parsed estimator request: the filters, the job, the `ids` and every error by name."""

    listing: ListingQuery
    job: Job | None
    errors: dict[str, list[str]] = field(default_factory=dict)
    asked: bool = False  # params_b or mode was given: the page shows results, not the empty form

    @property
    def is_valid(self) -> bool:
        return not self.errors and self.job is not None


def resolve_ids(values: list[str]) -> tuple[set[int] | None, list[str]]:
    """`ids` -> visible instance pks (None: not given), and error messages naming what failed."""
    given = [value for value in values if value.strip()]
    if not given:
        return None, []
    if len(given) > 1:
        return None, ["Give this parameter once, with the instances separated by commas."]
    visible = InstanceType.objects.visible().select_related("provider")
    rows, errors = parse_instance_ids(given[0], queryset=visible, maximum=IDS_MAX)
    return (None, errors) if errors else ({row.pk for row in rows}, [])


def parse_estimate_query(query: QueryDict) -> EstimateQuery:
    """Validate filters, `ids` and the job together, so one answer names every bad parameter."""
    errors: dict[str, list[str]] = {}
    pks, id_errors = resolve_ids(query.getlist("ids"))
    if id_errors:
        errors["ids"] = id_errors
    queryset = InstanceType.objects.for_table()  # the chosen offer only: no list of offers
    if pks is not None:
        queryset = queryset.filter(pk__in=pks)
    listing = parse_listing_query(query, queryset=queryset, extra=ESTIMATE_PARAMETERS)
    for name, messages in listing.errors.items():
        errors.setdefault(name, []).extend(messages)
    job, job_errors = parse_job({name: query.getlist(name) for name in query})
    if job is not None and job.mfu < MFU_MIN:
        job_errors = {"mfu": [FieldError(AT_LEAST, {"n": MFU_MIN})]}
        job = None
    for name, messages in field_errors(job_errors).items():
        errors.setdefault(name, []).extend(messages)
    asked = any(value.strip() for name in ("params_b", "mode") for value in query.getlist(name))
    return EstimateQuery(listing=listing, job=job, errors=errors, asked=asked)


# --------------------------------------------------------------------------------------------
# Catalog rows -> InstanceSpec, and the estimate
# --------------------------------------------------------------------------------------------


@dataclass
class EstimateRun:
    specs: dict[Any, InstanceSpec]  # every matching instance (name and address only if shown)
    # {"results": [...], "assumptions": {...}}: every result, ranked, with the figures the
    # ranking and the page's counts, summary and chart read (offerings.estimator.ranking);
    # results are left empty for the API, which shows only `page`
    data: dict[str, Any]
    page: Page  # the requested page, as full records (the API's results)
    # (instance id, nodes) -> (verdict, reasons) as phrases, for the page to say in its language
    phrases: dict[tuple[Any, int], tuple[Phrase | None, tuple[Phrase, ...]]] = field(
        default_factory=dict
    )
    # (instance id, nodes) -> the full record, for every result built in full
    records: dict[tuple[Any, int], dict[str, Any]] = field(default_factory=dict)
    # instance id -> the kind of the price its costs use (a row's headline can be spot or a
    # reservation when it has no on-demand price), for every instance built in full
    price_kinds: dict[Any, str] = field(default_factory=dict)


def full_records(
    query: EstimateQuery,
    ids: set,
    rates: RateTable,
    absolute: Callable[[str], str],
    only: set[tuple[Any, int]] | None = None,
) -> tuple[dict[tuple[Any, int], dict[str, Any]], dict, dict[Any, InstanceSpec], dict]:
    """The full, rounded records (and phrases) of every result of the instances `ids`, built by
    `estimate()` from their rows as the filters chose them (every node count of an instance is
    estimated: a verdict reads them all); `only`: the (id, nodes) keys to keep."""
    if not ids:
        return {}, {}, {}, {}
    rows = attach_row_offers(query.listing.filterset.qs.filter(pk__in=ids))
    path_of = instance_paths()
    specs = {row.pk: instance_spec(row, rates, absolute(path_of(row))) for row in rows}
    kinds = {row.pk: row.row_offer.kind for row in rows if row.row_offer is not None}
    result = estimate(specs.values(), query.job)
    records, phrases = {}, {}
    for row in result.results:
        key = (row.instance["id"], row.nodes)
        if only is None or key in only:
            records[key] = rounded(row.to_dict())
            phrases[key] = (row.verdict_phrase, row.reason_phrases)
    return records, phrases, specs, kinds


def run_estimate(
    query: EstimateQuery, absolute: Callable[[str], str], *, for_page: bool = False
) -> EstimateRun | None:
    """Rank every matching (instance, node count); build full records for the page only.

    The ranking reads each result's tier and rounded cost (offerings.estimator.ranking), the
    page's records come from `estimate()` as before, so page and API show the same numbers in
    the same order at any catalog size. `for_page` (the page, not the API): also every result
    as a dict under `data["results"]` (the page's counts, summary and chart read them all) and
    the records of every inference result that fits and of the chart's top instances (the page
    names them). Returns None, with the error under `page` in `query.errors`, for a page past
    the last.
    """
    if query.job is None:
        raise ValueError("run_estimate needs a valid query")
    rates = RateTable()
    lean = lean_rows(query.listing.filterset.qs, rates)
    specs = {pk: spec for pk, spec, _ in lean}  # the hardware; the shown rows' in full below
    options = query.listing.options
    first = None
    if not for_page:  # the API shows one page: rank only as far as it reaches
        first = first_results(lean, query.job, rounded, options["page"] * options["page_size"])
    if first is None:
        ranked = ranked_results(lean, query.job, rounded)
        page = query.listing.page_of(ranked, query.errors)
    else:  # training: one result per row and node count, the page's from `first`
        total = sum(len(query.job.node_counts(spec.gpu_count)) for _, spec, _ in lean)
        page = query.listing.page_of(range(total), query.errors)
        if page is not None:
            page.object_list = first[page.start_index() - 1 : page.end_index()]
    if page is None:
        return None
    data = {"results": [], "assumptions": rounded(estimator_assumptions(query.job))}
    data["assumptions"]["rounding"] = (
        f"Every float in results is rounded to {SIGNIFICANT_DIGITS} significant digits."
    )
    wanted = {result.id for result in page.object_list}
    inference = not query.job.is_training
    if for_page:  # the page: its counts, summary and chart read every result
        data["results"] = results = [result.as_result() for result in ranked]
        if inference:
            wanted |= {result.id for result in ranked if result.fits}
        else:  # the chart names its top instances
            top = dict.fromkeys(r.id for r in ranked if r.efficiency is not None)
            wanted |= set(list(top)[:CHART_INSTANCES])
    only = None if for_page else {(result.id, result.nodes) for result in page.object_list}
    records, phrases, named, kinds = full_records(query, wanted, rates, absolute, only)
    if for_page:
        for result in results:  # the shown instances carry their names and addresses
            full = records.get((result["instance"]["id"], result["nodes"]))
            if full is not None:
                result["instance"] = full["instance"]
    specs.update(named)
    page.object_list = [records[(result.id, result.nodes)] for result in page.object_list]
    return EstimateRun(
        specs=specs, data=data, page=page, phrases=phrases, records=records, price_kinds=kinds
    )


# --------------------------------------------------------------------------------------------
# The API
# --------------------------------------------------------------------------------------------


def estimate_parameters() -> set[str]:
    """What the estimator reads: the filters, the listing options and the job."""
    return known_parameters() | ESTIMATE_PARAMETERS


def absolute(request: HttpRequest) -> Callable[[str], str]:
    return lambda path: absolute_url(request, path)


@require_safe
@cached_response(estimate_parameters)
def api_estimate(request: HttpRequest) -> JsonResponse:
    """`GET /api/estimate`: one page of the ranked estimates, and every assumption used."""
    query = parse_estimate_query(request.GET)
    if not query.is_valid:
        return invalid_parameters(query.errors)
    run = run_estimate(query, absolute(request))
    if run is None:
        return invalid_parameters(query.errors)
    next_url = None
    if run.page.has_next():
        following = request.GET.copy()
        following["page"] = run.page.next_page_number()
        next_url = absolute_url(request, f"{request.path}?{following.urlencode()}")
    body = {
        "count": run.page.paginator.count,
        "next": next_url,
        "results": list(run.page.object_list),
        "assumptions": run.data["assumptions"],
    }
    return JsonResponse(body, json_dumps_params={"ensure_ascii": False, "allow_nan": False})


# --------------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------------


def page_context(
    request: HttpRequest, query: EstimateQuery, run: EstimateRun | None, asked: QueryDict
) -> dict[str, Any]:
    """The page's context; `asked` is the query as estimated (with the page's default GPU
    counts), which the link to the same answer as JSON carries."""
    form = query.listing.filterset.form
    for name, messages in query.errors.items():
        if name in form.fields and name not in form.errors:
            form.add_error(name, messages)
    mode = request.GET.get("mode", "") if query.asked else "train-fsdp"
    count_name, counts = count_choices(request.GET)
    context: dict[str, Any] = {
        "query": query,
        "form": form,
        "errors": query.errors,
        "job_fields": job_inputs(request.GET, query.errors, JOB_FIELDS),
        "inference_fields": job_inputs(request.GET, query.errors, INFERENCE_FIELDS),
        "modes": [(value, MODE_LABELS[value]) for value in MODES],
        "mode": mode,
        "mode_known": mode in MODES,
        "count_name": count_name,
        "counts": counts,
        "ids": request.GET.get("ids", ""),
        "examples": EXAMPLES,
        "formulas": [gettext(message) % {} for message in FORMULA_MESSAGES],
        "calibration": calibration_rows(),
        "held_out": held_out_rows(),
        "recorded_runs": len(RECORDED_RUNS),
        "recorded_fitted": sum(run.fitted for run in RECORDED_RUNS),
        "uncalibrated": {link_label(k): gettext(v) for k, v in UNCALIBRATED_KINDS.items()},
        "api_url": f"{reverse('api-estimate')}?{asked.urlencode()}",
        "currency": request_currency(request),
    }
    if run is None:
        return context
    job = query.job
    inference = not job.is_training
    results = run.data["results"]  # every result, ranked; the page shows run.page of them

    reference = listing_reference(request)
    money = money_formatter(context["currency"], reference.rates)
    context["display_rate"] = reference.rates.display_rate(context["currency"])

    # The providers by their names in the page's language (the results carry their slugs).
    names = dict(reference.choices["provider"])

    def shown(result: dict[str, Any]) -> dict[str, Any]:
        key = (result["instance"]["id"], result["nodes"])
        row = display_row(result, job.overlap, run.phrases.get(key, (None, ())), money)
        slug = result["instance"].get("provider", "")
        kind = run.price_kinds.get(result["instance"]["id"])
        return row | {
            "provider_name": names.get(slug, slug),
            # Said beside the cost when it is not an on-demand price.
            "price_kind": None if kind in (None, OfferKind.ON_DEMAND) else OfferKind(kind).label,
        }

    counts = {1: 0, 2: 0, 3: 0}
    for result in results:
        counts[tier(result, inference)] += 1
    page = run.page
    rows = []
    for position, result in enumerate(page.object_list, start=page.start_index()):
        row = shown(result)
        row |= {"rank": position, "tier": tier(result, inference)}
        rows.append(row)
    holders = [
        shown(run.records[(result["instance"]["id"], result["nodes"])])
        for result in results
        if inference and result["fits"]
    ]
    assumptions = run.data["assumptions"]
    context |= {
        "job": job,
        "training": job.is_training,
        "result_count": len(results),
        "instance_count": len(run.specs),
        "tier_counts": counts,
        "tier_sentence": tier_sentence(counts, job.is_training),
        "segments": result_segments(rows, job.is_training),
        "page": page,
        "holders": holders,
        "summary": interconnect_summary(results, run.specs, job) if job.is_training else [],
        "chart": efficiency_chart(results, job, run.specs, names) if job.is_training else None,
        "assumptions": assumptions,
        "job_assumptions": job_assumptions(assumptions),
        "significant_digits": SIGNIFICANT_DIGITS,
        "efficiency_factors": [
            (link_label(kind), value, kind in UNCALIBRATED_KINDS)
            for kind, value in assumptions["efficiency_factors"].items()
        ],
        "latencies": [
            (
                link_label(kind),
                value,
                assumptions["latency_us_per_step_small_messages"].get(kind),
            )
            for kind, value in assumptions["latency_us_per_step"].items()
        ],
        "bar_width": BAR_WIDTH,
    }
    return context


@require_safe
@cached_response(estimate_parameters)
def estimate_page(request: HttpRequest) -> HttpResponse:
    """The estimator: the job form, the ranked table, the chart, formulas and calibration."""
    asked = with_default_gpus(request.GET)  # the page asks for GPUs, as the planner does
    query = parse_estimate_query(asked)
    if not query.asked:
        # The empty form (with worked examples); only filter errors, such as ORM-shaped
        # names, count, since no job was asked for.
        query.errors = {k: v for k, v in query.errors.items() if k not in JOB_KEYS}
    run = run_estimate(query, absolute(request), for_page=True) if query.is_valid else None
    status = 400 if query.errors else 200
    context = page_context(request, query, run, asked)
    return render(request, "estimator/estimate.html", context, status=status)
