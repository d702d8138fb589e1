"""The one place that writes catalog data: curated fixtures now, scraped offers next.

Every write goes through here so the rules hold everywhere: locked fields are never
overwritten, a price observation is appended only when the price changes, an older price never
replaces a newer one, and money is converted to USD at a dated reference rate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

from django.db import models, transaction

from offerings.models import (
    ExchangeRate,
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    Offer,
    PriceObservation,
    Provider,
    Region,
)
from offerings.schemas import (
    ExchangeRateIn,
    FabricIn,
    GpuIn,
    GpuLinkIn,
    InstanceIn,
    PriceIn,
    ProviderCatalog,
    ProviderIn,
)

USD = "USD"
GPU_HOUR_PLACES = Decimal("0.000001")


class UnknownCurrency(ValueError):
    """A price in a currency the reference exchange-rate table does not hold."""


@dataclass
class LoadCounts:
    """What a load did, per model label: created / updated / unchanged."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, label: str, outcome: str) -> None:
        bucket = self.counts.setdefault(label, {"created": 0, "updated": 0, "unchanged": 0})
        bucket[outcome] += 1

    def changed(self) -> int:
        return sum(c["created"] + c["updated"] for c in self.counts.values())


def digest(entry: Mapping) -> str:
    """A stable SHA-256 of a fixture entry, to tell whether it changed since the last load."""
    canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


# -- money ---------------------------------------------------------------------------------------


class RateBook:
    """The latest reference rate per currency, read once per load or run."""

    def __init__(self, rates: Iterable[ExchangeRate] | None = None) -> None:
        if rates is None:
            rates = ExchangeRate.objects.order_by("currency", "-rate_date").distinct("currency")
        self._rates = {r.currency: r for r in rates}

    def to_usd(self, amount: Decimal, currency: str) -> tuple[Decimal, ExchangeRate | None]:
        """Convert an amount to USD; the rate used is returned so its date can be shown."""
        if currency == USD:
            return amount, None
        rate = self._rates.get(currency)
        if rate is None:
            raise UnknownCurrency(f"no reference exchange rate for {currency}")
        return amount * rate.usd_per_unit, rate


def gpu_hour_usd(
    price_per_hour: Decimal, currency: str, gpu_count: int, rates: RateBook
) -> tuple[Decimal, ExchangeRate | None]:
    """Price per GPU-hour in USD, kept to 6 places; the API rounds half-even to 4 once."""
    usd, rate = rates.to_usd(price_per_hour, currency)
    per_gpu = (usd / gpu_count).quantize(GPU_HOUR_PLACES, rounding=ROUND_HALF_EVEN)
    return per_gpu, rate


@transaction.atomic
def reprice_in_usd(rates: RateBook | None = None) -> int:
    """Recompute the derived USD figure of every non-USD offer after the rates changed."""
    rates = rates or RateBook()
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


# -- curated rows --------------------------------------------------------------------------------


def _upsert_curated(
    model: type[models.Model],
    lookup: dict,
    values: dict,
    entry_digest: str,
    counts: LoadCounts,
) -> models.Model:
    """Insert a missing row; update a row whose fixture entry changed, sparing locked fields."""
    label = model._meta.model_name
    row = model.objects.filter(**lookup).first()
    if row is None:
        row = model.objects.create(**lookup, **values, fixture_digest=entry_digest)
        counts.add(label, "created")
        return row
    if row.fixture_digest == entry_digest:
        counts.add(label, "unchanged")
        return row
    locked = set(row.locked_fields)
    for name, value in values.items():
        if name not in locked:
            setattr(row, name, value)
    row.fixture_digest = entry_digest
    row.full_clean(validate_unique=False, exclude=["instance"])
    row.save()
    counts.add(label, "updated")
    return row


def _sourced(entry) -> dict:
    return {"source_url": str(entry.source_url), "verified_at": entry.verified_at}


def load_exchange_rate(entry: ExchangeRateIn, counts: LoadCounts) -> None:
    values = {"usd_per_unit": entry.usd_per_unit, "source_url": str(entry.source_url)}
    row, created = ExchangeRate.objects.get_or_create(
        currency=entry.currency, rate_date=entry.rate_date, defaults=values
    )
    if created:
        counts.add("exchangerate", "created")
    elif row.usd_per_unit != entry.usd_per_unit or row.source_url != values["source_url"]:
        ExchangeRate.objects.filter(pk=row.pk).update(**values)
        counts.add("exchangerate", "updated")
    else:
        counts.add("exchangerate", "unchanged")


def load_gpu(entry: GpuIn, counts: LoadCounts) -> GpuModel:
    data = entry.model_dump(mode="json")
    values = entry.model_dump(exclude={"slug", "source_url", "verified_at"})
    values |= _sourced(entry)
    values["architecture"] = values["architecture"] or ""
    return _upsert_curated(GpuModel, {"slug": entry.slug}, values, digest(data), counts)


def load_provider(entry: ProviderIn, counts: LoadCounts) -> Provider:
    values = entry.model_dump(exclude={"slug", "source_url", "verified_at"})
    values["website"] = str(entry.website)
    values |= _sourced(entry)
    return _upsert_curated(
        Provider, {"slug": entry.slug}, values, digest(entry.model_dump(mode="json")), counts
    )


def _link_values(entry: GpuLinkIn) -> dict:
    values = entry.model_dump(exclude={"source_url", "verified_at"}) | _sourced(entry)
    values["topology"] = entry.topology or ""
    return values


def _fabric_values(entry: FabricIn) -> dict:
    values = entry.model_dump(exclude={"source_url", "verified_at"}) | _sourced(entry)
    values["cluster_source_url"] = str(entry.cluster_source_url or "")
    return values


def load_instance(
    provider: Provider,
    entry: InstanceIn,
    gpus: Mapping[str, GpuModel],
    regions: Mapping[str, Region],
    rates: RateBook,
    counts: LoadCounts,
) -> InstanceType:
    data = entry.model_dump(mode="json", exclude={"nvlink", "fabric", "prices"})
    values = entry.model_dump(exclude={"nvlink", "fabric", "prices", "slug", "gpu"})
    values |= _sourced(entry) | {"gpu": gpus[entry.gpu]}
    instance = _upsert_curated(
        InstanceType,
        {"provider": provider, "slug": entry.resolved_slug},
        values,
        digest(data),
        counts,
    )
    _upsert_curated(
        GpuLink,
        {"instance": instance},
        _link_values(entry.nvlink),
        digest(entry.nvlink.model_dump(mode="json")),
        counts,
    )
    _upsert_curated(
        Fabric,
        {"instance": instance},
        _fabric_values(entry.fabric),
        digest(entry.fabric.model_dump(mode="json")),
        counts,
    )
    for price in entry.prices:
        record_catalog_price(instance, regions[price.region], price, rates, counts)
    return instance


def record_catalog_price(
    instance: InstanceType, region: Region, price: PriceIn, rates: RateBook, counts: LoadCounts
) -> None:
    """Store a curated price unless the offer already holds one as new or newer."""
    hourly = price.hourly.quantize(GPU_HOUR_PLACES, rounding=ROUND_HALF_EVEN)
    per_gpu, rate = gpu_hour_usd(hourly, price.currency, instance.gpu_count, rates)
    offer = Offer.objects.filter(
        instance=instance, region=region, kind=price.kind, term_months=price.term_months
    ).first()
    if offer is None:
        offer = Offer.objects.create(
            instance=instance,
            region=region,
            kind=price.kind,
            term_months=price.term_months,
            price_per_hour=hourly,
            currency=price.currency,
            price_per_gpu_hour_usd=per_gpu,
            exchange_rate_date=rate.rate_date if rate else None,
            available=price.available,
            observed_at=price.observed_at,
            first_seen_at=price.observed_at,
            last_seen_at=price.observed_at,
            origin=Offer.Origin.CATALOG,
            source_url=str(price.source_url),
        )
        PriceObservation.objects.create(
            offer=offer,
            price_per_hour=hourly,
            currency=price.currency,
            observed_at=price.observed_at,
        )
        counts.add("offer", "created")
        return
    if price.observed_at <= offer.observed_at or "price_per_hour" in offer.locked_fields:
        counts.add("offer", "unchanged")
        return
    changed = hourly != offer.price_per_hour or price.currency != offer.currency
    offer.price_per_hour = hourly
    offer.currency = price.currency
    offer.price_per_gpu_hour_usd = per_gpu
    offer.exchange_rate_date = rate.rate_date if rate else None
    offer.observed_at = price.observed_at
    offer.last_seen_at = max(offer.last_seen_at, price.observed_at)
    offer.source_url = str(price.source_url)
    if "available" not in offer.locked_fields:
        offer.available = price.available
    offer.save()
    if changed:
        PriceObservation.objects.create(
            offer=offer,
            price_per_hour=hourly,
            currency=price.currency,
            observed_at=price.observed_at,
        )
    counts.add("offer", "updated")


@transaction.atomic
def load_catalog(
    gpus: Iterable[GpuIn],
    rates: Iterable[ExchangeRateIn],
    providers: Iterable[ProviderCatalog],
) -> LoadCounts:
    """Load validated fixtures in one transaction; a second load of the same files changes nothing."""
    counts = LoadCounts()
    for rate in rates:
        load_exchange_rate(rate, counts)
    rate_book = RateBook()
    gpu_rows = {entry.slug: load_gpu(entry, counts) for entry in gpus}
    gpu_rows |= {g.slug: g for g in GpuModel.objects.exclude(slug__in=gpu_rows)}
    for catalog in providers:
        provider = load_provider(catalog.provider, counts)
        regions = {}
        for region in catalog.regions:
            row, created = Region.objects.get_or_create(
                provider=provider,
                code=region.code,
                defaults={"name": region.name, "geo": region.geo},
            )
            if not created and (row.name, row.geo) != (region.name, region.geo):
                row.name, row.geo = region.name, region.geo
                row.save(update_fields=["name", "geo"])
                counts.add("region", "updated")
            else:
                counts.add("region", "created" if created else "unchanged")
            regions[region.code] = row
        for entry in catalog.instances:
            if entry.gpu not in gpu_rows:
                raise ValueError(f"{provider.slug}/{entry.name}: unknown GPU slug {entry.gpu!r}")
            load_instance(provider, entry, gpu_rows, regions, rate_book, counts)
    return counts
