"""AWS Price List offer files: streaming parse, reserved terms, capacity blocks, the recording."""

from __future__ import annotations

import io
import json
import tracemalloc
from decimal import Decimal

import httpx
import ijson
import pytest
from django.test import override_settings

from offerings.models import InstanceType, Offer, PriceObservation, Region, ScrapeRun, SkuReview
from providers.base import ScrapeContext, ScrapeError
from providers.http import make_client
from providers.scrapers import aws
from tests.providers.conftest import SHARED_REFERENCE, replay_command

M5_LARGE = (
    SHARED_REFERENCE / "payloads" / "aws" / "ec2-instance-selector__GetProducts_m5_large.json"
)
needs_reference = pytest.mark.skipif(
    not M5_LARGE.exists(),
    reason=f"the shared reference payload {M5_LARGE} is absent (tests read it, never copy it)",
)


def parse(document: dict, region: str = "us-east-1") -> aws._RegionParse:
    result = aws._RegionParse(region, "https://pricing.example/x.json", ScrapeContext(now=None))
    raw = json.dumps(document).encode()
    aws.parse_offer_file(ijson.parse(io.BytesIO(raw), use_float=False), result)
    return result


def gpu_product(sku="SKUP5", itype="p5.48xlarge", **attrs) -> dict:
    attributes = {
        "instanceType": itype,
        "gpu": "8",
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "licenseModel": "No License required",
        "marketoption": "OnDemand",
        "location": "US East (N. Virginia)",
    }
    return {"sku": sku, "productFamily": "Compute Instance", "attributes": attributes | attrs}


def hourly(sku: str, price: str, currency: str = "USD") -> dict:
    return {
        f"{sku}.JRTCKXETXF": {
            "priceDimensions": {
                f"{sku}.JRTCKXETXF.6YS6EN2CT7": {"unit": "Hrs", "pricePerUnit": {currency: price}}
            },
            "termAttributes": {},
        }
    }


def offer_file(products: list[dict], on_demand=None, reserved=None) -> dict:
    return {
        "formatVersion": "v1.0",
        "offerCode": "AmazonEC2",
        "products": {p["sku"]: p for p in products},
        "terms": {"OnDemand": on_demand or {}, "Reserved": reserved or {}},
    }


def test_a_linux_shared_on_demand_row_becomes_an_offer():
    result = parse(offer_file([gpu_product()], {"SKUP5": hourly("SKUP5", "55.0400000000")}))
    [offer] = result.offers
    assert (offer.sku, offer.instance_slug, offer.kind) == (
        "p5.48xlarge",
        "p5-48xlarge",
        "on-demand",
    )
    assert (offer.price_per_hour, offer.currency, offer.geo) == (Decimal("55.04"), "USD", "na")


@pytest.mark.parametrize(
    "attrs",
    [
        {"operatingSystem": "Windows"},
        {"tenancy": "Dedicated"},
        {"preInstalledSw": "SQL Std"},
        {"capacitystatus": "UnusedCapacityReservation"},
        {"licenseModel": "Bring your own license"},
        {"instanceType": "g5.xlarge", "gpu": "1"},
    ],
)
def test_other_operating_systems_tenancies_and_single_gpu_types_are_left_out(attrs):
    result = parse(offer_file([gpu_product(**attrs)], {"SKUP5": hourly("SKUP5", "55.04")}))
    assert (result.offers, result.rejected) == ([], [])


def test_capacity_block_rows_are_told_apart_and_not_taken_as_on_demand():
    product = gpu_product(itype="p5e.48xlarge", marketoption="CapacityBlock")
    result = parse(offer_file([product], {"SKUP5": hourly("SKUP5", "31.46")}))
    assert result.offers == []
    assert result.capacity_blocks == {"p5e.48xlarge"}


def test_a_type_not_in_the_table_maps_by_the_slug_rule_and_keeps_what_was_parsed():
    product = gpu_product(sku="SKUP3", itype="p3.16xlarge", vcpu="64")
    [offer] = parse(offer_file([product], {"SKUP3": hourly("SKUP3", "24.48")})).offers
    assert offer.instance_slug == "p3-16xlarge"
    assert offer.parsed["gpu"] == "v100-sxm2-16gb"
    assert (offer.parsed["gpu_count"], offer.parsed["vcpu"]) == (8, "64")


@pytest.mark.parametrize(
    ("price", "reason"),
    [
        ("0.0000000000", "greater than 0"),
        ("-1", "greater than 0"),
        ("cheap", "expected a decimal number"),
    ],
)
def test_bad_on_demand_prices_are_rejected_with_their_reason(price, reason):
    result = parse(offer_file([gpu_product()], {"SKUP5": hourly("SKUP5", price)}))
    [rejected] = result.rejected
    assert reason in rejected.reason
    assert (rejected.instance_slug, rejected.kind) == ("p5-48xlarge", "on-demand")


def test_a_price_as_a_json_number_is_a_wrong_type():
    terms = hourly("SKUP5", "1")
    terms["SKUP5.JRTCKXETXF"]["priceDimensions"]["SKUP5.JRTCKXETXF.6YS6EN2CT7"]["pricePerUnit"] = {
        "USD": 55.04
    }
    [rejected] = parse(offer_file([gpu_product()], {"SKUP5": terms})).rejected
    assert "expected a number in a string" in rejected.reason


def test_terms_listed_before_products_cannot_be_streamed():
    document = {"terms": {"OnDemand": {}}, "products": {}}
    with pytest.raises(ScrapeError, match="terms before products"):
        parse(document)


@needs_reference
def test_reserved_terms_give_one_standard_price_per_term_preferring_all_upfront():
    """The real m5.large GetProducts element (shared reference) carries all twelve RI terms."""
    element = json.loads(M5_LARGE.read_text())
    product = element["product"] | {"productFamily": "Compute Instance"}
    product["attributes"] = product["attributes"] | {"instanceType": "p5.48xlarge", "gpu": "8"}
    result = parse(
        offer_file(
            [product],
            {product["sku"]: element["terms"]["OnDemand"]},
            {product["sku"]: element["terms"]["Reserved"]},
        )
    )
    prices = {(o.kind, o.term_months): o.price_per_hour for o in result.offers}
    assert prices[("on-demand", 0)] == Decimal("0.096")
    # 1yr standard All Upfront: 494 USD upfront, 0.00/h -> 494 / (730 x 12).
    assert prices[("reserved", 12)] == Decimal(494) / Decimal(8760)
    # 3yr standard All Upfront: 949 USD -> 949 / (730 x 36).
    assert prices[("reserved", 36)] == Decimal(949) / Decimal(26280)


def test_a_partial_upfront_term_adds_its_fee_to_the_hourly_rate():
    term = aws.AwsTerm.model_validate(
        {
            "priceDimensions": {
                "a": {"unit": "Quantity", "pricePerUnit": {"USD": "252"}},
                "b": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0290000000"}},
            },
            "termAttributes": {
                "LeaseContractLength": "1yr",
                "OfferingClass": "standard",
                "PurchaseOption": "Partial Upfront",
            },
        }
    )
    months, rank, price, currency = aws.reserved_hourly(term)
    assert (months, rank, currency) == (12, 1, "USD")
    assert price == (Decimal(252) + Decimal("0.029") * 8760) / 8760


def test_every_mapping_target_is_a_curated_aws_instance_type():
    import tomllib

    from django.conf import settings

    from offerings.schemas import instance_slug

    with (settings.BASE_DIR / "fixtures" / "providers" / "aws.toml").open("rb") as handle:
        curated = {instance_slug(i["name"]) for i in tomllib.load(handle)["instances"]}
    assert set(aws.INSTANCE_SLUGS.values()) <= curated
    for name, slug in aws.INSTANCE_SLUGS.items():
        assert slug == instance_slug(name)


@pytest.mark.parametrize(
    ("region", "geo"),
    [("us-east-1", "na"), ("eu-west-1", "eu"), ("ap-southeast-2", "oc"), ("ap-south-1", "asia")],
)
def test_regions_map_to_continents(region, geo):
    assert aws.geo_for(region) == geo


def test_a_large_offer_file_is_streamed_not_loaded_into_memory():
    """About 10 MB of non-GPU products: peak memory stays far below the file's size."""
    filler = gpu_product(itype="m5.large", gpu="0")["attributes"] | {"filler": "x" * 1500}
    parts = [b'{"formatVersion":"v1.0","products":{']
    for i in range(6_000):
        parts.append(b"," if i else b"")
        body = {"sku": f"S{i}", "productFamily": "Compute Instance", "attributes": filler}
        parts.append(f'"S{i}":'.encode() + json.dumps(body).encode())
    parts.append(b'},"terms":{"OnDemand":{},"Reserved":{}}}')
    document = b"".join(parts)
    assert len(document) > 9_000_000

    def network(request: httpx.Request) -> httpx.Response:
        chunks = (document[i : i + 65536] for i in range(0, len(document), 65536))
        return httpx.Response(200, headers={"Content-Type": "application/json"}, content=chunks)

    result = aws._RegionParse("us-east-1", "https://x/y.json", ScrapeContext(now=None))
    with make_client(httpx.MockTransport(network)) as client:
        tracemalloc.start()
        aws._get_offer_file(client, "https://pricing.example/us-east-1/index.json", result)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert result.offers == []
    assert peak < 3_000_000, f"peak {peak} bytes while streaming {len(document)} bytes"


# -- the recording, end to end ------------------------------------------------------------------

EXPECTED = [
    # (slug, region, price per hour, per GPU-hour USD): SkyPilot aws vms.csv v7 values.
    ("p4d-24xlarge", "us-east-2", "32.7726", "4.096575"),
    ("p5-48xlarge", "us-west-2", "98.32", "12.290000"),
    ("p5en-48xlarge", "us-east-2", "84.8", "10.600000"),
]


@pytest.fixture
def aws_defaults():
    with override_settings(AWS_PRICE_REGIONS=[]):
        yield


@pytest.mark.usefixtures("catalog", "aws_defaults")
def test_the_aws_recording_ingests_exact_prices(replay):
    batch = aws.fetch(replay("aws"), ScrapeContext(now=None))
    curated = set(InstanceType.objects.filter(provider__slug="aws").values_list("slug", flat=True))
    mapped = [o for o in batch.offers if o.instance_slug in curated]
    assert len(batch.offers) == 14
    assert len(mapped) >= 9

    replay_command("aws", "aws")
    run = ScrapeRun.objects.get(provider__slug="aws")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="aws", origin="scraper")
    for slug, region, price, per_gpu in EXPECTED:
        offer = offers.get(instance__slug=slug, region__code=region, kind="on-demand")
        assert (offer.price_per_hour, offer.price_per_gpu_hour_usd) == (
            Decimal(price),
            Decimal(per_gpu),
        )
    # The recording is hand-built (no recorded_at), so its prices are undated. The fixture's
    # p5en price in us-east-1 is dated (dstack, 2026-08-06): an undated price never replaces a
    # dated one, so that offer keeps the fixture's figure and date and writes no history.
    held = Offer.objects.get(instance__slug="p5en-48xlarge", region__code="us-east-1")
    assert (held.origin, held.price_per_hour) == ("catalog", Decimal("63.296"))
    assert held.observed_at is not None
    assert list(held.history.values_list("price_per_hour", flat=True)) == [Decimal("63.296")]
    assert offers.filter(is_active=True).count() == len(mapped) - 1
    assert (run.fetched, run.created + run.updated, run.unchanged, run.rejected) == (
        14,
        len(mapped) - 1,
        1,
        0,
    )
    assert offers.filter(observed_at__isnull=False).count() == 0
    assert Region.objects.get(provider__slug="aws", code="us-east-2").name == "US East (Ohio)"
    # p3.8xlarge is curated now (AWS's P3 table): priced, so nothing waits for review.
    assert not SkuReview.objects.filter(provider__slug="aws").exists()
    p3 = offers.get(instance__slug="p3-8xlarge", region__code="us-east-1")
    assert p3.price_per_hour == Decimal("12.24")
    assert any("Capacity Block" in w and "p5e.48xlarge" in w for w in run.warnings)


@pytest.mark.usefixtures("catalog", "aws_defaults")
def test_a_second_replay_of_the_aws_recording_writes_nothing():
    replay_command("aws", "aws")
    first = ScrapeRun.objects.get(provider__slug="aws")
    history = PriceObservation.objects.count()
    prices = dict(Offer.objects.values_list("pk", "price_per_hour"))
    replay_command("aws", "aws")
    run = ScrapeRun.objects.filter(provider__slug="aws").latest()
    assert (run.created, run.updated) == (0, 0)
    assert run.unchanged == first.created + first.updated + first.unchanged
    assert PriceObservation.objects.count() == history
    assert dict(Offer.objects.values_list("pk", "price_per_hour")) == prices


@pytest.mark.usefixtures("catalog")
def test_a_region_missing_from_the_index_is_skipped_with_a_warning(replay):
    ctx = ScrapeContext(now=None, regions=("us-east-1", "mars-north-1"))
    client = replay("aws", check_all_used=False)
    batch = aws.fetch(client, ctx)
    assert {o.region for o in batch.offers} == {"us-east-1"}
    assert "aws: region mars-north-1 is not in the region index; skipped" in batch.warnings
