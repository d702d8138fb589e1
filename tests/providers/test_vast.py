"""Vast.ai: bucketing of marketplace offers, the bucket table, and the recording end to end."""

from __future__ import annotations

import tomllib
from decimal import Decimal

import pytest
from django.conf import settings

from offerings.models import Offer, PriceObservation, ScrapeRun, SkuReview
from offerings.schemas import RejectedRow
from providers.base import ScrapeContext
from providers.scrapers import vast
from tests.providers.conftest import replay_command


def offer(**changes) -> dict:
    """An 8x RTX 4090 offer in Utah as the search answers it (SkyPilot's real 3.20 per hour)."""
    base = {
        "id": 1,
        "gpu_name": "RTX 4090",
        "num_gpus": 8,
        "gpu_ram": 24564,
        "bw_nvlink": Decimal("0.0"),
        "dph_total": Decimal("3.20"),
        "min_bid": Decimal("1.60"),
        "geolocation": "Utah, US",
        "rentable": True,
    }
    return base | changes


def placed(**changes) -> vast.Placed:
    result = vast.parse_offer(offer(**changes))
    assert isinstance(result, vast.Placed), result
    return result


def test_an_offer_lands_in_its_bucket_and_region():
    p = placed()
    assert (p.gpu, p.band, p.bucket, p.target) == (
        "rtx-4090",
        0,
        "8x RTX 4090, no NVLink",
        "8x-rtx-4090",
    )
    assert (p.region, p.region_name, p.geo) == ("US-UT", "Utah, US", "na")


@pytest.mark.parametrize(
    ("geolocation", "region"),
    [
        ("France, FR", "FR"),
        ("US", "US"),
        (", US", "US"),
        ("Quebec, CA", "CA"),
        ("Texas, US", "US-TX"),
    ],
)
def test_regions_are_countries_or_us_states(geolocation, region):
    assert placed(geolocation=geolocation).region == region


@pytest.mark.parametrize(
    ("bw", "band"),
    [("0.0", 0), ("0.4", 0), ("99.9", 0), ("100", 100), ("371.5", 300), ("905", 900)],
)
def test_nvlink_bandwidth_falls_in_bands_of_100_gbytes(bw, band):
    assert vast.nvlink_band(Decimal(bw)) == band


def test_a_pcie_only_gpu_reporting_nvlink_gets_its_own_bucket_for_review():
    p = placed(bw_nvlink=Decimal("112.0"))
    assert p.target is None
    assert vast.bucket_slug(p.gpu, 8, p.band) == "8x-rtx-4090-nvlink-100"


def test_a_link_unknown_curated_bucket_takes_every_nvlink_band():
    sxm = dict(gpu_name="H100 SXM", gpu_ram=81559)
    assert placed(**sxm, bw_nvlink=Decimal("0")).target == "8x-h100-sxm"
    assert placed(**sxm, bw_nvlink=Decimal("420")).target == "8x-h100-sxm"


def test_a100_memory_decides_40_or_80_gb():
    assert placed(gpu_name="A100 SXM4", gpu_ram=40960).gpu == "a100-sxm-40gb"
    assert placed(gpu_name="A100 SXM4", gpu_ram=81920).gpu == "a100-sxm-80gb"


def test_a_bucket_is_priced_at_its_cheapest_offer_with_the_median_beside_it():
    group = [
        placed(id=1, dph_total=Decimal("3.60"), min_bid=None),
        placed(id=2, dph_total=Decimal("3.20"), min_bid=Decimal("1.50")),
        placed(id=3, dph_total=Decimal("4.00"), min_bid=Decimal("1.70")),
    ]
    on_demand, spot = vast.summarize(group)
    assert (on_demand.kind, on_demand.price_per_hour, on_demand.sku) == (
        "on-demand",
        Decimal("3.20"),
        "8x RTX 4090",
    )
    assert (on_demand.parsed["offers"], on_demand.parsed["median"]) == (3, "3.60")
    # Spot: the cheapest interruptible floor of the offers that have one (1.50 of 1.50 / 1.70).
    assert (spot.kind, spot.price_per_hour, spot.parsed["median"]) == (
        "spot",
        Decimal("1.50"),
        "1.60",
    )


def test_single_gpu_and_unrentable_offers_are_left_out():
    assert vast.parse_offer(offer(num_gpus=1)) is None
    assert vast.parse_offer(offer(rentable=False)) is None


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"dph_total": "3.20"}, "dph_total: Value error, expected a JSON number, got str"),
        ({"num_gpus": None}, "num_gpus: Input should be a valid integer"),
        ({"geolocation": "somewhere"}, "unreadable geolocation 'somewhere'"),
        ({"dph_total": Decimal("-3.2")}, "implausible offer price"),
        ({"dph_total": Decimal("0")}, "implausible offer price"),
        ({"dph_total": Decimal("99999")}, "implausible offer price"),
    ],
)
def test_bad_offers_are_rejected_alone_with_their_reason(changes, reason):
    rejected = vast.parse_offer(offer(**changes))
    assert isinstance(rejected, RejectedRow)
    assert reason in rejected.reason
    assert rejected.sku == "offer 1"


def test_an_implausible_offer_keeps_its_bucket_price_stored():
    rejected = vast.parse_offer(offer(dph_total=Decimal("0.01")))
    assert (rejected.instance_slug, rejected.region, rejected.kind) == (
        "8x-rtx-4090",
        "US-UT",
        "on-demand",
    )


def test_every_bucket_target_is_a_curated_vast_instance_type():
    with (settings.BASE_DIR / "fixtures" / "providers" / "vast.toml").open("rb") as handle:
        curated = {i["slug"] for i in tomllib.load(handle)["instances"]}
    targets = {slug for slug, _ in vast.BUCKETS.values()}
    assert targets == curated


# -- the recording, end to end ------------------------------------------------------------------


def test_the_vast_recording_gives_one_row_per_bucket_and_region(replay):
    batch = vast.fetch(replay("vast"), ScrapeContext(now=None, api_key="replay"))
    # 46 multi-GPU offers, each alone in its (bucket, region): 46 on-demand rows, no spot
    # (the recording has no min_bid).
    assert len(batch.offers) == 46
    assert {o.kind for o in batch.offers} == {"on-demand"}
    assert batch.rejected == ()


EXPECTED = [
    # (slug, region, price per hour, per GPU-hour): SkyPilot v7 Vast rows (whole offer per hour).
    ("8x-rtx-4090", "US-UT", "3.20", "0.400000"),  # 3.20 / 8
    ("8x-rtx-4090", "TW", "3.20", "0.400000"),  # Taiwan: a region the fixture did not price
    ("8x-h100-sxm", "US", "17.07", "2.133750"),  # 17.07 / 8 = 2.13375
    ("8x-a100-sxm-40gb", "SI", "5.87", "0.733750"),  # 5.87 / 8 = 0.73375
    ("2x-rtx-6000-ada", "EE", "1.31", "0.655000"),  # 1.31 / 2
]


@pytest.mark.usefixtures("catalog")
def test_the_vast_recording_ingests_exact_prices(settings):
    settings.VAST_API_KEY = ""
    replay_command("vast", "vast")
    run = ScrapeRun.objects.get(provider__slug="vast")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="vast", origin="scraper")
    for slug, region, price, per_gpu in EXPECTED:
        offer_ = offers.get(instance__slug=slug, region__code=region, kind="on-demand")
        assert (offer_.price_per_hour, offer_.price_per_gpu_hour_usd, offer_.available) == (
            Decimal(price),
            Decimal(per_gpu),
            True,
        )
    # 13 rows on curated buckets (10 already priced by the fixture at the same figures: updated;
    # 3 new regions: created); 33 rows of 24 uncurated buckets go to the review queue by name.
    assert (run.fetched, run.created, run.updated, run.unchanged, run.rejected) == (46, 3, 10, 0, 0)
    reviews = SkuReview.objects.filter(provider__slug="vast")
    assert reviews.count() == 24
    review = reviews.get(sku="2x H100 SXM, NVLink 400+ GB/s")
    assert review.parsed["no_curated_instance_type"] == "2x-h100-sxm-nvlink-400"
    assert {p["region"] for p in review.parsed["prices"]} == {"FR", "US-FL", "TH"}


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_of_the_vast_recording_writes_nothing_and_adds_no_review_rows(settings):
    settings.VAST_API_KEY = ""
    replay_command("vast", "vast")
    history = PriceObservation.objects.count()
    replay_command("vast", "vast")
    run = ScrapeRun.objects.filter(provider__slug="vast").latest()
    assert (run.created, run.updated, run.unchanged) == (0, 0, 13)
    assert PriceObservation.objects.count() == history
    assert SkuReview.objects.filter(provider__slug="vast").count() == 24
