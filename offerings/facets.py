"""Facet counts for the filter form: how many rows each choice would give, other filters kept."""

from __future__ import annotations

from django.db.models import Count
from django.http import QueryDict

from offerings.filters import parse_listing_query
from offerings.models import InstanceType, Offer


def _without(query: QueryDict, name: str) -> QueryDict:
    rest = query.copy()
    rest.pop(name, None)
    rest.pop("page", None)
    return rest


def fabric_counts(query: QueryDict) -> dict[str, int]:
    """Rows per fabric technology if that technology were the only fabric chosen."""
    listing = parse_listing_query(_without(query, "fabric"))
    if not listing.is_valid:
        return {}
    rows = InstanceType.objects.filter(pk__in=listing.filterset.qs.values("pk"))
    grouped = rows.values("fabric__technology").annotate(n=Count("pk")).order_by()
    return {row["fabric__technology"]: row["n"] for row in grouped}


def price_kind_counts(query: QueryDict) -> dict[str, int]:
    """Rows with a matching price of each kind, the other price filters kept."""
    listing = parse_listing_query(_without(query, "price_kind"))
    if not listing.is_valid:
        return {}
    offers = Offer.objects.current().filter(instance__in=listing.filterset.qs.values("pk"))
    conditions = listing.filterset.price_conditions()
    if conditions is not None:
        offers = offers.filter(conditions)
    grouped = offers.values("kind").annotate(n=Count("instance", distinct=True)).order_by()
    return {row["kind"]: row["n"] for row in grouped}


def facet_counts(query: QueryDict) -> dict[str, dict[str, int]]:
    """Counts keyed by parameter name, then value; two queries whatever the catalog's size."""
    return {"fabric": fabric_counts(query), "price_kind": price_kind_counts(query)}
