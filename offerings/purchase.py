"""How an instance type can be bought: its curated purchase modes and the kinds its prices show.

A purchase mode is known from a source: a curated `PurchaseMode` row (with its term, duration
limits and minimum size where the source states them), or a current price of that kind and term,
whose own source shows the type is sold that way. Nothing else makes a mode: a kind with neither
is not listed, however likely it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from offerings.models import InstanceType, Offer, PurchaseMode
from offerings.schemas import PURCHASE_KINDS

KIND_ORDER = {kind: n for n, kind in enumerate(PURCHASE_KINDS)}


@dataclass(frozen=True)
class Mode:
    """One way to buy a type, in the API's shape; `from_price` marks one a stored price shows."""

    kind: str
    term_months: int | None
    min_hours: int | None
    max_hours: int | None
    min_gpus: int | None
    source_url: str
    verified_at: date | None
    from_price: bool = False
    notes: str = ""

    def label_kind(self) -> str:
        return str(PurchaseMode.Kind(self.kind).label)

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "term_months": self.term_months,
            "min_hours": self.min_hours,
            "max_hours": self.max_hours,
            "min_gpus": self.min_gpus,
            "source_url": self.source_url,
            "verified_at": self.verified_at.isoformat() if self.verified_at else None,
        }


def curated_modes(instance: InstanceType) -> list[PurchaseMode]:
    """The type's curated modes: prefetched by `for_listing()`, else one query."""
    listed = getattr(instance, "listed_purchase_modes", None)
    return list(listed) if listed is not None else list(instance.purchase_modes.all())


def _from_offers(offers: list[Offer]) -> dict[tuple[str, int], Mode]:
    """One mode per kind and term among the current prices, from the newest dated price."""
    chosen: dict[tuple[str, int], Offer] = {}
    for offer in offers:
        key = (offer.kind, offer.term_months)
        held = chosen.get(key)
        if held is None or (
            offer.observed_at and (not held.observed_at or offer.observed_at > held.observed_at)
        ):
            chosen[key] = offer
    return {
        key: Mode(
            kind=offer.kind,
            term_months=offer.term_months,
            min_hours=None,
            max_hours=None,
            min_gpus=None,
            source_url=offer.source_url,
            verified_at=offer.observed_at.date() if offer.observed_at else None,
            from_price=True,
        )
        for key, offer in chosen.items()
    }


def purchase_modes_of(instance: InstanceType) -> list[Mode]:
    """Every sourced way to buy the type: curated modes first-hand, then the kinds its current
    prices show that no curated mode covers; on-demand first, then by term."""
    modes = {
        (row.kind, row.term_months): Mode(
            kind=row.kind,
            term_months=row.term_months,
            min_hours=row.min_hours,
            max_hours=row.max_hours,
            min_gpus=row.min_gpus,
            source_url=row.source_url,
            verified_at=row.verified_at,
            notes=row.notes,
        )
        for row in curated_modes(instance)
    }
    for key, mode in _from_offers(list(getattr(instance, "current_offers", []))).items():
        modes.setdefault(key, mode)
    return sorted(
        modes.values(),
        key=lambda m: (KIND_ORDER.get(m.kind, 99), m.term_months is None, m.term_months or 0),
    )


def serialize_purchase_modes(instance: InstanceType) -> list[dict]:
    """`purchase_modes` of `/api/instances`."""
    return [mode.as_json() for mode in purchase_modes_of(instance)]


def has_on_demand_price(instance: InstanceType) -> bool:
    return any(o.kind == Offer.Kind.ON_DEMAND for o in getattr(instance, "current_offers", []))
