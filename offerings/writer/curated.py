"""Curated loads: fixture rows inserted, or updated when their entry changed, sparing locked
fields; curated prices that never replace a newer one."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN

from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from offerings import platform
from offerings.models import (
    CollectiveResult,
    ExchangeRate,
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    LinkTechnology,
    LinkTopology,
    Offer,
    PriceCheck,
    PriceObservation,
    Provider,
    ProviderReadiness,
    PurchaseMode,
    Region,
)
from offerings.money import GPU_HOUR_PLACES, RateTable, gpu_hour_usd
from offerings.schemas import (
    CollectiveResultIn,
    ExchangeRateIn,
    GpuIn,
    InstanceIn,
    PriceIn,
    ProviderCatalog,
    ProviderIn,
    PurchaseModeIn,
    ReadinessFactIn,
    ReadinessIn,
)
from offerings.writer import standing


@dataclass
class LoadCounts:
    """What a load did, per model label: created / updated / unchanged."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, label: str, outcome: str, n: int = 1) -> None:
        bucket = self.counts.setdefault(label, {"created": 0, "updated": 0, "unchanged": 0})
        bucket[outcome] = bucket.get(outcome, 0) + n

    def changed(self) -> int:
        return sum(
            c["created"] + c["updated"] + c.get("removed", 0) + c.get("retired", 0)
            for c in self.counts.values()
        )


def digest(entry: Mapping) -> str:
    """A stable SHA-256 of a fixture entry, to tell whether it changed since the last load."""
    canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


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
    provider = _upsert_curated(
        Provider, {"slug": entry.slug}, values, digest(entry.model_dump(mode="json")), counts
    )
    load_readiness(provider, entry.readiness, counts)
    return provider


def _unlisted(rows: models.QuerySet, kept: list[int]) -> models.QuerySet:
    """The rows an earlier load wrote from a fixture entry that is gone. Rows a curator added
    (no digest) or edited (a lock) are not among them: the admin's word outlives the file."""
    return rows.exclude(pk__in=kept).exclude(fixture_digest="").filter(locked_fields=[])


def _remove_unlisted(rows: models.QuerySet, kept: list[int], counts: LoadCounts) -> None:
    """Delete the rows an earlier load wrote from a fixture entry that is gone (`_unlisted`)."""
    removed, _ = _unlisted(rows, kept).delete()
    if removed:
        counts.add(rows.model._meta.model_name, "removed", removed)


def _readiness_values(fact: str, entry: ReadinessFactIn) -> dict:
    """A readiness fact's row: the value in the column of its type, the others empty."""
    values = {"flag": None, "gpus": None, "usd_per_gb": None, "fabrics": []}
    column = {
        "fabrics": "fabrics",
        "max_self_serve_gpus": "gpus",
        "egress_usd_per_gb": "usd_per_gb",
    }.get(fact, "flag")
    values[column] = list(entry.value) if column == "fabrics" else entry.value
    return values | {"basis": entry.basis, "notes": entry.notes} | _sourced(entry)


def load_readiness(provider: Provider, readiness: ReadinessIn, counts: LoadCounts) -> None:
    """Upsert the provider's stated readiness facts; a fact the fixture no longer states goes."""
    kept = []
    for fact, entry in readiness.stated().items():
        row = _upsert_curated(
            ProviderReadiness,
            {"provider": provider, "fact": fact},
            _readiness_values(fact, entry),
            digest(entry.model_dump(mode="json")),
            counts,
        )
        kept.append(row.pk)
    _remove_unlisted(ProviderReadiness.objects.filter(provider=provider), kept, counts)


def load_purchase_modes(
    instance: InstanceType, modes: Iterable[PurchaseModeIn], counts: LoadCounts
) -> None:
    """Upsert the type's curated purchase modes on (kind, term); a mode no longer listed goes."""
    kept = []
    for mode in modes:
        values = mode.model_dump(exclude={"kind", "term_months", "source_url", "verified_at"})
        row = _upsert_curated(
            PurchaseMode,
            {"instance": instance, "kind": mode.kind, "term_months": mode.stored_term},
            values | _sourced(mode),
            digest(mode.model_dump(mode="json")),
            counts,
        )
        kept.append(row.pk)
    _remove_unlisted(PurchaseMode.objects.filter(instance=instance), kept, counts)


def load_collective_results(entries: Iterable[CollectiveResultIn], counts: LoadCounts) -> None:
    """Upsert published collective results on their run (type, collective, nodes, GPUs, message
    size, source); a result whose type is not in the catalog is skipped, one no longer listed goes.
    """
    types = {
        (row.provider.slug, row.slug): row
        for row in InstanceType.objects.select_related("provider").filter(
            slug__in={entry.instance for entry in entries}
        )
    }
    kept = []
    for entry in entries:
        instance = types.get((entry.provider, entry.instance))
        if instance is None:
            continue
        lookup = {
            "instance": instance,
            "collective": entry.collective,
            "nodes": entry.nodes,
            "gpus": entry.gpus,
            "message_bytes": entry.message_bytes,
            "source_url": str(entry.source_url),
        }
        values = {
            "busbw_gbytes_per_s": entry.busbw_gbytes_per_s,
            "basis": entry.basis,
            "notes": entry.notes,
            "verified_at": entry.verified_at,
        }
        entry_digest = digest(entry.model_dump(mode="json"))
        # A curator who changed a loaded row's run (its nodes, size or source) keeps that row:
        # its digest still names this entry, so the entry is not written again beside it.
        row = (
            CollectiveResult.objects.filter(instance=instance, fixture_digest=entry_digest)
            .exclude(locked_fields=[])
            .first()
        )
        if row is not None:
            counts.add("collectiveresult", "unchanged")
        else:
            row = _upsert_curated(CollectiveResult, lookup, values, entry_digest, counts)
        kept.append(row.pk)
    _remove_unlisted(CollectiveResult.objects.all(), kept, counts)


def _kept_basis(row: GpuLink | Fabric | None, basis: dict) -> dict:
    """The new basis map, keeping a locked field's old basis with its curator-set value."""
    if row is None:
        return basis
    kept = {k: v for k, v in basis.items() if k not in row.locked_fields}
    kept |= {k: v for k, v in row.basis.items() if k in row.locked_fields}
    return kept


def _link_values(entry: InstanceIn, row: GpuLink | None) -> dict:
    """The link's row: the fixture's stated facts, then what the platform rules give."""
    locked = frozenset(row.locked_fields) if row else frozenset()
    derived = platform.link_of_entry(entry, locked)
    values = entry.nvlink.model_dump(exclude={"source_url", "verified_at"}) | _sourced(entry.nvlink)
    values |= derived.values
    values["technology"] = values["technology"] or LinkTechnology.UNKNOWN
    if values["technology"] == LinkTechnology.NONE:
        values["topology"] = ""
    else:
        values["topology"] = values["topology"] or LinkTopology.UNKNOWN
    values["basis"] = _kept_basis(row, derived.basis)
    values["platform_rules"] = derived.rules
    return values


def _fabric_values(entry: InstanceIn, row: Fabric | None) -> dict:
    values = entry.fabric.model_dump(exclude={"source_url", "verified_at"}) | _sourced(entry.fabric)
    values["cluster_source_url"] = str(entry.fabric.cluster_source_url or "")
    derived, basis = platform.fabric_of_entry(entry)
    values["rdma"] = derived["rdma"]
    values["gpudirect_rdma"] = derived["gpudirect_rdma"]
    values["basis"] = _kept_basis(row, basis)
    return values


def load_instance(
    provider: Provider,
    entry: InstanceIn,
    gpus: Mapping[str, GpuModel],
    regions: Mapping[str, Region],
    rates: RateTable,
    counts: LoadCounts,
) -> InstanceType:
    parts = {"nvlink", "fabric", "prices", "purchase_modes"}  # rows of their own
    data = entry.model_dump(mode="json", exclude=parts)
    values = entry.model_dump(exclude=parts | {"slug", "gpu"})
    values |= _sourced(entry) | {"gpu": gpus[entry.gpu], "aliases": "\n".join(entry.aliases)}
    values["is_active"] = True  # listed again after a retirement
    instance = _upsert_curated(
        InstanceType,
        {"provider": provider, "slug": entry.resolved_slug},
        values,
        digest(data),
        counts,
    )
    # The digests cover the values written, so a change of basis or of a platform rule updates
    # the row as a changed fixture entry would.
    link = _link_values(entry, GpuLink.objects.filter(instance=instance).first())
    _upsert_curated(GpuLink, {"instance": instance}, link, digest(link), counts)
    fabric = _fabric_values(entry, Fabric.objects.filter(instance=instance).first())
    _upsert_curated(Fabric, {"instance": instance}, fabric, digest(fabric), counts)
    load_purchase_modes(instance, entry.purchase_modes, counts)
    for price in entry.prices:
        record_catalog_price(instance, regions[price.region], price, rates, counts)
    retire_unlisted_prices(instance, entry.prices, regions, counts)
    return instance


def retire_unlisted_instances(provider: Provider, listed: list[int], counts: LoadCounts) -> None:
    """Retire the types an earlier load wrote from a fixture entry that is gone (renamed, or taken
    out; `_unlisted`): they stop showing, their rows and history stay. A retired type's digest
    no longer matches any entry, so one that comes back is written again, active."""
    active = InstanceType.objects.filter(provider=provider, is_active=True)
    retired = _unlisted(active, listed).update(is_active=False, fixture_digest="retired")
    if retired:
        counts.add("instancetype", "retired", retired)


def retire_unlisted_prices(
    instance: InstanceType, prices, regions: Mapping[str, Region], counts: LoadCounts
) -> None:
    """Retire the catalog's current prices of `instance` that its fixture entry no longer lists
    (a price taken out because its source was wrong must stop showing). Only prices the catalog
    itself holds: a scraper's, a price source's or a curator's stay, and so does a locked one.
    Retired, not deleted: their history stays."""
    listed = Q()
    for price in prices:
        listed |= Q(region=regions[price.region], kind=price.kind, term_months=price.term_months)
    gone = Offer.objects.filter(
        instance=instance, origin=Offer.Origin.CATALOG, source="", is_active=True
    ).filter(locked_fields=[])  # a curator's correction (any lock) stays
    if prices:
        gone = gone.exclude(listed)
    retired = gone.update(is_active=False)
    if retired:
        counts.add("offer", "retired", retired)


def _relabel(offer: Offer, price: PriceIn) -> bool:
    """The catalog's own price, held at the same figure and source, whose fixture now names
    another basis: the basis follows the fixture (no new price, so no history row)."""
    same_reading = (
        offer.origin == Offer.Origin.CATALOG
        and not offer.source
        and offer.source_url == str(price.source_url)
        and "price_per_hour" not in offer.locked_fields
        and "basis" not in offer.locked_fields
    )
    if not same_reading or offer.basis == price.basis:
        return False
    offer.basis = price.basis
    offer.save(update_fields=["basis"])
    return True


def record_catalog_price(
    instance: InstanceType, region: Region, price: PriceIn, rates: RateTable, counts: LoadCounts
) -> None:
    """Store a curated price where it stands against the offer's reading (`standing`).

    A price whose source shows no date is stored undated ("date unknown") and never replaces a
    dated one for the same offer.
    """
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
            first_seen_at=price.observed_at or timezone.now(),
            last_seen_at=price.observed_at or timezone.now(),
            origin=Offer.Origin.CATALOG,
            source_url=str(price.source_url),
            basis=price.basis,
        )
        PriceObservation.objects.create(
            offer=offer,
            price_per_hour=hourly,
            currency=price.currency,
            observed_at=price.observed_at,
        )
        counts.add("offer", "created")
        return
    changed = hourly != offer.price_per_hour or price.currency != offer.currency
    # A price its fixture lists again after a load retired it comes back (unless hidden by a lock).
    revived = not offer.is_active and "is_active" not in offer.locked_fields
    own = offer.origin == Offer.Origin.CATALOG and not offer.source
    # The same reading again (a second load of the same fixture): nothing to write.
    again = (
        own
        and not changed
        and not revived
        and price.observed_at == offer.observed_at
        and str(price.source_url) == offer.source_url
        and ("available" in offer.locked_fields or price.available == offer.available)
    )
    new_rank = standing.rank(Offer.Origin.CATALOG, "", price.basis)
    if "price_per_hour" in offer.locked_fields or (
        again or not (revived or standing.stands(price.observed_at, new_rank, own, offer))
    ):
        if _relabel(offer, price):
            counts.add("offer", "updated")
        else:
            counts.add("offer", "unchanged")
        return
    if revived:
        offer.is_active = True
        offer.missing_runs = 0
    if offer.source:
        # A price source filled this offer and the curated price replaces it: the source's
        # reading is kept as a check.
        PriceCheck.objects.update_or_create(
            offer=offer,
            source=offer.source,
            defaults={
                "price_per_hour": offer.price_per_hour,
                "currency": offer.currency,
                "observed_at": offer.observed_at,
                "source_url": offer.source_url,
                "read_at": offer.last_seen_at,
            },
        )
        offer.source = ""
    offer.price_per_hour = hourly
    offer.currency = price.currency
    offer.price_per_gpu_hour_usd = per_gpu
    offer.exchange_rate_date = rate.rate_date if rate else None
    offer.observed_at = price.observed_at
    offer.last_seen_at = max(offer.last_seen_at, price.observed_at or offer.last_seen_at)
    offer.source_url = str(price.source_url)
    if not own or "basis" not in offer.locked_fields:  # a curator's call on its own readings
        offer.basis = price.basis
    offer.origin = Offer.Origin.CATALOG  # the reading that stands is the catalog's now
    if "available" not in offer.locked_fields:
        offer.available = price.available
    offer.save()
    if changed and price.observed_at is not None:
        # A reading of a moment already recorded is a correction of that reading (a fixture
        # fixed under the same date): its history row is corrected, not doubled.
        PriceObservation.objects.update_or_create(
            offer=offer,
            observed_at=price.observed_at,
            defaults={"price_per_hour": hourly, "currency": price.currency},
        )
    elif changed:
        PriceObservation.objects.create(
            offer=offer, price_per_hour=hourly, currency=price.currency, observed_at=None
        )
    counts.add("offer", "updated")


@transaction.atomic
def load_catalog(
    gpus: Iterable[GpuIn],
    rates: Iterable[ExchangeRateIn],
    providers: Iterable[ProviderCatalog],
    collective_results: Iterable[CollectiveResultIn] | None = None,
) -> LoadCounts:
    """Load validated fixtures in one transaction; a second load of the same files changes nothing.

    `collective_results` (the estimator's recorded nccl-tests results) are loaded after the
    types they ran on; None leaves the table as it is.
    """
    counts = LoadCounts()
    for rate in rates:
        load_exchange_rate(rate, counts)
    rate_book = RateTable()
    gpu_rows = {entry.slug: load_gpu(entry, counts) for entry in gpus}
    gpu_rows |= {g.slug: g for g in GpuModel.objects.exclude(slug__in=gpu_rows)}
    for catalog in providers:
        provider = load_provider(catalog.provider, counts)
        regions = {}
        for region in catalog.regions:
            values = {"name": region.name, "name_zh": region.name_zh, "geo": region.geo}
            row, created = Region.objects.get_or_create(
                provider=provider, code=region.code, defaults=values
            )
            if not created and any(getattr(row, k) != v for k, v in values.items()):
                for name, value in values.items():
                    setattr(row, name, value)
                row.save(update_fields=list(values))
                counts.add("region", "updated")
            else:
                counts.add("region", "created" if created else "unchanged")
            regions[region.code] = row
        listed = []
        for entry in catalog.instances:
            if entry.gpu not in gpu_rows:
                raise ValueError(f"{provider.slug}/{entry.name}: unknown GPU slug {entry.gpu!r}")
            listed.append(load_instance(provider, entry, gpu_rows, regions, rate_book, counts).pk)
        retire_unlisted_instances(provider, listed, counts)
    if collective_results is not None:
        load_collective_results(list(collective_results), counts)
    return counts
