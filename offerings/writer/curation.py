"""Curators' edits made in the admin: prices typed in by hand, the locks that keep a hand
correction from being overwritten, bulk curation of instance types and the review queue's calls."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models, transaction
from django.db.models import QuerySet
from django.utils import timezone

from offerings.models import (
    Fabric,
    GpuLink,
    InstanceType,
    Offer,
    PriceObservation,
    PurchaseMode,
    SkuReview,
)
from offerings.money import RateTable, UnknownCurrency, gpu_hour_usd

# -- locks ----------------------------------------------------------------------------------------

# Curation state and bookkeeping, never "a fact a scraper could overwrite".
NOT_LOCKABLE = frozenset(
    {
        "locked_fields",
        "fixture_digest",
        "is_verified",
        "is_hidden",
        "last_seen_at",
        "first_seen_at",
        "created_at",
        "updated_at",
    }
)

# Offers are scraper-owned; only these values make sense to pin by hand.
OFFER_LOCKABLE = ("price_per_hour", "currency", "available", "source_url", "basis")


def lockable_fields(model: type[models.Model]) -> list[str]:
    """Names of the model's concrete, editable fields that `locked_fields` may hold."""
    if model is Offer:
        return list(OFFER_LOCKABLE)
    return [
        field.name
        for field in model._meta.concrete_fields
        if field.editable and not field.primary_key and field.name not in NOT_LOCKABLE
    ]


def merge_locks(current: Iterable[str], added: Iterable[str], model: type[models.Model]) -> list:
    """Union of two lock lists, in the model's field order (unknown leftovers last)."""
    wanted = set(current) | set(added)
    order = lockable_fields(model)
    return [name for name in order if name in wanted] + sorted(wanted - set(order))


def lock_all_fields(instances: QuerySet[InstanceType]) -> int:
    """Lock every curated field of the instance types, their GPU links, fabrics and purchase
    modes."""
    instance_ids = list(instances.values_list("pk", flat=True))
    for model, rows in [
        (InstanceType, InstanceType.objects.filter(pk__in=instance_ids)),
        (GpuLink, GpuLink.objects.filter(instance__in=instance_ids)),
        (Fabric, Fabric.objects.filter(instance__in=instance_ids)),
        (PurchaseMode, PurchaseMode.objects.filter(instance__in=instance_ids)),
    ]:
        every_field = lockable_fields(model)
        changed = []
        for row in rows.only("pk", "locked_fields"):
            row.locked_fields = merge_locks(row.locked_fields, every_field, model)
            changed.append(row)
        model.objects.bulk_update(changed, ["locked_fields"])
    return len(instance_ids)


def unlock_all_fields(instances: QuerySet[InstanceType]) -> int:
    """Unlock every field of the instance types, their GPU links, fabrics and purchase modes."""
    instance_ids = list(instances.values_list("pk", flat=True))
    PurchaseMode.objects.filter(instance__in=instance_ids).update(locked_fields=[])
    GpuLink.objects.filter(instance__in=instance_ids).update(locked_fields=[])
    Fabric.objects.filter(instance__in=instance_ids).update(locked_fields=[])
    return InstanceType.objects.filter(pk__in=instance_ids).update(locked_fields=[])


# -- instance types and the review queue ----------------------------------------------------------


def mark_verified(instances: QuerySet[InstanceType]) -> int:
    """Mark the instance types verified today."""
    return instances.update(is_verified=True, verified_at=timezone.localdate())


def set_hidden(instances: QuerySet[InstanceType], hidden: bool) -> int:
    """Hide the instance types from the public pages, or show them again."""
    return instances.update(is_hidden=hidden)


def ignore_skus(reviews: QuerySet[SkuReview]) -> int:
    """Mark SKUs in the review queue as ignored: the scrapers keep filing them, nobody maps them."""
    return reviews.update(status=SkuReview.Status.IGNORED)


# -- curator-entered offers -----------------------------------------------------------------------


def derive_usd_per_gpu_hour(offer: Offer) -> None:
    """Set the derived USD price per GPU-hour; unknown (empty) without a reference rate."""
    try:
        per_gpu, rate = gpu_hour_usd(
            offer.price_per_hour, offer.currency, offer.instance.gpu_count, RateTable()
        )
    except UnknownCurrency:
        offer.price_per_gpu_hour_usd = offer.exchange_rate_date = None
        return
    offer.price_per_gpu_hour_usd = per_gpu
    offer.exchange_rate_date = rate.rate_date if rate else None


def save_curator_offer(offer: Offer, changed: Iterable[str], is_new: bool) -> None:
    """Save a price a curator typed in: stamp it, derive USD, append history if it changed."""
    now = timezone.now()
    price_changed = is_new or bool({"price_per_hour", "currency"} & set(changed))
    if is_new:
        offer.origin = offer.origin or Offer.Origin.CURATOR
        offer.first_seen_at = offer.last_seen_at = now
    if price_changed:
        offer.observed_at = now
        derive_usd_per_gpu_hour(offer)
        if offer.source:  # a curator's price replaces a price source's: it is no longer its
            offer.source = ""
            offer.origin = Offer.Origin.CURATOR
    with transaction.atomic():
        offer.save()
        if price_changed:
            PriceObservation.objects.create(
                offer=offer,
                price_per_hour=offer.price_per_hour,
                currency=offer.currency,
                observed_at=now,
            )
