"""The price index of a GPU model: the median on-demand price per GPU-hour, week by week.

Only dated prices count (a price whose source shows no date says nothing about a week). The
price history records a price when it changes, so an offer's price in a week is its newest dated
on-demand reading up to that week (in USD per GPU-hour at the reference rate of the day it was
read), for at most `CARRY_WEEKS` after that reading and not after the offer was retired. The weeks
run from the first reading to the newest, so the index depends on the data alone. A week's median
needs `MIN_OFFERS` offers, and a line needs `MIN_WEEKS` such weeks; below that the page says how
many dated prices there are instead of drawing one. Shown on the GPU page and in the data dumps.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from django.db.models import F

from offerings.models import InstanceType, Offer, PriceObservation
from offerings.money import RateTable

MIN_OFFERS = 3
MIN_WEEKS = 2
# A reading stands for its offer until a newer one replaces it, the offer is retired, or this
# many weeks have passed: the history records a price when it changes, not each time it is read.
CARRY_WEEKS = 13
FOUR_PLACES = Decimal("0.0001")


@dataclass(frozen=True)
class Week:
    start: date  # the Monday (ISO week) the week begins
    median_usd_per_gpu_hour: Decimal
    offers: int


@dataclass(frozen=True)
class PriceIndex:
    gpu: str
    weeks: tuple[Week, ...]  # weeks with at least MIN_OFFERS offers, oldest first
    dated_prices: int  # every dated on-demand reading of this GPU's visible types
    thin_weeks: int  # weeks with dated readings but too few offers for a median

    @property
    def drawable(self) -> bool:
        return len(self.weeks) >= MIN_WEEKS


def _readings(gpu_slugs: list[str] | None = None):
    visible = InstanceType.objects.visible()
    readings = PriceObservation.objects.filter(
        observed_at__isnull=False,
        offer__kind=Offer.Kind.ON_DEMAND,
        offer__instance__in=visible,
    )
    if gpu_slugs is not None:
        readings = readings.filter(offer__instance__gpu__slug__in=gpu_slugs)
    return readings.order_by("observed_at", "pk").values_list(
        F("offer__instance__gpu__slug"),
        "offer_id",
        "observed_at",
        "price_per_hour",
        "currency",
        F("offer__instance__gpu_count"),
        F("offer__is_active"),
        F("offer__last_seen_at"),
    )


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def price_indexes(
    gpu_slugs: list[str] | None = None, rates: RateTable | None = None
) -> dict[str, PriceIndex]:
    """The index of each GPU model (of `gpu_slugs`, or every one with a dated reading)."""
    rates = rates or RateTable()
    # gpu -> offer -> [(week read, USD per GPU-hour)], oldest first; and when a retired offer
    # was last seen (it counts no later than that week)
    readings: dict[str, dict[int, list[tuple[date, Decimal]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    retired: dict[int, date] = {}
    counted: dict[str, int] = defaultdict(int)
    for gpu, offer, moment, price, currency, gpus, active, last_seen in _readings(
        gpu_slugs
    ).iterator():
        day = moment.date()
        counted[gpu] += 1
        rate = rates.usd_per_unit_as_of(currency, day)
        if rate is None:
            continue
        readings[gpu][offer].append((_monday(day), price * rate / gpus))
        if not active:
            retired[offer] = _monday(last_seen.date())
    indexes = {}
    for gpu in gpu_slugs if gpu_slugs is not None else sorted(counted):
        offers = readings[gpu]
        weeks: list[Week] = []
        thin = 0
        if offers:
            first = min(read[0][0] for read in offers.values())
            last = max(read[-1][0] for read in offers.values())
            week = first
            while week <= last:
                standing = [
                    value
                    for offer, read in offers.items()
                    if (value := _standing(read, week, retired.get(offer))) is not None
                ]
                if len(standing) >= MIN_OFFERS:
                    median = statistics.median(standing)
                    weeks.append(
                        Week(week, median.quantize(FOUR_PLACES, ROUND_HALF_EVEN), len(standing))
                    )
                elif standing:
                    thin += 1
                week += timedelta(days=7)
        indexes[gpu] = PriceIndex(gpu, tuple(weeks), counted[gpu], thin)
    return indexes


def _standing(read: list[tuple[date, Decimal]], week: date, retired: date | None):
    """An offer's price in force in `week`: its newest reading up to that week, if read at most
    CARRY_WEEKS before and not retired before it; else None."""
    if retired is not None and week > retired:
        return None
    earlier = [(read_week, usd) for read_week, usd in read if read_week <= week]
    if not earlier or (week - earlier[-1][0]).days >= CARRY_WEEKS * 7:
        return None
    return earlier[-1][1]


def price_index(gpu_slug: str, rates: RateTable | None = None) -> PriceIndex:
    return price_indexes([gpu_slug], rates)[gpu_slug]
