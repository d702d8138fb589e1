"""The filter page's counts: how many rows match, how many each facet's choice would give (other
filters kept), and how many report availability.

Counted from the listing already parsed for the page, each facet as if its own parameter were
not given. With neither `fabric` nor `price_kind` given, both facets count the same rows and
come from one query; otherwise one query each. With no price filter and no `available` either
(the default page), the facets, the availability and the number of matching rows all count
the same rows, and `listing_counts` reads them in one query (the paginator then needs none).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from offerings.caching import fetch_named, kept_statement, parameters_key
from offerings.filters import ListingQuery, row_parameters
from offerings.models import FabricTechnology, InstanceType, Offer, OfferKind

FABRIC = frozenset({"fabric"})
PRICE_KIND = frozenset({"price_kind"})


def _fabric_aggregates() -> dict:
    return {
        f"fabric:{tech}": Count("pk", filter=Q(fabric__technology=tech))
        for tech in FabricTechnology.values
    }


def _kind_aggregates() -> dict:
    return {
        f"kind:{kind}": Count("pk", filter=Q(offer_kinds__contains=[kind]))
        for kind in OfferKind.values
    }


def _split(counts: dict) -> dict[str, dict[str, int]]:
    facets: dict[str, dict[str, int]] = {"fabric": {}, "price_kind": {}}
    for key, n in counts.items():
        name, _, value = key.partition(":")
        if n:
            facets["fabric" if name == "fabric" else "price_kind"][value] = n
    return facets


def fabric_counts(listing: ListingQuery) -> dict[str, int]:
    """Rows per fabric technology if that technology were the only fabric chosen."""
    rows = listing.filterset.filter_rows(InstanceType.objects.visible(), skip=FABRIC)
    return _split(rows.aggregate(**_fabric_aggregates()))["fabric"]


def price_kind_counts(listing: ListingQuery) -> dict[str, int]:
    """Rows with a matching price of each kind, the other price filters kept."""
    filterset = listing.filterset
    rows = filterset.filter_rows(InstanceType.objects.visible(), prices=False, skip=PRICE_KIND)
    conditions = filterset.price_conditions(skip=PRICE_KIND)
    if conditions is None:
        # No other price condition: the kinds of each row's current offers are kept on the row.
        return _split(rows.aggregate(**_kind_aggregates()))["price_kind"]
    offers = Offer.objects.current().filter(conditions, instance__in=rows.values("pk"))
    grouped = offers.values("kind").annotate(n=Count("instance", distinct=True)).order_by()
    return {row["kind"]: row["n"] for row in grouped}


def facet_counts(listing: ListingQuery) -> dict[str, dict[str, int]]:
    """Counts keyed by parameter name, then value; one or two queries whatever the size."""
    if not listing.is_valid:
        return {}
    data = listing.filterset.form.cleaned_data
    shared = not data.get("fabric") and not data.get("price_kind")
    if shared and listing.filterset.price_conditions() is None:
        rows = listing.filterset.filter_rows(InstanceType.objects.visible())
        return _split(rows.aggregate(**_fabric_aggregates(), **_kind_aggregates()))
    return {"fabric": fabric_counts(listing), "price_kind": price_kind_counts(listing)}


def _availability_aggregates(reported: QuerySet) -> dict:
    known = Q(Exists(reported))
    return {
        "total": Count("pk"),
        "known": Count("pk", filter=known),
        "providers": ArrayAgg(
            "provider__name", filter=known, distinct=True, order_by="provider__name", default=[]
        ),
    }


def _reported(listing: ListingQuery, skip: frozenset) -> QuerySet:
    """A row's current offers that report capacity, and meet the price filters but `skip`."""
    reported = Offer.objects.current().filter(instance=OuterRef("pk"), available__isnull=False)
    conditions = listing.filterset.price_conditions(skip=skip)
    return reported.filter(conditions) if conditions is not None else reported


AVAILABLE = frozenset({"available"})


def availability_known(listing: ListingQuery) -> dict | None:
    """Of the rows the other filters match, how many have a price whose capacity is reported,
    and by which providers (the `available` filter can only ever pick among those)."""
    if not listing.is_valid:
        return None
    rows = listing.filterset.filter_rows(InstanceType.objects.visible(), skip=AVAILABLE)
    return rows.aggregate(**_availability_aggregates(_reported(listing, AVAILABLE)))


@dataclass(frozen=True)
class ListingCounts:
    total: int | None  # rows matching every filter; None: the paginator counts them
    facets: dict[str, dict[str, int]]
    availability: dict | None


def listing_counts(listing: ListingQuery, version: int | None = None) -> ListingCounts:
    """The facets, the availability and, when they all count the same rows, the number of
    matching rows: in one query then (its SQL kept for the data `version`, `kept_statement`),
    else in the queries of `facet_counts` and `availability_known` (and the paginator's)."""
    if not listing.is_valid:
        return ListingCounts(None, {}, None)
    data = listing.filterset.form.cleaned_data
    filterset = listing.filterset
    # `available` is a price condition: with none, every count reads the same rows.
    if (
        not data.get("fabric")
        and not data.get("price_kind")
        and filterset.price_conditions() is None
    ):
        counts = kept_statement(
            version,
            ("listing-counts", *parameters_key(filterset.data, row_parameters(listing))),
            lambda: filterset.filter_rows(InstanceType.objects.visible()),
            lambda rows: rows.aggregate(
                **_availability_aggregates(_reported(listing, AVAILABLE)),
                **_fabric_aggregates(),
                **_kind_aggregates(),
            ),
            fetch_named,
            list,
        )
        availability = {key: counts.pop(key) for key in ("total", "known", "providers")}
        return ListingCounts(availability["total"], _split(counts), availability)
    return ListingCounts(None, facet_counts(listing), availability_known(listing))
