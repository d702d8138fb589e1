"""The one set-based upsert: history only on change, locks, review queue, retirement, guard."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from offerings import writer
from offerings.models import ExchangeRate, Offer, PriceObservation, ScrapeRun, SkuReview
from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer
from tests.conftest import make_instance, make_offer

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def row(price="80.00", region="us-east-1", kind="on-demand", term=0, **extra) -> ScrapedOffer:
    values = {
        "sku": "hgx.8x",
        "instance_slug": "hgx-8x",
        "region": region,
        "kind": kind,
        "term_months": term,
        "price_per_hour": Decimal(price),
        "currency": "USD",
        "source_url": "https://api.acme.example/prices",
    }
    return ScrapedOffer(**(values | extra))


def run_with(provider, *offers, rejected=(), when=None, **kwargs) -> ScrapeRun:
    when = when or datetime.now(UTC)
    run = writer.start_scrape_run(provider, now=when)
    batch = ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected))
    return writer.upsert_offers(run, batch, now=when, **kwargs)


def counts(run: ScrapeRun) -> tuple:
    return (
        run.status,
        run.fetched,
        run.created,
        run.updated,
        run.unchanged,
        run.retired,
        run.rejected,
    )


@pytest.fixture
def scraped(provider, instance, region):
    """A first good run: two offers of the instance."""
    return run_with(provider, row(), row("30.00", kind="spot"), when=T0)


def test_a_first_run_creates_offers_and_one_history_row_each(scraped, instance):
    assert counts(scraped) == ("succeeded", 2, 2, 0, 0, 0, 0)
    offer = Offer.objects.get(instance=instance, kind="on-demand")
    assert (offer.price_per_hour, offer.price_per_gpu_hour_usd) == (Decimal("80"), Decimal("10"))
    assert (offer.origin, offer.observed_at, offer.is_active) == ("scraper", T0, True)
    assert PriceObservation.objects.filter(run=scraped).count() == 2


def test_an_unchanged_snapshot_writes_no_price_rows_but_advances_last_seen(scraped, provider):
    before = list(Offer.objects.values("pk", "price_per_hour", "currency", "available"))
    later = T0 + timedelta(hours=6)
    run = run_with(provider, row(), row("30.00", kind="spot"), when=later)
    assert counts(run) == ("succeeded", 2, 0, 0, 2, 0, 0)
    assert PriceObservation.objects.count() == 2
    assert list(Offer.objects.values("pk", "price_per_hour", "currency", "available")) == before
    assert set(Offer.objects.values_list("last_seen_at", flat=True)) == {later}
    assert ScrapeRun.objects.filter(provider=provider).count() == 2


def test_a_changed_price_is_updated_and_appends_one_history_row(scraped, provider, instance):
    run = run_with(provider, row("72.00"), row("30.00", kind="spot"))
    assert counts(run) == ("succeeded", 2, 0, 1, 1, 0, 0)
    offer = Offer.objects.get(instance=instance, kind="on-demand")
    assert offer.price_per_gpu_hour_usd == Decimal("9")
    assert list(offer.history.values_list("price_per_hour", flat=True)) == [
        Decimal("72"),
        Decimal("80"),
    ]


def test_a_curator_locked_price_is_never_overwritten(scraped, provider, instance):
    offer = Offer.objects.get(instance=instance, kind="on-demand")
    offer.locked_fields = ["price_per_hour", "available"]
    offer.available = True
    offer.save()
    run = run_with(provider, row("1.00", available=False), row("30.00", kind="spot"))
    offer.refresh_from_db()
    assert (offer.price_per_hour, offer.available) == (Decimal("80"), True)
    assert offer.history.count() == 1
    assert run.updated == 0
    assert offer.last_seen_at == run.started_at


def test_a_curated_catalog_price_is_taken_over_by_the_scraper(provider, instance, region):
    catalog = make_offer(instance, region, price="96.00")
    run = run_with(provider, row("80.00"))
    catalog.refresh_from_db()
    assert (catalog.origin, catalog.price_per_hour, run.updated) == ("scraper", Decimal("80"), 1)


def test_a_sku_mapping_to_no_curated_instance_type_goes_to_the_review_queue(provider, instance):
    unknown = row(sku="hgx.h300.8x", instance_slug=None, parsed={"gpu": "h300"})
    missing = row(sku="gone.8x", instance_slug="gone-8x")
    run = run_with(provider, row(), unknown, missing)
    assert counts(run) == ("succeeded", 3, 1, 0, 0, 0, 0)
    assert Offer.objects.count() == 1
    review = SkuReview.objects.get(sku="hgx.h300.8x")
    assert (review.status, review.parsed["gpu"], review.times_seen) == ("new", "h300", 1)
    assert review.parsed["prices"][0]["price_per_hour"] == "80.00"
    assert SkuReview.objects.get(sku="gone.8x").parsed["no_curated_instance_type"] == "gone-8x"
    run_with(provider, row(), unknown, missing)
    assert SkuReview.objects.get(sku="hgx.h300.8x").times_seen == 2


def test_an_offer_is_retired_only_after_two_consecutive_good_runs_without_it(scraped, provider):
    spot = Offer.objects.get(kind="spot")
    first = run_with(provider, row(), row("29.00", kind="reserved", term=12))
    spot.refresh_from_db()
    assert (first.retired, spot.is_active, spot.missing_runs) == (0, True, 1)
    second = run_with(provider, row(), row("29.00", kind="reserved", term=12))
    spot.refresh_from_db()
    assert (second.retired, spot.is_active, spot.missing_runs) == (1, False, 2)
    # It comes back: active again, counted as an update, the count of misses reset.
    third = run_with(
        provider, row(), row("30.00", kind="spot"), row("29.00", kind="reserved", term=12)
    )
    spot.refresh_from_db()
    assert (third.updated, spot.is_active, spot.missing_runs) == (1, True, 0)


def test_a_run_between_two_misses_that_returns_the_offer_resets_the_count(scraped, provider):
    run_with(provider, row())
    run_with(provider, row(), row("30.00", kind="spot"))
    run_with(provider, row())
    assert Offer.objects.get(kind="spot").is_active


def test_offers_from_the_curated_catalog_are_never_retired_by_a_scraper(provider, instance, region):
    catalog = make_offer(instance, region, price="96.00", kind="spot")
    other = make_instance(provider, instance.gpu, name="other.8x")
    for _ in range(3):
        run_with(provider, row(sku="other.8x", instance_slug="other-8x"))
    catalog.refresh_from_db()
    assert catalog.is_active
    assert other.offers.count() == 1


def test_a_rejected_row_keeps_its_offer_from_being_counted_missing(scraped, provider):
    bad = RejectedRow(
        sku="hgx.8x", reason="bad", instance_slug="hgx-8x", region="us-east-1", kind="spot"
    )
    for _ in range(3):
        run_with(provider, row(), rejected=[bad])
    spot = Offer.objects.get(kind="spot")
    assert (spot.is_active, spot.missing_runs, spot.price_per_hour) == (True, 0, Decimal("30"))


def test_the_row_count_guard_rejects_a_run_far_smaller_than_the_last_good_one(scraped, provider):
    run = run_with(provider, row("1.50"), min_row_ratio=Decimal("0.8"))
    assert run.status == "rejected"
    assert "row-count guard: 1 row(s) fetched, fewer than 80% of the 2" in run.error_messages[0]
    assert (run.created, run.updated, run.unchanged, run.retired) == (0, 0, 0, 0)
    assert Offer.objects.get(kind="on-demand").price_per_hour == Decimal("80")
    assert Offer.objects.get(kind="spot").missing_runs == 0


def test_a_rejected_run_changes_nothing_at_all(scraped, provider):
    before = sorted(
        Offer.objects.values_list("pk", "price_per_hour", "last_seen_at", "missing_runs")
    )
    history = PriceObservation.objects.count()
    run = run_with(
        provider, row("1.00"), row(sku="x", instance_slug=None), min_row_ratio=Decimal("1.01")
    )
    assert run.status == "rejected"
    after = sorted(
        Offer.objects.values_list("pk", "price_per_hour", "last_seen_at", "missing_runs")
    )
    assert after == before
    assert PriceObservation.objects.count() == history
    assert not SkuReview.objects.exists()


def test_the_guard_ratio_defaults_to_the_setting(scraped, provider, settings):
    settings.REFRESH_MIN_ROW_RATIO = Decimal("0.5")
    assert run_with(provider, row()).status == "succeeded"
    settings.REFRESH_MIN_ROW_RATIO = Decimal("0.8")
    # The last good run now has 1 row; 1 >= 0.8 x 1.
    assert run_with(provider, row()).status == "succeeded"


def test_an_empty_result_fails_and_changes_nothing(scraped, provider):
    run = run_with(provider)
    assert (run.status, run.error_messages) == (
        "failed",
        ["the provider returned no offers; nothing changed"],
    )
    assert Offer.objects.filter(is_active=True, missing_runs=0).count() == 2


def test_a_run_whose_every_row_is_rejected_fails_and_changes_nothing(scraped, provider):
    bad = RejectedRow(sku="hgx.8x", reason="retailPrice: Field required")
    run = run_with(provider, rejected=[bad, bad])
    assert run.status == "failed"
    assert run.rejected_rows[0]["reason"] == "retailPrice: Field required"
    assert Offer.objects.filter(is_active=True, missing_runs=0).count() == 2


def test_an_unknown_currency_is_rejected_per_row_with_its_reason(provider, instance):
    run = run_with(provider, row(), row("500", kind="spot", currency="XYZ"))
    assert counts(run) == ("succeeded", 2, 1, 0, 0, 0, 1)
    assert run.rejected_rows == [
        {
            "sku": "hgx.8x",
            "region": "us-east-1",
            "kind": "spot",
            "term_months": 0,
            "reason": "no reference exchange rate for XYZ",
        }
    ]


def test_a_known_currency_is_converted_at_its_dated_reference_rate(provider, instance):
    ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2026, 11, 27),
        usd_per_unit=Decimal("0.14"),
        source_url="https://www.ecb.europa.eu/",
    )
    run_with(provider, row("400", currency="CNY"))
    offer = Offer.objects.get()
    assert (offer.currency, offer.price_per_hour) == ("CNY", Decimal("400"))
    assert offer.price_per_gpu_hour_usd == Decimal("7")
    assert offer.exchange_rate_date == date(2026, 11, 27)


@pytest.mark.parametrize("price", ["0.0001", "100000", "999999999999"])
def test_absurd_prices_are_rejected_and_the_stored_price_is_kept(scraped, provider, price):
    run = run_with(provider, row(price), row("30.00", kind="spot"))
    assert run.rejected == 1
    assert "price" in run.rejected_rows[0]["reason"]
    on_demand = Offer.objects.get(kind="on-demand")
    assert (on_demand.price_per_hour, on_demand.missing_runs) == (Decimal("80"), 0)


def test_a_duplicated_row_with_the_same_price_is_ingested_once(provider, instance):
    run = run_with(provider, row(), row())
    assert counts(run) == ("succeeded", 2, 1, 0, 0, 0, 1)
    assert "duplicate" in run.rejected_rows[0]["reason"]


def test_duplicated_rows_with_different_prices_keep_the_stored_price(scraped, provider):
    run = run_with(provider, row("1.00"), row("2.00"), row("30.00", kind="spot"))
    assert run.rejected == 2
    assert "conflicting prices" in run.rejected_rows[0]["reason"]
    on_demand = Offer.objects.get(kind="on-demand")
    assert (on_demand.price_per_hour, on_demand.missing_runs) == (Decimal("80"), 0)


def test_reserved_offers_are_keyed_by_term(provider, instance):
    run_with(provider, row("50", kind="reserved", term=12), row("40", kind="reserved", term=36))
    assert sorted(Offer.objects.values_list("term_months", flat=True)) == [12, 36]


def test_new_regions_are_added_with_the_name_and_continent_the_scraper_gives(provider, instance):
    run_with(provider, row(region="eu-west-9", region_name="Atlantis", geo="eu"))
    region = Offer.objects.get().region
    assert (region.code, region.name, region.geo) == ("eu-west-9", "Atlantis", "eu")


def test_the_fetched_count_is_the_sum_of_the_outcomes(scraped, provider):
    bad = RejectedRow(sku="z", reason="bad")
    run = run_with(
        provider,
        row("70"),
        row("30.00", kind="spot"),
        row(kind="reserved", term=12),
        row(sku="new", instance_slug=None),
        rejected=[bad],
    )
    assert run.fetched == run.created + run.updated + run.unchanged + run.rejected + 1


def test_the_upsert_is_set_based_its_query_count_does_not_grow_with_rows(provider, instance):
    def queries_for(n: int) -> int:
        regions = [f"r{i}" for i in range(n)]
        with CaptureQueriesContext(connection) as ctx:
            run_with(provider, *(row(region=r, price=str(80 + n)) for r in regions))
        return len(ctx.captured_queries)

    assert queries_for(3) == queries_for(60)


def test_a_curator_mapping_in_the_review_queue_routes_the_sku_to_its_instance(provider, instance):
    SkuReview.objects.create(
        provider=provider, sku="hgx.8x.v2", status="mapped", mapped_to=instance
    )
    run = run_with(provider, row(sku="hgx.8x.v2", instance_slug=None))
    assert run.created == 1
    assert Offer.objects.get().instance == instance


def test_an_ignored_sku_stays_ignored_when_seen_again(provider, instance):
    SkuReview.objects.create(provider=provider, sku="t4.1x", status="ignored")
    run_with(provider, row(), row(sku="t4.1x", instance_slug=None))
    review = SkuReview.objects.get(sku="t4.1x")
    assert (review.status, review.times_seen) == ("ignored", 2)


# -- when a price was read: replays pass their recording's date, or none -------------------------


def test_a_replay_without_a_date_stores_undated_prices_and_history(provider, instance, region):
    run_with(provider, row("80.00"), observed_at=None)
    offer = Offer.objects.get(instance=instance, kind="on-demand")
    assert offer.observed_at is None
    assert not offer.is_stale()  # "date unknown": its age is unknown, not known to be old
    assert list(offer.history.values_list("observed_at", flat=True)) == [None]


def test_an_undated_reading_never_replaces_a_dated_price(scraped, provider, instance):
    run = run_with(provider, row("70.00"), row("30.00", kind="spot"), observed_at=None)
    offer = Offer.objects.get(instance=instance, kind="on-demand")
    assert (offer.price_per_hour, offer.observed_at) == (Decimal("80.00"), T0)
    assert offer.history.count() == 1
    assert (run.updated, run.unchanged) == (0, 2)


def test_an_older_reading_never_replaces_a_newer_price(scraped, provider, instance):
    run_with(provider, row("70.00"), observed_at=T0 - timedelta(days=30))
    offer = Offer.objects.get(instance=instance, kind="on-demand")
    assert (offer.price_per_hour, offer.observed_at) == (Decimal("80.00"), T0)


def test_a_dated_reading_replaces_an_undated_price_with_its_own_date(provider, instance, region):
    run_with(provider, row("80.00"), observed_at=None)
    run_with(provider, row("75.00"), observed_at=T0)
    offer = Offer.objects.get(instance=instance, kind="on-demand")
    assert (offer.price_per_hour, offer.observed_at) == (Decimal("75.00"), T0)
    assert list(offer.history.values_list("observed_at", flat=True)) == [T0, None]
