"""Facet counts for the filter form: how many rows each choice would give, other filters kept.

Counted from the listing already parsed for the page, each facet as if its own parameter were
not given. With neither `fabric` nor `price_kind` given, both facets count the same rows and
come from one query; otherwise one query each.
"""

from __future__ import annotations

from django.db.models import Count, Q

from offerings.filters import ListingQuery
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
