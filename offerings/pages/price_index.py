"""The price index of a GPU model: the median on-demand price per GPU-hour, week by week.

Only dated prices count (a price whose source shows no date says nothing about a week): every
on-demand reading of a visible type with this GPU whose `observed_at` falls in the week, in USD
per GPU-hour at the reference rate of that day. An offer read more than once in a week counts
once, at its last reading. A week's median needs `MIN_OFFERS` offers, and a line needs
`MIN_WEEKS` such weeks; below that the page says how many dated prices there are instead of
drawing one. Shown on the GPU page and written into the data dumps.
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
    )


def price_indexes(
    gpu_slugs: list[str] | None = None, rates: RateTable | None = None
) -> dict[str, PriceIndex]:
    """The index of each GPU model (of `gpu_slugs`, or every one with a dated reading)."""
    rates = rates or RateTable()
    # gpu -> week -> offer -> its last reading that week, in USD per GPU-hour
    by_week: dict[str, dict[date, dict[int, Decimal]]] = defaultdict(lambda: defaultdict(dict))
    counted: dict[str, int] = defaultdict(int)
    for gpu, offer, moment, price, currency, gpus in _readings(gpu_slugs).iterator():
        day = moment.date()
        rate = rates.usd_per_unit_as_of(currency, day)
        counted[gpu] += 1
        if rate is None:
            continue
        week = day - timedelta(days=day.weekday())
        by_week[gpu][week][offer] = price * rate / gpus
    indexes = {}
    for gpu in gpu_slugs if gpu_slugs is not None else sorted(counted):
        weeks, thin = [], 0
        for week, offers in sorted(by_week[gpu].items()):
            if len(offers) < MIN_OFFERS:
                thin += 1
                continue
            median = statistics.median(offers.values())
            weeks.append(Week(week, median.quantize(FOUR_PLACES, ROUND_HALF_EVEN), len(offers)))
        indexes[gpu] = PriceIndex(gpu, tuple(weeks), counted[gpu], thin)
    return indexes


def price_index(gpu_slug: str, rates: RateTable | None = None) -> PriceIndex:
    return price_indexes([gpu_slug], rates)[gpu_slug]
