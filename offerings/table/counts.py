"""The filter page's counts, in one aggregate query: how many rows match, how many each facet's
choice would give (its own parameter left out, every other kept), and of the rows the other
filters match, how many have a price that reports capacity, and from which providers."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Exists, Q

from offerings.models import FabricTechnology, InstanceType, OfferKind, localized_field
from offerings.table.parameters import (
    ListingParameters,
    ListingQuery,
    matching_offers,
    offer_condition,
    parameter_condition,
    row_condition,
)

# The counts read the row price tests from an inner query. Its LIMIT (never reached) keeps
# PostgreSQL from folding the inner query into the aggregate, which would copy each test into
# every figure that reads it and evaluate it once per figure and row instead of once per row.
INNER_QUERY_LIMIT = 2**62


@dataclass(frozen=True)
class ListingCounts:
    total: int | None  # rows matching every filter; None for an invalid query
    facets: dict[str, dict[str, int]]
    availability: dict | None


class PriceTests:
    """The per-row price tests the counts read, each distinct condition once: an annotation
    (`Exists` over the row's current offers) and a Q on it for the figures."""

    def __init__(self) -> None:
        self.annotations: dict[str, Exists] = {}
        self._names: dict[Q, str] = {}

    def rows_with(self, condition: Q | None) -> Q:
        """Rows with a current offer meeting `condition` (all rows when there is none)."""
        if condition is None:
            return Q()
        name = self._names.setdefault(condition, f"price_test_{len(self._names)}")
        self.annotations[name] = Exists(matching_offers(condition))
        return Q(**{name: True})


def count_aggregates(parameters: ListingParameters, tests: PriceTests) -> dict:
    """Every figure of the filter page's counts, as aggregates over the rows the row parameters
    but `fabric` keep; the price conditions they read are added to `tests`."""
    fabric = parameter_condition(parameters, "fabric")
    every_price = tests.rows_with(offer_condition(parameters))
    others = offer_condition(parameters, without="available")
    other_prices = tests.rows_with(others)
    reported = Q(available__isnull=False)
    reporting = tests.rows_with(reported if others is None else others & reported)
    known = fabric & other_prices & reporting
    kind_others = offer_condition(parameters, without="price_kind")
    provider_name = localized_field("provider__name", "provider__name_zh")

    def of_kind(kind: str) -> Q:
        """Rows with a matching price of this kind, the other price conditions kept."""
        if kind_others is None:
            # No other price condition: the kinds of each row's current offers are on the row.
            return Q(offer_kinds__contains=[kind])
        return tests.rows_with(kind_others & Q(kind=kind))

    return {
        "total": Count("pk", filter=fabric & every_price),
        **{
            f"fabric:{tech}": Count("pk", filter=every_price & Q(fabric__technology=tech))
            for tech in FabricTechnology.values
        },
        **{f"kind:{kind}": Count("pk", filter=fabric & of_kind(kind)) for kind in OfferKind.values},
        "availability:total": Count("pk", filter=fabric & other_prices),
        "availability:known": Count("pk", filter=known),
        "availability:providers": ArrayAgg(
            provider_name, filter=known, distinct=True, order_by=provider_name, default=[]
        ),
    }


def listing_counts(listing: ListingQuery) -> ListingCounts:
    """The page's counts for a parsed listing, in one query (none for an invalid one)."""
    if not listing.is_valid:
        return ListingCounts(None, {}, None)
    parameters = listing.parameters
    rows = InstanceType.objects.visible().filter(row_condition(parameters, without="fabric"))
    tests = PriceTests()
    aggregates = count_aggregates(parameters, tests)
    if tests.annotations:
        rows = rows.annotate(**tests.annotations).order_by()[:INNER_QUERY_LIMIT]
    counts = rows.aggregate(**aggregates)
    facets: dict[str, dict[str, int]] = {"fabric": {}, "price_kind": {}}
    availability: dict = {}
    for key, value in counts.items():
        name, _, choice = key.partition(":")
        if name == "availability":
            availability[choice] = value
        elif name != "total" and value:
            facets["fabric" if name == "fabric" else "price_kind"][choice] = value
    return ListingCounts(counts["total"], facets, availability)
