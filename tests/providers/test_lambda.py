"""Lambda Cloud: the API key rule, parsing, the mapping table and the recording end to end."""

from __future__ import annotations

import tomllib
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings.models import Offer, PriceObservation, ScrapeRun
from offerings.schemas import RejectedRow, instance_slug
from providers.base import ScrapeContext
from providers.http import make_client
from providers.refresh import refresh_provider
from providers.replay import ReplayTransport
from providers.scrapers import lambda_
from tests.providers.conftest import RECORDINGS, replay_command

REGIONS = {"us-east-1": "Virginia, USA", "us-west-1": "California, USA"}


def item(**changes) -> dict:
    kind = {
        "name": "gpu_8x_h100_sxm5",
        "description": "8x H100 (80 GB SXM5)",
        "gpu_description": "H100 (80 GB SXM5)",
        "price_cents_per_hour": 3192,
        "specs": {"vcpus": 208, "memory_gib": 1800, "storage_gib": 24780, "gpus": 8},
    }
    capacity = changes.pop("capacity", [{"name": "us-west-1", "description": "California, USA"}])
    return {"instance_type": kind | changes, "regions_with_capacity_available": capacity}


def test_each_type_is_offered_in_every_region_with_its_capacity_there():
    offers = lambda_.parse_item("gpu_8x_h100_sxm5", item(), REGIONS)
    assert [(o.region, o.available) for o in offers] == [("us-east-1", False), ("us-west-1", True)]
    assert {o.price_per_hour for o in offers} == {Decimal("31.92")}
    assert offers[0].instance_slug == "gpu-8x-h100-sxm5"
    assert (offers[1].region_name, offers[1].geo) == ("California, USA", "na")


def test_a_region_with_capacity_but_missing_from_the_region_list_is_kept():
    raw = item(capacity=[{"name": "asia-northeast-1", "description": "Tokyo, Japan"}])
    offers = lambda_.parse_item("gpu_8x_h100_sxm5", raw, REGIONS)
    assert ("asia-northeast-1", True, "asia") in [(o.region, o.available, o.geo) for o in offers]


def test_single_gpu_types_are_outside_the_catalog():
    raw = item(
        name="gpu_1x_h100_sxm5",
        specs={"vcpus": 26, "memory_gib": 225, "storage_gib": 2816, "gpus": 1},
    )
    assert lambda_.parse_item("gpu_1x_h100_sxm5", raw, REGIONS) is None


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"price_cents_per_hour": "3192"}, "price_cents_per_hour: Input should be a valid integer"),
        ({"price_cents_per_hour": 31.92}, "price_cents_per_hour: Input should be a valid integer"),
        ({"price_cents_per_hour": -100}, "price_per_hour: Input should be greater than 0"),
        ({"price_cents_per_hour": 0}, "price_per_hour: Input should be greater than 0"),
        ({"specs": {"vcpus": 208}}, "instance_type.specs.memory_gib: Field required"),
        ({"name": "gpu_8x_h100"}, "listed as 'gpu_8x_h100_sxm5' but named 'gpu_8x_h100'"),
    ],
)
def test_bad_instance_types_are_rejected_with_their_reason(changes, reason):
    rejected = lambda_.parse_item("gpu_8x_h100_sxm5", item(**changes), REGIONS)
    assert isinstance(rejected, RejectedRow)
    assert reason in rejected.reason


def test_every_mapping_target_is_a_curated_lambda_instance_type():
    with (settings.BASE_DIR / "fixtures" / "providers" / "lambda.toml").open("rb") as handle:
        curated = {instance_slug(i["name"]) for i in tomllib.load(handle)["instances"]}
    assert set(lambda_.INSTANCE_SLUGS.values()) <= curated


@pytest.mark.parametrize(
    ("description", "gpu"),
    [
        ("H100 (80 GB SXM5)", "h100-sxm"),
        ("A100 (40 GB SXM4)", "a100-sxm-40gb"),
        ("B200 (180 GB SXM6)", "b200"),
    ],
)
def test_gpu_descriptions_map_to_gpu_slugs(description, gpu):
    assert lambda_.GPU_SLUGS[description] == gpu


# -- the API key --------------------------------------------------------------------------------


@pytest.mark.usefixtures("catalog")
def test_without_an_api_key_lambda_is_skipped_with_a_clear_message_and_exit_1(settings):
    settings.LAMBDA_API_KEY = ""
    out = StringIO()
    with pytest.raises(CommandError, match="lambda: skipped") as raised:
        call_command("refresh_prices", "--provider", "lambda", stdout=out)
    assert raised.value.returncode == 1
    run = ScrapeRun.objects.get(provider__slug="lambda")
    assert run.status == "skipped"
    assert run.error_messages == ["LAMBDA_API_KEY is not set: lambda skipped"]
    assert "LAMBDA_API_KEY is not set" in out.getvalue()


@pytest.mark.usefixtures("catalog")
def test_the_api_key_is_sent_as_a_bearer_token(settings):
    settings.LAMBDA_API_KEY = "secret-key"
    replay = ReplayTransport(RECORDINGS / "lambda" / "manifest.json")
    seen = []

    def network(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Authorization"])
        return replay.handle_request(request)

    with make_client(httpx.MockTransport(network)) as client:
        run = refresh_provider("lambda", client)
    assert run.status == "succeeded", run.error_messages
    assert seen == ["Bearer secret-key", "Bearer secret-key"]


def test_a_replay_needs_no_api_key(replay):
    batch = lambda_.fetch(replay("lambda"), ScrapeContext(now=None, api_key="replay"))
    assert len(batch.offers) == 28


# -- the recording, end to end ------------------------------------------------------------------

EXPECTED = [
    # (slug, region, price per hour, per GPU-hour, available): lambda.ai prices of 2026-09-20.
    ("gpu-8x-h100-sxm5", "us-east-1", "31.92", "3.990000", False),
    ("gpu-8x-a100", "us-west-1", "15.92", "1.990000", True),
    ("8x-nvidia-b200-sxm6", "europe-central-1", "53.52", "6.690000", False),
    ("2x-nvidia-h100-sxm", "us-midwest-1", "8.38", "4.190000", False),
]


@pytest.mark.usefixtures("catalog")
def test_the_lambda_recording_ingests_exact_prices(settings):
    settings.LAMBDA_API_KEY = ""
    replay_command("lambda", "lambda")
    run = ScrapeRun.objects.get(provider__slug="lambda")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="lambda")
    for slug, region, price, per_gpu, available in EXPECTED:
        offer = offers.get(instance__slug=slug, region__code=region)
        assert (offer.price_per_hour, offer.price_per_gpu_hour_usd, offer.available) == (
            Decimal(price),
            Decimal(per_gpu),
            available,
        )
    # 7 multi-GPU types x 4 regions; the fixtures already held each type's us-east-1 price,
    # dated 2026-09-20. The recording is hand-built, so its prices are undated: those seven
    # keep the fixture's dated price (only their availability is the recording's), and the
    # other 21 are new, undated offers.
    assert (run.fetched, run.created, run.updated, run.unchanged) == (28, 21, 7, 0)
    assert offers.filter(origin="scraper").count() == 21
    assert offers.filter(origin="scraper", observed_at__isnull=False).count() == 0
    assert offers.filter(region__code="us-east-1", observed_at__isnull=True).count() == 0


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_of_the_lambda_recording_writes_nothing():
    replay_command("lambda", "lambda")
    history = PriceObservation.objects.count()
    replay_command("lambda", "lambda")
    run = ScrapeRun.objects.filter(provider__slug="lambda").latest()
    assert (run.created, run.updated, run.unchanged) == (0, 0, 28)
    assert PriceObservation.objects.count() == history
