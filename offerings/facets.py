"""Facet counts for the filter form: how many rows each choice would give, other filters kept."""

from __future__ import annotations

from django.db.models import Count, Q
from django.http import QueryDict

from offerings.filters import parse_listing_query
from offerings.models import InstanceType, Offer, OfferKind


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
    rows = listing.filterset.filter_rows(InstanceType.objects.visible())
    grouped = rows.values("fabric__technology").annotate(n=Count("pk")).order_by()
    return {row["fabric__technology"]: row["n"] for row in grouped}


def price_kind_counts(query: QueryDict) -> dict[str, int]:
    """Rows with a matching price of each kind, the other price filters kept."""
    listing = parse_listing_query(_without(query, "price_kind"))
    if not listing.is_valid:
        return {}
    rows = listing.filterset.filter_rows(InstanceType.objects.visible(), prices=False)
    conditions = listing.filterset.price_conditions()
    if conditions is None:
        # No other price condition: the kinds of each row's current offers are kept on the row.
        counts = rows.aggregate(
            **{
                kind: Count("pk", filter=Q(offer_kinds__contains=[kind]))
                for kind in OfferKind.values
            }
        )
        return {kind: n for kind, n in counts.items() if n}
    offers = Offer.objects.current().filter(conditions, instance__in=rows.values("pk"))
    grouped = offers.values("kind").annotate(n=Count("instance", distinct=True)).order_by()
    return {row["kind"]: row["n"] for row in grouped}


def facet_counts(query: QueryDict) -> dict[str, dict[str, int]]:
    """Counts keyed by parameter name, then value; two queries whatever the catalog's size."""
    return {"fabric": fabric_counts(query), "price_kind": price_kind_counts(query)}
