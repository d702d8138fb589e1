"""OCI price list: the part-number table, parsing, and the recording end to end."""

from __future__ import annotations

import tomllib
from decimal import Decimal

import pytest
from django.conf import settings

from offerings.models import Offer, PriceObservation, ScrapeRun, SkuReview
from offerings.schemas import RejectedRow, ScrapedOffer, instance_slug
from providers.base import ScrapeContext
from providers.scrapers import oci
from tests.providers.conftest import replay_command

REGIONS = ("eu-amsterdam-1", "us-ashburn-1")


def item(**changes) -> dict:
    """The A100 40GB GPU part in the price list's shape, at SkyPilot's real per-GPU price."""
    base = {
        "partNumber": "B93544",
        "displayName": "Compute - GPU - E4",
        "metricName": "GPU Per Hour",
        "serviceCategory": "Compute - GPU",
        "currencyCodeLocalizations": [
            {
                "currencyCode": "USD",
                "prices": [{"model": "PAY_AS_YOU_GO", "value": Decimal("3.05")}],
            }
        ],
    }
    return base | changes


def usd(*prices) -> list[dict]:
    return [{"currencyCode": "USD", "prices": list(prices)}]


def test_a_gpu_part_prices_its_shape_at_the_per_gpu_price_times_its_gpus_in_every_region():
    offers = oci.parse_item(item(), REGIONS)
    assert [(o.instance_slug, o.region, o.geo) for o in offers] == [
        ("bm-gpu4-8", "eu-amsterdam-1", "eu"),
        ("bm-gpu4-8", "us-ashburn-1", "na"),
    ]
    # 3.05 USD per GPU-hour x 8 GPUs = 24.40 per shape-hour.
    assert {(o.price_per_hour, o.kind, o.currency) for o in offers} == {
        (Decimal("24.40"), "on-demand", "USD")
    }
    assert offers[0].available is None  # the price list says nothing about capacity


def test_a_part_pricing_several_shapes_gives_one_offer_per_shape():
    offers = oci.parse_item(
        item(partNumber="B92740", displayName="Compute - GPU - E3"), REGIONS[:1]
    )
    # V100 part: 3.05 x 2, x 4, x 8.
    assert [(o.sku, o.price_per_hour) for o in offers] == [
        ("VM.GPU3.2", Decimal("6.10")),
        ("VM.GPU3.4", Decimal("12.20")),
        ("BM.GPU3.8", Decimal("24.40")),
    ]


def test_an_unknown_gpu_part_goes_to_review_at_its_per_gpu_price():
    (offer,) = oci.parse_item(
        item(partNumber="B999999", displayName="Compute - GPU - B300"), ("x",)
    )
    assert (offer.instance_slug, offer.sku, offer.price_per_hour) == (
        None,
        "B999999",
        Decimal("3.05"),
    )
    assert offer.parsed["displayName"] == "Compute - GPU - B300"


def test_only_gpu_parts_are_read():
    assert oci.is_gpu_item(item())
    assert oci.is_gpu_item(item(partNumber="B1", serviceCategory="OCI - Compute - GPU"))
    assert not oci.is_gpu_item(
        item(partNumber="B93113", serviceCategory="Compute - Virtual Machine")
    )


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"metricName": "OCPU Per Hour"}, "unexpected metricName 'OCPU Per Hour'"),
        ({"currencyCodeLocalizations": usd()}, "expected one PAY_AS_YOU_GO price, got 0"),
        (
            {"currencyCodeLocalizations": usd({"model": "PAY_AS_YOU_GO", "value": "3.05"})},
            "expected a JSON number, got str '3.05'",
        ),
        (
            {
                "currencyCodeLocalizations": usd(
                    {"model": "PAY_AS_YOU_GO", "value": 3},
                    {"model": "PAY_AS_YOU_GO", "value": 4},
                )
            },
            "expected one PAY_AS_YOU_GO price, got 2",
        ),
        (
            {"currencyCodeLocalizations": usd({"model": "PAY_AS_YOU_GO", "value": -1})},
            "price_per_hour: Input should be greater than 0",
        ),
        ({"metricName": None}, "metricName: Input should be a valid string"),
    ],
)
def test_bad_items_are_rejected_with_their_reason_for_every_offer_they_price(changes, reason):
    rows = oci.parse_item(item(**changes), REGIONS)
    assert all(isinstance(r, RejectedRow) for r in rows)
    assert [(r.instance_slug, r.region, r.kind) for r in rows] == [
        ("bm-gpu4-8", "eu-amsterdam-1", "on-demand"),
        ("bm-gpu4-8", "us-ashburn-1", "on-demand"),
    ]
    assert reason in rows[0].reason


def test_a_price_in_another_currency_is_kept_in_that_currency_for_the_upsert_to_judge():
    raw = item(
        currencyCodeLocalizations=[
            {"currencyCode": "XYZ", "prices": [{"model": "PAY_AS_YOU_GO", "value": 3}]}
        ]
    )
    (offer,) = oci.parse_item(raw, REGIONS[:1])
    assert isinstance(offer, ScrapedOffer)
    assert offer.currency == "XYZ"


def test_every_curated_target_of_the_part_table_is_a_curated_oci_shape_or_documented_as_not():
    with (settings.BASE_DIR / "fixtures" / "providers" / "oci.toml").open("rb") as handle:
        curated = {instance_slug(i["name"]) for i in tomllib.load(handle)["instances"]}
    targets = {instance_slug(shape) for shapes in oci.PART_SHAPES.values() for shape, _ in shapes}
    # V100 shapes are priced for the review queue; the rest (A10 ones too) are curated shapes.
    assert targets - curated == {
        "vm-gpu3-2",
        "vm-gpu3-4",
        "bm-gpu3-8",
    }
    assert {"bm-gpu4-8", "bm-gpu-a100-v2-8", "bm-gpu-h100-8", "bm-gpu-h200-8"} <= targets


@pytest.mark.parametrize(
    ("region", "geo"),
    [("us-chicago-1", "na"), ("uk-london-1", "eu"), ("ap-tokyo-1", "asia"), ("ap-sydney-1", "oc")],
)
def test_regions_map_to_continents(region, geo):
    assert oci.geo_for(region) == geo


# -- the recording, end to end ------------------------------------------------------------------


def test_the_oci_recording_parses_to_seven_gpu_offers_and_skips_cpu_parts(replay):
    batch = oci.fetch(replay("oci"), ScrapeContext(now=None))
    assert len(batch.offers) == 7
    assert batch.rejected == ()
    assert batch.warnings == ()
    assert "B93113" not in {o.parsed.get("partNumber") for o in batch.offers}


EXPECTED = [
    # (slug, price per shape-hour, per GPU-hour USD); SkyPilot v6 OCI rows, eu-amsterdam-1:
    ("bm-gpu4-8", "24.4", "3.050000"),  # B93544 3.05 x 8 = 24.40 (SkyPilot: 24.4)
    ("bm-gpu-a100-v2-8", "32", "4.000000"),  # B95907 4.00 x 8 = 32.00 (SkyPilot: 32)
]


@pytest.mark.usefixtures("catalog")
def test_the_oci_recording_ingests_exact_prices(settings):
    settings.OCI_PRICE_REGIONS = []
    replay_command("oci", "oci")
    run = ScrapeRun.objects.get(provider__slug="oci")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="oci", origin="scraper")
    for slug, price, per_gpu in EXPECTED:
        offer = offers.get(instance__slug=slug, region__code="eu-amsterdam-1", kind="on-demand")
        assert (offer.price_per_hour, offer.price_per_gpu_hour_usd, offer.available) == (
            Decimal(price),
            Decimal(per_gpu),
            None,
        )
    # 2 curated shapes already priced by the fixture at the same figure (updated, no history),
    # 2 curated A10 shapes priced for the first time (created), and 3 uncurated V100 shapes
    # queued for review.
    assert (run.fetched, run.created, run.updated, run.unchanged, run.rejected) == (7, 2, 2, 0, 0)
    review = SkuReview.objects.get(provider__slug="oci", sku="BM.GPU3.8")
    # B92740 2.95 x 8 = 23.60 (SkyPilot BM.GPU3.8: 23.6).
    assert review.parsed["prices"][0]["price_per_hour"] == "23.60"
    assert review.parsed["no_curated_instance_type"] == "bm-gpu3-8"


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_of_the_oci_recording_writes_nothing(settings):
    settings.OCI_PRICE_REGIONS = []
    replay_command("oci", "oci")
    history = PriceObservation.objects.count()
    replay_command("oci", "oci")
    run = ScrapeRun.objects.filter(provider__slug="oci").latest()
    assert (run.created, run.updated, run.unchanged) == (0, 0, 4)
    assert PriceObservation.objects.count() == history
