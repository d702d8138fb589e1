"""Which reading of a price stands: one rule for every writer (docs/data.md, "Which reading
stands").

An offer (type, region, kind, term) holds one reading. A reading from another writer replaces it
when, in this order:

1. the held reading is a retired one from another writer (it holds nothing);
2. it is dated and the held one is not, or both are dated and it was read later;
3. both are undated, or read at the same moment, and its writer ranks above the held one's.

A writer's new reading replaces its own earlier one unless that one is dated and the new one is
undated or older: a corrected fixture or a new run of the same source. Equal rank keeps what is
held, so every writer can run again, in any order, and change nothing. A curator's lock holds
against everything (the callers check it first).

The ranks follow who states the price: the provider's own price data read by its scraper, then
the curated catalog citing the provider's own page, then a curator's entry or a fixture citing a
third party, then a third-party price catalog (a price source such as SkyPilot's files).
"""

from __future__ import annotations

from datetime import datetime

from offerings.models import FactBasis, Offer

PROVIDER_DATA = 4
PROVIDER_PAGE = 3
CURATED = 2
PRICE_SOURCE = 1


def rank(origin: str, source: str, basis: str) -> int:
    """How a stored or new reading ranks between undated readings (the module says why)."""
    if source:
        return PRICE_SOURCE
    if origin == Offer.Origin.SCRAPER:
        return PROVIDER_DATA
    if origin == Offer.Origin.CATALOG and basis == FactBasis.PROVIDER:
        return PROVIDER_PAGE
    return CURATED


def stands(observed_at: datetime | None, new_rank: int, same_writer: bool, offer: Offer) -> bool:
    """Whether a new reading (read at `observed_at`, of `new_rank`) replaces `offer`'s."""
    held = offer.observed_at
    if not same_writer and not offer.is_active:
        return True
    if observed_at != held:  # a date against none, or two different dates
        return held is None or (observed_at is not None and observed_at > held)
    return same_writer or new_rank > rank(offer.origin, offer.source, offer.basis)


# The stored offer `o`'s rank, in SQL: the same as `rank`.
_RANK_SQL = (
    f"(CASE WHEN o.source <> '' THEN {PRICE_SOURCE} "
    f"WHEN o.origin = '{Offer.Origin.SCRAPER}' THEN {PROVIDER_DATA} "
    f"WHEN o.origin = '{Offer.Origin.CATALOG}' AND o.basis = '{FactBasis.PROVIDER}' "
    f"THEN {PROVIDER_PAGE} ELSE {CURATED} END)"
)


def held_sql(new: str) -> str:
    """SQL that is true where the stored offer `o` keeps its reading against a scraped one read
    at the SQL expression `new`: `not stands(...)`, for a run whose writer is the parameters
    `%(source)s` (the price source's slug, "" for the provider's own scraper) and `%(rank)s`."""
    same = f"(o.origin = '{Offer.Origin.SCRAPER}' AND o.source = %(source)s)"
    return (
        f"(CASE WHEN NOT o.is_active AND NOT {same} THEN false "
        f"WHEN {new} IS DISTINCT FROM o.observed_at THEN "
        f"{new} IS NULL OR (o.observed_at IS NOT NULL AND {new} < o.observed_at) "
        f"ELSE NOT ({same} OR %(rank)s > {_RANK_SQL}) END)"
    )


def scraped_rank(source: str) -> int:
    """The rank of a scraped run's readings: a price source's, or the provider's own."""
    return PRICE_SOURCE if source else PROVIDER_DATA
