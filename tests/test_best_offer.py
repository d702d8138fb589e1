"""The row's default price, kept by the database (migration 0006), always equals the one the
FilterSet would choose among the offers: on-demand first, dated before undated, cheapest per
GPU-hour, lowest id."""

import random
from decimal import Decimal

import pytest
from django.db.models import F
from django.utils import timezone

from offerings.models import InstanceType, Offer, OfferKind, Region
from tests.conftest import make_instance, make_offer


def expected_best(instance: InstanceType) -> tuple[int | None, Decimal | None, list[str]]:
    """The default row price computed in Python's terms from the offers themselves."""
    offers = Offer.objects.current().filter(instance=instance)
    best = offers.headline_first().first()
    kinds = sorted(set(offers.values_list("kind", flat=True)))
    if best is None:
        return None, None, kinds
    return best.pk, best.price_per_gpu_hour_usd, kinds


def stored_best(instance: InstanceType) -> tuple[int | None, Decimal | None, list[str]]:
    row = InstanceType.objects.values(
        "best_offer_id", "best_price_gpu_hour_usd", "offer_kinds"
    ).get(pk=instance.pk)
    return row["best_offer_id"], row["best_price_gpu_hour_usd"], sorted(row["offer_kinds"])


def test_an_instance_without_offers_has_no_default_price(instance):
    assert stored_best(instance) == (None, None, [])


def test_on_demand_is_preferred_over_a_cheaper_spot_price(instance, region):
    spot = make_offer(instance, region, price="8.00", kind="spot")
    assert stored_best(instance)[0] == spot.pk
    on_demand = make_offer(instance, region, price="16.00")
    assert stored_best(instance) == (on_demand.pk, Decimal("2.000000"), ["on-demand", "spot"])


def test_the_next_offer_takes_over_when_the_best_is_retired_repriced_or_deleted(
    instance, region, provider
):
    other = Region.objects.create(provider=provider, code="eu-west-1", name="Ireland", geo="eu")
    cheap = make_offer(instance, region, price="8.00")
    dear = make_offer(instance, other, price="16.00")
    assert stored_best(instance)[0] == cheap.pk

    Offer.objects.filter(pk=cheap.pk).update(price_per_gpu_hour_usd=Decimal("3"))
    assert stored_best(instance) == (dear.pk, Decimal("2.000000"), ["on-demand"])

    dear.is_active = False
    dear.save()
    assert stored_best(instance)[0] == cheap.pk

    cheap.delete()
    assert stored_best(instance) == (None, None, [])


def test_a_price_moving_between_instances_updates_both(instance, region, provider, gpu):
    second = make_instance(provider, gpu, name="hgx.4x", gpu_count=4)
    offer = make_offer(instance, region, price="8.00")
    Offer.objects.filter(pk=offer.pk).update(instance=second)
    assert stored_best(instance) == (None, None, [])
    assert stored_best(second)[0] == offer.pk


def test_saving_an_instance_loaded_before_its_offers_changed_keeps_the_default_price(
    instance, region
):
    loaded = InstanceType.objects.get(pk=instance.pk)
    offer = make_offer(instance, region, price="8.00")
    loaded.notes = "edited by a curator"
    loaded.save()
    assert stored_best(instance)[0] == offer.pk
    loaded.save(update_fields=["notes", "best_offer"])
    assert stored_best(instance)[0] == offer.pk


def test_a_dated_price_heads_the_row_over_a_cheaper_undated_one_of_the_same_kind(
    instance, region, provider
):
    """Lambda's page gives a dated 8x H100 price for us-east-1; SkyPilot's undated, older
    figures for 16 other regions were cheaper and took the headline."""
    other = Region.objects.create(provider=provider, code="eu-west-1", name="Ireland", geo="eu")
    undated = make_offer(instance, other, price="23.92", observed_at=None)
    dated = make_offer(instance, region, price="31.92", observed_at=timezone.now())
    assert stored_best(instance)[0] == dated.pk
    assert expected_best(instance)[0] == dated.pk
    # A cheaper undated spot price does not change that: on-demand first, then dated.
    make_offer(instance, other, price="8.00", kind="spot", observed_at=None)
    assert stored_best(instance)[0] == dated.pk
    Offer.objects.filter(pk=dated.pk).update(is_active=False)
    assert stored_best(instance)[0] == undated.pk  # undated stands when nothing dated does


def test_unknown_prices_sort_after_known_ones(instance, region, provider):
    other = Region.objects.create(provider=provider, code="eu-west-1", name="Ireland", geo="eu")
    unknown = make_offer(instance, region, price="1.00", per_gpu=None, kind="spot")
    known = make_offer(instance, other, price="80.00", kind="spot")
    assert unknown.pk < known.pk
    assert stored_best(instance)[0] == known.pk


@pytest.mark.django_db
def test_random_writes_always_leave_the_default_price_the_filterset_would_choose(provider, gpu):
    rng = random.Random(11)
    regions = [
        Region.objects.create(provider=provider, code=f"r{i}", name=f"R{i}", geo="na")
        for i in range(3)
    ]
    instances = [make_instance(provider, gpu, name=f"box.{i}", gpu_count=8) for i in range(4)]
    offers: list[Offer] = []
    for step in range(80):
        action = rng.choice(["add", "add", "reprice", "date", "retire", "revive", "delete", "bulk"])
        if action == "add" or not offers:
            kind = rng.choice(OfferKind.values)
            term = 12 if kind == "reserved" else 0
            target = rng.choice(instances)
            region = rng.choice(regions)
            if Offer.objects.filter(
                instance=target, region=region, kind=kind, term_months=term
            ).exists():
                continue
            price = Decimal(rng.choice(["8", "16", "24", "16"]))
            offers.append(make_offer(target, region, price=price, kind=kind, term_months=term))
        elif action == "reprice":
            chosen = rng.choice(offers)
            Offer.objects.filter(pk=chosen.pk).update(
                price_per_gpu_hour_usd=rng.choice([None, Decimal("1"), Decimal("2")])
            )
        elif action == "date":  # a reading with or without a date
            Offer.objects.filter(pk=rng.choice(offers).pk).update(
                observed_at=rng.choice([None, timezone.now()])
            )
        elif action in ("retire", "revive"):
            Offer.objects.filter(pk=rng.choice(offers).pk).update(is_active=action == "revive")
        elif action == "delete":
            offers.pop(rng.randrange(len(offers))).delete()
        else:  # one statement touching many rows and instances at once
            Offer.objects.filter(pk__in=[o.pk for o in offers[::2]]).update(
                price_per_gpu_hour_usd=F("price_per_gpu_hour_usd") + 1
            )
        for target in instances:
            assert stored_best(target) == expected_best(target), (step, action)


def test_the_loaded_catalog_has_every_default_price_right(catalog):
    for instance in InstanceType.objects.all():
        assert stored_best(instance) == expected_best(instance), instance.slug


def test_the_scrapers_merge_keeps_the_default_price_through_create_change_and_retire(
    instance, region, provider
):
    """upsert_offers writes with COPY + INSERT ... ON CONFLICT and bulk retirement statements."""
    from tests.providers.test_upsert import row, run_with

    Region.objects.create(provider=provider, code="eu-west-1", name="Ireland", geo="eu")
    others = (
        row("40.00", kind="spot"),
        row("72.00", region="eu-west-1"),
        row("30.00", region="eu-west-1", kind="spot"),
        row("50000.00", kind="reserved", term=12),
    )
    run_with(provider, row("80.00"), *others)
    assert stored_best(instance) == expected_best(instance)
    assert stored_best(instance)[1] == Decimal("9.000000")  # 72 / 8 GPUs, on-demand preferred
    run_with(provider, row("64.00"), *others)
    assert stored_best(instance)[1] == Decimal("8.000000")
    for _ in range(2):  # an offer missing from two good runs is retired
        run = run_with(provider, *others)
        assert run.status == "succeeded"
    assert stored_best(instance) == expected_best(instance)
    assert stored_best(instance)[1] == Decimal("9.000000")


def test_a_priced_undated_offer_heads_the_row_over_a_dated_one_with_no_usd_figure(
    instance, region, provider
):
    """A curator's dated price in a currency with no reference rate has no USD figure: it must
    not head the row (and sort it last) over an undated price that has one."""
    other = Region.objects.create(provider=provider, code="eu-west-1", name="Ireland", geo="eu")
    make_offer(instance, region, price="30.00", per_gpu=None, observed_at=timezone.now())
    undated = make_offer(instance, other, price="24.00", observed_at=None)
    assert stored_best(instance)[0] == undated.pk
    assert expected_best(instance)[0] == undated.pk
