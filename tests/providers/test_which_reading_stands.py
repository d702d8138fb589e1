"""One rule for which reading of a price stands, whichever writer brings it (issue 28, item 2).

A dated reading beats an undated one and a newer an older, from any writer; between undated
readings the provider's own price data ranks above the catalog citing the provider, a curated
entry above a third-party price catalog; every writer runs again in any order and changes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import permutations

import pytest
from django.db import connection

from offerings import writer
from offerings.models import Offer, PriceCheck, PriceObservation
from offerings.money import RateTable
from offerings.schemas import PriceIn, ScrapeBatch, ScrapedOffer
from offerings.writer import standing
from offerings.writer.curated import LoadCounts, record_catalog_price
from tests.conftest import make_offer

T0 = datetime(2026, 6, 1, tzinfo=UTC)
LATER = T0 + timedelta(days=30)
PAGE = "https://acme.example/pricing"
SKYPILOT_FILE = "https://github.com/skypilot-org/skypilot-catalog/blob/abc/catalogs/v8/acme/vms.csv"


def scraped(price: str, provider: str = "") -> ScrapedOffer:
    return ScrapedOffer(
        sku="hgx.8x",
        instance_slug="hgx-8x",
        provider=provider,
        region="us-east-1",
        kind="on-demand",
        term_months=0,
        price_per_hour=Decimal(price),
        currency="USD",
        source_url=SKYPILOT_FILE if provider else "https://api.acme.example/prices",
    )


def provider_run(provider, price: str, observed_at):
    run = writer.start_scrape_run(provider)
    return writer.upsert_offers(run, ScrapeBatch(offers=(scraped(price),)), observed_at=observed_at)


def skypilot_run(price: str, observed_at):
    source = writer.ensure_price_source(
        "skypilot", "SkyPilot", "https://github.com/skypilot-org/skypilot"
    )
    run = writer.start_scrape_run(source)
    batch = ScrapeBatch(offers=(scraped(price, provider="acme"),))
    return writer.upsert_offers(run, batch, observed_at=observed_at)


def catalog_price(instance, region, price: str, observed_at, basis="provider") -> LoadCounts:
    counts = LoadCounts()
    entry = PriceIn(
        region=region.code,
        kind="on-demand",
        price_per_hour=Decimal(price),
        currency="USD",
        observed_at=observed_at,
        source_url=PAGE,
        basis=basis,
    )
    record_catalog_price(instance, region, entry, RateTable(), counts)
    return counts


def held(offer: Offer) -> tuple:
    offer.refresh_from_db()
    return offer.price_per_hour, offer.observed_at, offer.origin, offer.source


# -- the rule, in Python and in the SQL of the set-based merge -----------------------------------

STORED = {
    "provider data": {"origin": "scraper", "source": "", "basis": "provider"},
    "provider page": {"origin": "catalog", "source": "", "basis": "provider"},
    "third-party fixture": {"origin": "catalog", "source": "", "basis": "third-party"},
    "price source": {"origin": "scraper", "source": "skypilot", "basis": "third-party"},
}
DATES = {"undated": None, "early": T0, "late": LATER}


@pytest.mark.parametrize("stored", list(STORED))
@pytest.mark.parametrize("held_at", list(DATES))
@pytest.mark.parametrize("active", [True, False])
def test_the_merge_and_the_python_rule_agree_on_every_case(
    instance, region, stored, held_at, active
):
    offer = make_offer(
        instance, region, observed_at=DATES[held_at], is_active=active, **STORED[stored]
    )
    for source in ("", "skypilot"):
        new_rank = standing.scraped_rank(source)
        same = offer.origin == "scraper" and offer.source == source
        for new_at in DATES.values():
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT {standing.held_sql('%(new)s::timestamptz')} "
                    "FROM offerings_offer o WHERE o.id = %(id)s",
                    {"new": new_at, "id": offer.pk, "source": source, "rank": new_rank},
                )
                (sql_held,) = cursor.fetchone()
            assert sql_held is (not standing.stands(new_at, new_rank, same, offer)), (
                stored,
                held_at,
                active,
                source,
                new_at,
            )


def test_dates_decide_before_ranks_and_ranks_only_between_undated_readings(instance, region):
    third_party = make_offer(instance, region, observed_at=LATER, **STORED["price source"])
    # The provider's own data ranks highest, yet its undated or older reading does not replace
    # a newer dated one.
    assert not standing.stands(None, standing.PROVIDER_DATA, False, third_party)
    assert not standing.stands(T0, standing.PROVIDER_DATA, False, third_party)
    assert standing.stands(LATER + timedelta(days=1), standing.PRICE_SOURCE, False, third_party)
    third_party.observed_at = None
    assert standing.stands(None, standing.PROVIDER_PAGE, False, third_party)
    assert not standing.stands(None, standing.PRICE_SOURCE, False, Offer(**STORED["provider page"]))


# -- the writers ----------------------------------------------------------------------------------


def test_an_undated_provider_replay_does_not_replace_a_dated_price_sources_reading(
    provider, instance, region
):
    skypilot_run("70.00", observed_at=T0)
    offer = Offer.objects.get(instance=instance, region=region)
    run = provider_run(provider, "80.00", observed_at=None)
    assert held(offer) == (Decimal("70.00"), T0, "scraper", "skypilot")
    assert offer.history.count() == 1
    assert run.status == "succeeded"
    # A dated reading of the provider's own, newer than SkyPilot's, replaces it.
    provider_run(provider, "80.00", observed_at=LATER)
    assert held(offer) == (Decimal("80.00"), LATER, "scraper", "")
    assert offer.basis == "provider"


def test_a_newer_dated_price_source_reading_replaces_an_older_catalog_price(instance, region):
    catalog_price(instance, region, "90.00", observed_at=T0)
    offer = Offer.objects.get(instance=instance, region=region)
    skypilot_run("70.00", observed_at=LATER)
    assert held(offer) == (Decimal("70.00"), LATER, "scraper", "skypilot")
    assert offer.basis == "third-party"
    # The catalog read again changes nothing: its reading is older.
    assert catalog_price(instance, region, "90.00", observed_at=T0).changed() == 0
    assert held(offer) == (Decimal("70.00"), LATER, "scraper", "skypilot")
    assert list(offer.history.values_list("price_per_hour", flat=True)) == [
        Decimal("70.00"),
        Decimal("90.00"),
    ]


def test_an_older_or_undated_price_source_reading_is_kept_as_a_check(instance, region):
    catalog_price(instance, region, "90.00", observed_at=LATER)
    offer = Offer.objects.get(instance=instance, region=region)
    for when in (T0, None):
        skypilot_run("70.00", observed_at=when)
        assert held(offer) == (Decimal("90.00"), LATER, "catalog", "")
        check = PriceCheck.objects.get(offer=offer, source="skypilot")
        assert (check.price_per_hour, check.observed_at) == (Decimal("70.00"), when)


def test_between_undated_readings_a_fixture_copy_keeps_its_offer_from_the_price_source(
    instance, region
):
    catalog_price(instance, region, "90.00", observed_at=None, basis="third-party")
    offer = Offer.objects.get(instance=instance, region=region)
    skypilot_run("70.00", observed_at=None)
    assert held(offer) == (Decimal("90.00"), None, "catalog", "")
    # SkyPilot first, then the fixture: the fixture's curated copy ranks above it.
    offer.delete()
    skypilot_run("70.00", observed_at=None)
    catalog_price(instance, region, "90.00", observed_at=None, basis="third-party")
    assert held(Offer.objects.get(instance=instance, region=region))[:3] == (
        Decimal("90.00"),
        None,
        "catalog",
    )


@pytest.mark.parametrize(
    "dates",
    [
        {"provider": None, "catalog": None, "skypilot": None},
        {"provider": None, "catalog": T0, "skypilot": LATER},
        {"provider": T0, "catalog": None, "skypilot": LATER},
        {"provider": LATER, "catalog": T0, "skypilot": None},
    ],
    ids=["all undated", "skypilot newest", "skypilot newest over an older provider", "provider"],
)
def test_every_writer_run_again_in_any_order_changes_nothing(provider, instance, region, dates):
    writers = {
        "provider": lambda: provider_run(provider, "80.00", observed_at=dates["provider"]),
        "catalog": lambda: catalog_price(instance, region, "90.00", dates["catalog"]),
        "skypilot": lambda: skypilot_run("70.00", observed_at=dates["skypilot"]),
    }
    outcomes = set()
    for order in permutations(writers):
        Offer.objects.all().delete()
        PriceCheck.objects.all().delete()
        for name in order:
            writers[name]()
        offer = Offer.objects.get(instance=instance, region=region)
        first = held(offer)
        history = PriceObservation.objects.filter(offer=offer).count()
        for name in order:
            outcome = writers[name]()
            # Nothing written again: no offer counted as updated either.
            if isinstance(outcome, LoadCounts):
                assert outcome.changed() == 0, (order, outcome)
            else:
                assert (outcome.created, outcome.updated) == (0, 0), (order, name)
        assert held(offer) == first, order
        assert PriceObservation.objects.filter(offer=offer).count() == history, order
        outcomes.add(first)
    # Whatever the order, the same reading stands.
    assert len(outcomes) == 1, outcomes


def test_a_fixture_corrected_under_the_same_date_replaces_its_own_reading(instance, region):
    catalog_price(instance, region, "90.00", observed_at=T0)
    assert catalog_price(instance, region, "90.00", observed_at=T0).changed() == 0
    assert catalog_price(instance, region, "95.00", observed_at=T0).changed() == 1
    offer = Offer.objects.get(instance=instance, region=region)
    assert held(offer) == (Decimal("95.00"), T0, "catalog", "")
    # The reading of that moment is corrected in the history, not recorded twice.
    assert list(offer.history.values_list("price_per_hour", "observed_at")) == [
        (Decimal("95.00"), T0)
    ]


def test_a_locked_basis_stays_through_the_same_writers_readings_only(provider, instance, region):
    provider_run(provider, "80.00", observed_at=T0)
    offer = Offer.objects.get(instance=instance, region=region)
    Offer.objects.filter(pk=offer.pk).update(basis="third-party", locked_fields=["basis"])
    provider_run(provider, "85.00", observed_at=LATER)
    offer.refresh_from_db()
    assert (offer.price_per_hour, offer.basis) == (Decimal("85.00"), "third-party")
    # Another writer's newer reading replaces the reading, and brings its own basis.
    catalog_price(instance, region, "90.00", observed_at=LATER + timedelta(days=1))
    offer.refresh_from_db()
    assert (offer.price_per_hour, offer.origin, offer.basis) == (
        Decimal("90.00"),
        "catalog",
        "provider",
    )


def test_a_locked_basis_stays_through_the_fixtures_next_reading(instance, region):
    catalog_price(instance, region, "90.00", observed_at=T0)
    offer = Offer.objects.get(instance=instance, region=region)
    Offer.objects.filter(pk=offer.pk).update(basis="third-party", locked_fields=["basis"])
    catalog_price(instance, region, "90.00", observed_at=T0)  # a relabel would set provider
    catalog_price(instance, region, "95.00", observed_at=LATER)
    offer.refresh_from_db()
    assert (offer.price_per_hour, offer.basis) == (Decimal("95.00"), "third-party")
