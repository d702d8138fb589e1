"""RunPod: the API key rule, GraphQL parsing, the mapping table and the recording end to end."""

from __future__ import annotations

import tomllib
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings.models import Offer, PriceObservation, ScrapeRun, SkuReview
from offerings.schemas import RejectedRow
from providers.base import ScrapeContext, ScrapeError
from providers.http import make_client
from providers.scrapers import runpod
from tests.providers.conftest import replay_command

PCIE = "NVIDIA A100 80GB PCIe"
H100 = "NVIDIA H100 80GB HBM3"


def lowest(**changes) -> dict:
    """A lowestPrice answer for 8 A100 PCIe in US-TX-3 (SkyPilot's per-GPU figures)."""
    base = {
        "minimumBidPrice": Decimal("1.19"),
        "uninterruptablePrice": Decimal("1.62"),
        "minVcpu": 8,
        "minMemory": 80,
        "stockStatus": "High",
    }
    return base | changes


def test_per_gpu_prices_become_pod_prices_on_demand_and_spot():
    offers = runpod.parse_lowest_price(PCIE, 8, "secure", "US-TX-3", "US-TX-3", lowest())
    # 1.62 x 8 = 12.96 on-demand; 1.19 x 8 = 9.52 spot (SkyPilot 8x_A100-80GB_SECURE).
    assert [(o.kind, o.price_per_hour, o.available) for o in offers] == [
        ("on-demand", Decimal("12.96"), True),
        ("spot", Decimal("9.52"), True),
    ]
    assert {(o.instance_slug, o.region, o.geo) for o in offers} == {
        ("8x-a100-pcie-80gb", "US-TX-3", "na")
    }


def test_a_null_price_is_not_offered_and_a_null_stock_is_not_available():
    assert runpod.parse_lowest_price(PCIE, 8, "secure", "US-TX-3", "", None) == []
    none = lowest(uninterruptablePrice=None, minimumBidPrice=None, stockStatus=None)
    assert runpod.parse_lowest_price(PCIE, 8, "secure", "US-TX-3", "", none) == []
    (offer,) = runpod.parse_lowest_price(
        PCIE, 8, "secure", "US-TX-3", "", lowest(minimumBidPrice=None, stockStatus=None)
    )
    assert (offer.kind, offer.available) == ("on-demand", False)


def test_community_cloud_is_a_separate_variant_priced_per_country():
    (offer, _) = runpod.parse_lowest_price(PCIE, 8, "community", "IS", "", lowest())
    assert (offer.instance_slug, offer.region, offer.geo) == (
        "8x-a100-pcie-80gb-community",
        "IS",
        "eu",
    )
    assert offer.sku == "8x NVIDIA A100 80GB PCIe (community)"


def test_an_unknown_gpu_goes_to_review_unmapped():
    (offer, _) = runpod.parse_lowest_price("NVIDIA Z999", 8, "secure", "US-TX-3", "", lowest())
    assert offer.instance_slug is None
    assert offer.parsed["gpu_type"] == "NVIDIA Z999"


def test_instant_cluster_nodes_are_priced_per_gpu_times_eight_in_each_data_center():
    # Synthetic price (no real Instant Cluster price was found; see recordings/README.md).
    raw = {
        "id": H100,
        "clusterPrice": Decimal("3.00"),
        "nodeGroupDatacenters": [{"id": "US-KS-2", "name": "US-KS-2"}, {"id": "EU-SE-1"}],
    }
    offers = runpod.parse_cluster_gpu(raw, {"EU-SE-1": "Sweden"})
    assert [(o.instance_slug, o.region, o.region_name, o.price_per_hour) for o in offers] == [
        ("8x-h100-sxm-instant-cluster", "US-KS-2", "US-KS-2", Decimal("24.00")),
        ("8x-h100-sxm-instant-cluster", "EU-SE-1", "Sweden", Decimal("24.00")),
    ]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"uninterruptablePrice": "1.62"}, "expected a JSON number, got str '1.62'"),
        ({"uninterruptablePrice": True}, "expected a JSON number, got bool"),
        (
            {"uninterruptablePrice": Decimal("-1.62")},
            "price_per_hour: Input should be greater than 0",
        ),
        ({"minimumBidPrice": 0}, "price_per_hour: Input should be greater than 0"),
        ({"stockStatus": 3}, "stockStatus: Input should be a valid string"),
    ],
)
def test_bad_answers_are_rejected_for_both_kinds_with_their_reason(changes, reason):
    rows = runpod.parse_lowest_price(PCIE, 8, "secure", "US-TX-3", "", lowest(**changes))
    assert all(isinstance(r, RejectedRow) for r in rows)
    assert [(r.instance_slug, r.region, r.kind) for r in rows] == [
        ("8x-a100-pcie-80gb", "US-TX-3", "on-demand"),
        ("8x-a100-pcie-80gb", "US-TX-3", "spot"),
    ]
    assert reason in rows[0].reason


def test_one_query_per_location_asks_two_four_and_eight_gpus_by_alias():
    query = runpod.price_query("community", "US")
    assert query.count("lowestPrice(") == 3
    assert 'n8: lowestPrice(input: {gpuCount: 8, secureCloud: false, countryCode: "US"})' in query


def test_every_mapping_target_is_a_curated_runpod_instance_type():
    with (settings.BASE_DIR / "fixtures" / "providers" / "runpod.toml").open("rb") as handle:
        curated = {i["slug"] for i in tomllib.load(handle)["instances"]}
    assert set(runpod.INSTANCE_SLUGS.values()) <= curated
    assert set(runpod.INSTANCE_SLUGS.values()) == curated  # every curated pod is priced


def test_a_graphql_error_answered_with_200_fails_with_its_message():
    def network(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"errors": [{"message": "Unauthorized request"}]})

    with make_client(httpx.MockTransport(network)) as client, pytest.raises(ScrapeError) as raised:
        runpod.fetch(client, ScrapeContext(now=None, api_key="bad"))
    assert "runpod discovery: GraphQL error: Unauthorized request" in str(raised.value)


# -- the API key --------------------------------------------------------------------------------


@pytest.mark.usefixtures("catalog")
def test_without_an_api_key_runpod_is_skipped_with_a_clear_message_and_exit_1(settings):
    settings.RUNPOD_API_KEY = ""
    with pytest.raises(CommandError, match="runpod: skipped"):
        call_command("refresh_prices", "--provider", "runpod", stdout=StringIO())
    run = ScrapeRun.objects.get(provider__slug="runpod")
    assert run.error_messages == ["RUNPOD_API_KEY is not set: runpod skipped"]


# -- the recording, end to end ------------------------------------------------------------------


def test_the_runpod_recording_parses_to_sixteen_secure_cloud_offers(replay):
    batch = runpod.fetch(replay("runpod"), ScrapeContext(now=None, api_key="replay"))
    # Secure Cloud only: the recorded Community Cloud and Instant Cluster answers offer nothing.
    assert len(batch.offers) == 16
    assert {o.parsed["cloud"] for o in batch.offers} == {"secure"}
    assert batch.rejected == ()


EXPECTED = [
    # (slug, region, kind, price per pod-hour, per GPU-hour). SkyPilot v7 RunPod rows:
    ("8x-a100-pcie-80gb", "EUR-IS-1", "on-demand", "12.96", "1.620000"),  # 1.62 x 8
    ("8x-a100-pcie-80gb", "CA-MTL-1", "spot", "9.52", "1.190000"),  # 1.19 x 8
    ("2x-a100-pcie-80gb", "US-TX-3", "spot", "2.38", "1.190000"),  # 1.19 x 2
    ("8x-a100-sxm-80gb", "US-KS-2", "on-demand", "15.12", "1.890000"),  # 1.89 x 8
    ("4x-a100-sxm-80gb", "US-TX-3", "on-demand", "7.56", "1.890000"),  # 1.89 x 4
]


@pytest.mark.usefixtures("catalog")
def test_the_runpod_recording_ingests_exact_prices(settings):
    settings.RUNPOD_API_KEY = ""
    replay_command("runpod", "runpod")
    run = ScrapeRun.objects.get(provider__slug="runpod")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="runpod", origin="scraper")
    for slug, region, kind, price, per_gpu in EXPECTED:
        offer = offers.get(instance__slug=slug, region__code=region, kind=kind)
        assert (offer.price_per_hour, offer.price_per_gpu_hour_usd, offer.available) == (
            Decimal(price),
            Decimal(per_gpu),
            True,
        )
    assert not offers.filter(instance__slug="8x-a100-sxm-80gb", kind="spot").exists()
    # 16 rows, all on curated pods (4 already priced by the fixture in US-TX-3, at the same
    # figures: updated, no history); 4x A100 PCIe is curated now, so nothing waits for review.
    assert (run.fetched, run.created, run.updated, run.unchanged, run.rejected) == (16, 12, 4, 0, 0)
    assert not SkuReview.objects.filter(provider__slug="runpod").exists()
    four = offers.filter(instance__slug="4x-a100-pcie-80gb")
    assert four.count() == 2


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_of_the_runpod_recording_writes_nothing(settings):
    settings.RUNPOD_API_KEY = ""
    replay_command("runpod", "runpod")
    history = PriceObservation.objects.count()
    replay_command("runpod", "runpod")
    run = ScrapeRun.objects.filter(provider__slug="runpod").latest()
    assert (run.created, run.updated, run.unchanged) == (0, 0, 16)
    assert PriceObservation.objects.count() == history
