"""GCP Cloud Billing Catalog: component SKUs, machine prices assembled, the recording end to end."""

from __future__ import annotations

import tomllib
from decimal import Decimal

import pytest
from django.conf import settings

from offerings.models import Offer, PriceObservation, ScrapeRun
from offerings.schemas import RejectedRow, ScrapedOffer, instance_slug
from providers.base import ScrapeContext
from providers.scrapers import gcp
from tests.providers.conftest import replay_command


def sku(description="A2 Instance Core running in Americas", usage="OnDemand", **changes) -> dict:
    base = {
        "skuId": "0000-0000-0001",
        "description": description,
        "category": {"resourceFamily": "Compute", "resourceGroup": "CPU", "usageType": usage},
        "serviceRegions": ["us-central1", "us-east1"],
        "pricingInfo": [
            {
                "pricingExpression": {
                    "usageUnit": "h",
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 31611000},
                        }
                    ],
                }
            }
        ],
    }
    return base | changes


def price(units: str = "0", nanos: int = 31611000, unit: str = "h") -> list:
    money = {"currencyCode": "USD", "units": units, "nanos": nanos}
    rates = [{"startUsageAmount": 0, "unitPrice": money}]
    return [{"pricingExpression": {"usageUnit": unit, "tieredRates": rates}}]


def test_a_component_sku_gives_its_unit_price_in_every_region_it_serves():
    rows = gcp.parse_sku(sku())
    # units "0" + 31611000 nanos = 0.031611 USD per vCPU-hour.
    assert [(key, p.amount) for key, p in rows] == [
        (("us-central1", "a2", "core", "on-demand"), Decimal("0.031611")),
        (("us-east1", "a2", "core", "on-demand"), Decimal("0.031611")),
    ]


@pytest.mark.parametrize(
    ("description", "component"),
    [
        ("A2 Instance Ram running in Americas", ("a2", "ram")),
        ("Spot Preemptible A3Plus Instance Core running in Virginia", ("a3plus", "core")),
        ("Nvidia H100 80GB Mega GPU running in Americas", ("gpu", "h100-mega")),
        ("Spot Preemptible Nvidia Tesla A100 GPU running in EMEA", ("gpu", "a100-40gb")),
        ("N1 Predefined Instance Core running in Americas", None),
        ("Network Inter Zone Egress", None),
    ],
)
def test_descriptions_name_their_component(description, component):
    assert gcp.component_of(description) == component


def test_preemptible_is_spot_and_commitments_are_not_read():
    spot = gcp.parse_sku(
        sku("Spot Preemptible A2 Instance Core running in Americas", "Preemptible")
    )
    assert spot[0][0][3] == "spot"
    assert gcp.parse_sku(sku(usage="Commit1Yr")) is None


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"pricingInfo": price(units=2)}, "expected an int64 in a string, got int 2"),
        ({"pricingInfo": price(unit="GiBy.h")}, "usageUnit 'GiBy.h', expected 'h'"),
        ({"pricingInfo": price(nanos=0)}, "unit price 0 is not positive"),
        ({"pricingInfo": price(units="-1")}, "unit price -0.968389 is not positive"),
        ({"serviceRegions": "us-central1"}, "serviceRegions: Input should be a valid list"),
        ({"pricingInfo": []}, "0 pricingInfo entries"),
    ],
)
def test_bad_component_skus_are_rejected_with_their_reason(changes, reason):
    rejected = gcp.parse_sku(sku(**changes))
    assert isinstance(rejected, RejectedRow)
    assert reason in rejected.reason


PRICES = {
    # us-central1 unit prices (recordings/README.md: SkyPilot v7's host and GPU rows, decomposed).
    ("us-central1", "a2", "core", "on-demand"): "0.031611",
    ("us-central1", "a2", "ram", "on-demand"): "0.004237",
    ("us-central1", "gpu", "a100-40gb", "on-demand"): "2.933908",
}


def unit_prices(table=PRICES) -> dict:
    return {key: gcp.UnitPrice("x", Decimal(v), "USD") for key, v in table.items()}


def test_a_machine_price_is_cores_plus_ram_plus_gpus():
    offer = gcp.assemble(
        "a2-highgpu-8g", gcp.MACHINES["a2-highgpu-8g"], "us-central1", "on-demand", unit_prices()
    )
    assert isinstance(offer, ScrapedOffer)
    # 96 x 0.031611 + 680 x 0.004237 + 8 x 2.933908 = 3.034656 + 2.88116 + 23.471264 = 29.38708
    assert offer.price_per_hour == Decimal("29.387080")
    assert (offer.instance_slug, offer.geo) == ("a2-highgpu-8g", "na")


def test_a_machine_missing_a_component_is_not_priced_but_noted():
    note = gcp.assemble(
        "a3-highgpu-8g", gcp.MACHINES["a3-highgpu-8g"], "us-central1", "on-demand", unit_prices()
    )
    assert note == "a3-highgpu-8g on-demand in us-central1: no core, ram, gpu price"


def test_machines_not_sold_on_demand_are_told_apart():
    not_on_demand = {name for name, m in gcp.MACHINES.items() if not m.on_demand}
    assert not_on_demand == {"a3-ultragpu-8g", "a4-highgpu-8g"}


def test_every_machine_is_a_curated_gcp_instance_type():
    with (settings.BASE_DIR / "fixtures" / "providers" / "gcp.toml").open("rb") as handle:
        curated = {instance_slug(i["name"]): i for i in tomllib.load(handle)["instances"]}
    for name, machine in gcp.MACHINES.items():
        entry = curated[instance_slug(name)]
        assert (entry["gpu_count"], entry.get("vcpus", machine.vcpus)) == (
            machine.gpus,
            machine.vcpus,
        )


# -- the recording, end to end ------------------------------------------------------------------


def test_the_gcp_recording_assembles_the_a2_machines_and_notes_the_a3_host_missing(replay):
    batch = gcp.fetch(replay("gcp"), ScrapeContext(now=None, api_key="replay"))
    assert sorted((o.instance_slug, o.kind) for o in batch.offers) == [
        ("a2-highgpu-8g", "on-demand"),
        ("a2-highgpu-8g", "spot"),
        ("a2-megagpu-16g", "on-demand"),
        ("a2-megagpu-16g", "spot"),
        ("a2-ultragpu-8g", "on-demand"),
        ("a2-ultragpu-8g", "spot"),
    ]
    assert batch.rejected == ()
    assert batch.warnings == (
        "gcp: cannot assemble a3-highgpu-8g on-demand in us-central1: no core, ram price (+1 more)",
    )


EXPECTED = [
    # (machine, kind, price per hour, per GPU-hour), us-central1:
    # 96 x 0.031611 + 680 x 0.004237 + 8 x 2.933908 = 29.38708 (SkyPilot 5.91582 + 23.47126).
    ("a2-highgpu-8g", "on-demand", "29.387080", "3.673385"),
    # Spot: 96 x 0.01264 + 680 x 0.001695 + 8 x 1.1472 = 1.21344 + 1.1526 + 9.1776 = 11.54364.
    ("a2-highgpu-8g", "spot", "11.543640", "1.442955"),
    # 96 x 0.031611 + 1360 x 0.004237 + 16 x 2.933908 = 3.034656 + 5.76232 + 46.942528 = 55.739504
    ("a2-megagpu-16g", "on-demand", "55.739504", "3.483719"),
    # 3.034656 + 5.76232 + 8 x 1.846198 (= 14.769584) = 23.56656
    ("a2-ultragpu-8g", "on-demand", "23.566560", "2.945820"),
]


@pytest.mark.usefixtures("catalog")
def test_the_gcp_recording_ingests_exact_prices(settings):
    settings.GCP_API_KEY, settings.GCP_PRICE_REGIONS = "", []
    replay_command("gcp", "gcp")
    run = ScrapeRun.objects.get(provider__slug="gcp")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="gcp", origin="scraper")
    for slug, kind, price_, per_gpu in EXPECTED:
        offer = offers.get(instance__slug=slug, region__code="us-central1", kind=kind)
        assert (offer.price_per_hour, offer.price_per_gpu_hour_usd) == (
            Decimal(price_),
            Decimal(per_gpu),
        )
    # The fixture prices none of the six (its figures were SkyPilot's, which supplies them as
    # itself): all six are created, each with one history row.
    assert (run.fetched, run.created, run.updated, run.unchanged, run.rejected) == (6, 6, 0, 0, 0)
    mega = offers.get(instance__slug="a2-megagpu-16g", kind="on-demand")
    assert list(mega.history.values_list("price_per_hour", flat=True)) == [Decimal("55.739504")]


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_of_the_gcp_recording_writes_nothing(settings):
    settings.GCP_API_KEY, settings.GCP_PRICE_REGIONS = "", []
    replay_command("gcp", "gcp")
    history = PriceObservation.objects.count()
    replay_command("gcp", "gcp")
    run = ScrapeRun.objects.filter(provider__slug="gcp").latest()
    assert (run.created, run.updated, run.unchanged) == (0, 0, 6)
    assert PriceObservation.objects.count() == history
