"""Azure Retail Prices: parsing, the SKU mapping table, and the recorded pages end to end."""

from __future__ import annotations

import json
import tomllib
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from offerings.models import InstanceType, Offer, PriceObservation, Region, ScrapeRun, SkuReview
from offerings.schemas import RejectedRow, ScrapedOffer, instance_slug
from providers.base import ScrapeContext
from providers.scrapers import azure
from tests.providers.conftest import replay_command

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "providers" / "azure.toml"


def item(**changes) -> dict:
    """A Consumption item for ND96isr H100 v5 in eastus, in the documented shape."""
    base = {
        "currencyCode": "USD",
        "tierMinimumUnits": 0.0,
        "retailPrice": Decimal("98.32"),
        "unitPrice": Decimal("98.32"),
        "armRegionName": "eastus",
        "location": "US East",
        "meterName": "ND96isr H100 v5",
        "productName": "Virtual Machines NDsr H100 v5 Series",
        "skuName": "ND96isr H100 v5",
        "serviceName": "Virtual Machines",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "isPrimaryMeterRegion": True,
        "armSkuName": "Standard_ND96isr_H100_v5",
    }
    return base | changes


def test_a_consumption_item_is_an_on_demand_price_per_vm_hour():
    offer = azure.parse_item(item(), "eastus")
    assert isinstance(offer, ScrapedOffer)
    assert (offer.kind, offer.term_months, offer.price_per_hour) == (
        "on-demand",
        0,
        Decimal("98.32"),
    )
    assert offer.instance_slug == "standard-nd96isr-h100-v5"
    assert (offer.region, offer.region_name, offer.geo) == ("eastus", "US East", "na")


def test_spot_is_told_apart_by_spot_in_the_meter_or_sku_name():
    assert azure.parse_item(item(meterName="ND96isr H100 v5 Spot"), "eastus").kind == "spot"
    assert azure.parse_item(item(skuName="ND96isr H100 v5 Spot"), "eastus").kind == "spot"


@pytest.mark.parametrize(("term", "months"), [("1 Year", 12), ("3 Years", 36), ("5 Years", 60)])
def test_a_reservation_term_total_becomes_hourly_over_730_hours_a_month(term, months):
    # Synthetic amount: no recorded GPU reservation price exists (see recordings/README.md).
    offer = azure.parse_item(
        item(type="Reservation", reservationTerm=term, retailPrice=Decimal("500000")), "eastus"
    )
    assert (offer.kind, offer.term_months) == ("reserved", months)
    assert offer.price_per_hour == Decimal("500000") / (730 * months)


@pytest.mark.parametrize(
    "changes",
    [
        {"productName": "Virtual Machines NDsr H100 v5 Series Windows"},
        {"meterName": "ND96isr H100 v5 Low Priority"},
        {"type": "DevTestConsumption"},
        {"serviceName": "Virtual Machines Licenses"},
    ],
)
def test_windows_low_priority_and_dev_test_meters_are_skipped(changes):
    assert azure.parse_item(item(**changes), "eastus") is None


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"retailPrice": "98.32"}, "retailPrice: Value error, expected a JSON number"),
        ({"retailPrice": True}, "expected a JSON number"),
        ({"retailPrice": Decimal("-1")}, "price_per_hour: Input should be greater than 0"),
        ({"retailPrice": 0}, "price_per_hour: Input should be greater than 0"),
        ({"type": "Reservation", "reservationTerm": "2 Years"}, "unknown reservationTerm"),
        ({"type": "Bundle"}, "unknown price type 'Bundle'"),
        ({"unitOfMeasure": "1/Month"}, "unexpected unitOfMeasure"),
        ({"armSkuName": ""}, "armSkuName is empty"),
        ({"currencyCode": "usd"}, "currency: String should match pattern"),
    ],
)
def test_bad_items_are_rejected_with_their_reason_and_their_offer_key(changes, reason):
    rejected = azure.parse_item(item(**changes), "eastus")
    assert isinstance(rejected, RejectedRow)
    assert reason in rejected.reason
    if changes.get("armSkuName") != "":
        assert rejected.instance_slug == "standard-nd96isr-h100-v5"
        assert rejected.region == "eastus"


def test_a_missing_field_is_rejected_naming_the_field():
    raw = item()
    del raw["retailPrice"]
    rejected = azure.parse_item(raw, "eastus")
    assert rejected.reason == "retailPrice: Field required"
    assert (rejected.kind, rejected.instance_slug) == ("on-demand", "standard-nd96isr-h100-v5")


def test_a_size_not_in_the_table_maps_by_the_contract_slug_rule_and_keeps_what_was_parsed():
    offer = azure.parse_item(item(armSkuName="Standard_ND96isr_H200_v5"), "eastus")
    assert offer.instance_slug == "standard-nd96isr-h200-v5"
    assert offer.parsed["gpu"] == "h200-sxm"


def test_every_mapping_target_is_a_curated_azure_instance_type():
    with FIXTURE.open("rb") as handle:
        curated = {instance_slug(i["name"]) for i in tomllib.load(handle)["instances"]}
    assert set(azure.INSTANCE_SLUGS.values()) <= curated
    # Each curated type can be reached from its own name too.
    for name in ("Standard_ND96isr_H100_v5", "Standard_ND96amsr_A100_v4"):
        assert azure.INSTANCE_SLUGS[name] == instance_slug(name)


@pytest.mark.parametrize(
    ("sku", "gpu"),
    [
        ("Standard_ND96isr_H100_v5", "h100-sxm"),
        ("Standard_ND96isr_H200_v5", "h200-sxm"),
        ("Standard_NC40ads_H100_v5", "h100-nvl"),
        ("Standard_NC80adis_H100_v5", "h100-nvl"),
        ("Standard_ND96amsr_A100_v4", "a100-sxm-80gb"),
        ("Standard_ND96asr_v4", "a100-sxm-40gb"),
        ("Standard_NC24ads_A100_v4", "a100-pcie-80gb"),
        ("Standard_ND96isr_MI300X_v5", "mi300x"),
        ("Standard_NV36ads_A10_v5", "a10"),
        ("Standard_ND40rs_v2", "v100-sxm2-32gb"),
        ("Standard_D4s_v5", None),
    ],
)
def test_gpu_names_map_to_gpu_slugs(sku, gpu):
    assert azure.gpu_slug_for(sku) == gpu


def test_source_urls_open_the_exact_price_query():
    assert azure.source_url_for("eastus", "Standard_ND96asr_v4") == (
        "https://prices.azure.com/api/retail/prices?%24filter=armRegionName+eq+%27eastus%27"
        "+and+armSkuName+eq+%27Standard_ND96asr_v4%27"
    )


# -- the recording, end to end ------------------------------------------------------------------

EXPECTED = [
    # (instance slug, region, kind, price per hour, price per GPU-hour USD), checked by hand
    # against the recorded pages (SkyPilot azure vms.csv v6 values; 8 GPUs each).
    ("standard-nd96isr-h100-v5", "eastus", "on-demand", "98.32", "12.290000"),
    ("standard-nd96isr-h100-v5", "westus", "on-demand", "127.816", "15.977000"),
    ("standard-nd96amsr-a100-v4", "southcentralus", "on-demand", "39.324", "4.915500"),
    ("standard-nd96amsr-a100-v4", "southcentralus", "spot", "4.32564", "0.540705"),
    ("standard-nd96asr-a100-v4", "westus2", "spot", "2.99167", "0.373959"),
]


@pytest.fixture
def azure_defaults():
    with override_settings(AZURE_PRICE_REGIONS=[]):
        yield


@pytest.mark.usefixtures("catalog", "azure_defaults")
def test_the_azure_recording_ingests_exact_prices(replay):
    # What the recording holds: 69 rows (the Windows meter is skipped, not counted), split into
    # SKUs with a curated instance type (offers) and the rest (review queue).
    batch = azure.fetch(replay("azure"), ScrapeContext(now=None))
    curated = set(
        InstanceType.objects.filter(provider__slug="azure").values_list("slug", flat=True)
    )
    mapped = [o for o in batch.offers if o.instance_slug in curated]
    unmapped = {o.sku for o in batch.offers if o.instance_slug not in curated}
    assert len(batch.offers) == 69
    assert len(mapped) >= 15

    output = replay_command("azure", "azure")
    run = ScrapeRun.objects.get(provider__slug="azure")
    assert run.status == "succeeded", run.error_messages
    assert "succeeded" in output
    offers = Offer.objects.filter(instance__provider__slug="azure", origin="scraper")
    assert offers.filter(is_active=True).count() == len(mapped)
    for slug, region, kind, price, per_gpu in EXPECTED:
        offer = offers.get(instance__slug=slug, region__code=region, kind=kind)
        assert offer.price_per_hour == Decimal(price)
        assert offer.price_per_gpu_hour_usd == Decimal(per_gpu)
        assert offer.currency == "USD"
    assert run.fetched == 69
    assert run.created + run.updated == len(mapped)
    assert (run.unchanged, run.rejected, run.retired, run.errors) == (0, 0, 0, 0)
    westus = Region.objects.get(provider__slug="azure", code="westus")
    assert (westus.name, westus.geo) == ("US West", "na")
    assert set(SkuReview.objects.filter(provider__slug="azure").values_list("sku", flat=True)) == (
        unmapped
    )
    review = SkuReview.objects.get(sku="Standard_NC24ads_A100_v4")
    assert review.parsed["gpu"] == "a100-pcie-80gb"
    assert len(review.parsed["prices"]) == 12


@pytest.mark.usefixtures("catalog", "azure_defaults")
def test_a_second_replay_of_the_azure_recording_writes_nothing():
    replay_command("azure", "azure")
    first = ScrapeRun.objects.get(provider__slug="azure")
    before = {
        o.pk: (o.price_per_hour, o.price_per_gpu_hour_usd, o.available, o.is_active)
        for o in Offer.objects.all()
    }
    history = PriceObservation.objects.count()
    seen = dict(Offer.objects.values_list("pk", "last_seen_at"))
    replay_command("azure", "azure")
    run = ScrapeRun.objects.filter(provider__slug="azure").latest()
    assert (run.status, run.created, run.updated) == ("succeeded", 0, 0)
    assert run.unchanged == first.created + first.updated
    assert PriceObservation.objects.count() == history
    after = {
        o.pk: (o.price_per_hour, o.price_per_gpu_hour_usd, o.available, o.is_active)
        for o in Offer.objects.all()
    }
    assert after == before
    advanced = Offer.objects.filter(instance__provider__slug="azure", origin="scraper")
    assert all(o.last_seen_at > seen[o.pk] for o in advanced)
    assert SkuReview.objects.get(sku="Standard_NC24ads_A100_v4").times_seen == 2


@pytest.mark.usefixtures("catalog", "azure_defaults")
def test_the_azure_recording_pages_through_next_page_link(replay, sleeps):
    client = replay("azure")
    batch = azure.fetch(client, ScrapeContext(now=None))
    assert len(batch.offers) == 69
    assert sleeps == []


def test_replaying_several_providers_uses_their_subfolders(db, catalog):
    with override_settings(AZURE_PRICE_REGIONS=[]):
        call_command(
            "refresh_prices",
            "--replay",
            str(Path(__file__).parent / "recordings"),
            "--provider",
            "azure",
            "--provider",
            "azure",
            verbosity=0,
        )
    assert ScrapeRun.objects.get(provider__slug="azure").status == "succeeded"


def test_a_full_page_without_next_page_link_is_followed_by_stepping_skip(sleeps):
    """The API has dropped NextPageLink on full pages; a short page ends the region."""
    from urllib.parse import parse_qs

    from providers.http import make_client

    asked = []

    def network(request):
        query = parse_qs(request.url.query.decode())
        asked.append(query.get("$skip", ["0"])[0])
        count = {"0": 100, "100": 3}.get(asked[-1], 0)
        items = [item(retailPrice=Decimal(1 + i)) for i in range(count)]
        body = {"Items": items, "NextPageLink": None, "Count": count}
        return httpx.Response(
            200,
            headers={"Content-Type": "application/json"},
            content=json.dumps(body, default=float),
        )

    with make_client(httpx.MockTransport(network), sleep=sleeps) as client:
        batch = azure.fetch(client, ScrapeContext(now=None, regions=("eastus",)))
    assert asked == ["0", "100"]
    assert len(batch.offers) == 103
