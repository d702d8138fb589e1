"""Reference exchange rates and the USD figures of the offers derived from them."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from offerings.models import Offer
from offerings.money import USD, RateTable, UnknownCurrency, gpu_hour_usd
from offerings.schemas import ExchangeRateIn
from offerings.writer.curated import LoadCounts, load_exchange_rate


@transaction.atomic
def reprice_in_usd(rates: RateTable | None = None) -> int:
    """Recompute the derived USD figure of every non-USD offer after the rates changed."""
    rates = rates or RateTable()
    changed = []
    offers = Offer.objects.exclude(currency=USD).select_related("instance")
    for offer in offers:
        try:
            per_gpu, rate = gpu_hour_usd(
                offer.price_per_hour, offer.currency, offer.instance.gpu_count, rates
            )
        except UnknownCurrency:
            continue
        if offer.price_per_gpu_hour_usd != per_gpu or offer.exchange_rate_date != rate.rate_date:
            offer.price_per_gpu_hour_usd = per_gpu
            offer.exchange_rate_date = rate.rate_date
            changed.append(offer)
    Offer.objects.bulk_update(changed, ["price_per_gpu_hour_usd", "exchange_rate_date"])
    return len(changed)


def record_reference_rates(rates: Iterable[ExchangeRateIn]) -> tuple[dict[str, int], int]:
    """Store dated, sourced reference rates, then re-derive every non-USD offer's USD figure.

    A (currency, date) row is inserted, or corrected when the source now says otherwise; rows of
    other dates stay as history (the latest date per currency is the one used). One transaction:
    the rates and the prices derived from them change together. Returns the created / updated /
    unchanged counts and the number of offers repriced.
    """
    counts = LoadCounts()
    with transaction.atomic():
        for rate in rates:
            load_exchange_rate(rate, counts)
        repriced = reprice_in_usd()
    totals = counts.counts.get("exchangerate", {"created": 0, "updated": 0, "unchanged": 0})
    return dict(totals), repriced
