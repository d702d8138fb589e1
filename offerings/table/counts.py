"""The filter page's counts, in one aggregate query: how many rows match, how many each facet's
choice would give (its own parameter left out, every other kept), and of the rows the other
filters match, how many have a price that reports capacity, and from which providers."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Exists, Q

from offerings.models import FabricTechnology, InstanceType, OfferKind
from offerings.table.parameters import (
    ListingParameters,
    ListingQuery,
    matching_offers,
    offer_condition,
    parameter_condition,
    row_condition,
)


@dataclass(frozen=True)
class ListingCounts:
    total: int | None  # rows matching every filter; None for an invalid query
    facets: dict[str, dict[str, int]]
    availability: dict | None


def _kind_condition(parameters: ListingParameters, kind: str) -> Q:
    """Rows with a matching price of this kind, the other price conditions kept."""
    others = offer_condition(parameters, without="price_kind")
    if others is None:
        # No other price condition: the kinds of each row's current offers are kept on the row.
        return Q(offer_kinds__contains=[kind])
    return Exists(matching_offers(others & Q(kind=kind)))


def _reporting(parameters: ListingParameters) -> Q:
    """Rows with a price that reports capacity and meets every price condition but `available`."""
    others = offer_condition(parameters, without="available")
    reported = Q(available__isnull=False)
    return Exists(matching_offers(reported if others is None else others & reported))


def _offers(condition: Q | None) -> Q:
    return Q() if condition is None else Exists(matching_offers(condition))


def count_aggregates(parameters: ListingParameters) -> dict:
    """Every figure of the filter page's counts, as aggregates over the rows the row parameters
    but `fabric` keep (`listing_counts` filters on those once, so a long search is evaluated once
    per row, not once per figure)."""
    fabric = parameter_condition(parameters, "fabric")
    every_price = _offers(offer_condition(parameters))
    other_prices = _offers(offer_condition(parameters, without="available"))
    known = fabric & other_prices & _reporting(parameters)
    return {
        "total": Count("pk", filter=fabric & every_price),
        **{
            f"fabric:{tech}": Count("pk", filter=every_price & Q(fabric__technology=tech))
            for tech in FabricTechnology.values
        },
        **{
            f"kind:{kind}": Count("pk", filter=fabric & _kind_condition(parameters, kind))
            for kind in OfferKind.values
        },
        "availability:total": Count("pk", filter=fabric & other_prices),
        "availability:known": Count("pk", filter=known),
        "availability:providers": ArrayAgg(
            "provider__name", filter=known, distinct=True, order_by="provider__name", default=[]
        ),
    }


def listing_counts(listing: ListingQuery) -> ListingCounts:
    """The page's counts for a parsed listing, in one query (none for an invalid one)."""
    if not listing.is_valid:
        return ListingCounts(None, {}, None)
    parameters = listing.parameters
    rows = InstanceType.objects.visible().filter(row_condition(parameters, without="fabric"))
    counts = rows.aggregate(**count_aggregates(parameters))
    facets: dict[str, dict[str, int]] = {"fabric": {}, "price_kind": {}}
    availability: dict = {}
    for key, value in counts.items():
        name, _, choice = key.partition(":")
        if name == "availability":
            availability[choice] = value
        elif name != "total" and value:
            facets["fabric" if name == "fabric" else "price_kind"][choice] = value
    return ListingCounts(counts["total"], facets, availability)
