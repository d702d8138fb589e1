"""Verda (DataCrunch): credentials, parsing, the mapping table and the recording end to end."""

from __future__ import annotations

import json
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
from providers.registry import SCRAPERS, resolve
from providers.replay import ReplayTransport
from providers.scrapers import datacrunch
from tests.providers.conftest import RECORDINGS, replay_command

LOCATIONS = [
    datacrunch.VerdaLocation(code="FIN-01", name="Finland 1", country_code="FI"),
    datacrunch.VerdaLocation(code="ICE-01", name="Iceland 1", country_code="IS"),
]
AVAILABLE = {"on-demand": {"FIN-01": {"2A6000.20V"}}, "spot": {}}


def kind(**changes) -> dict:
    """2A6000.20V as the Verda API answers it (values from gpuhunt's Verda test fixture)."""
    base = {
        "instance_type": "2A6000.20V",
        "model": "RTX A6000",
        "cpu": {"description": "20 CPU", "number_of_cores": 20},
        "gpu": {"description": "2x RTX A6000 48GB", "number_of_gpus": 2},
        "gpu_memory": {"description": "96GB GPU RAM", "size_in_gigabytes": 96},
        "memory": {"description": "120GB RAM", "size_in_gigabytes": 120},
        "p2p": "50GB/s",
        "price_per_hour": "1.98",
        "spot_price": "0.70",
        "currency": "usd",
    }
    return base | changes


def test_a_type_gives_on_demand_and_spot_offers_in_every_location_with_availability():
    offers = datacrunch.parse_instance_type(kind(), LOCATIONS, AVAILABLE)
    assert [(o.region, o.kind, o.price_per_hour, o.available) for o in offers] == [
        ("FIN-01", "on-demand", Decimal("1.98"), True),
        ("FIN-01", "spot", Decimal("0.70"), False),
        ("ICE-01", "on-demand", Decimal("1.98"), False),
        ("ICE-01", "spot", Decimal("0.70"), False),
    ]
    assert {(o.instance_slug, o.currency, o.geo) for o in offers} == {("2a6000-20v", "USD", "eu")}
    assert offers[0].parsed["gpu"] == "rtx-a6000"
    assert offers[0].parsed["p2p"] == "50GB/s"


def test_single_gpu_and_cpu_types_are_outside_the_catalog():
    single = kind(instance_type="1H100.80S.30V", gpu={"description": "1x", "number_of_gpus": 1})
    cpu = kind(instance_type="CPU.120V.480G", gpu={"description": "", "number_of_gpus": 0})
    assert datacrunch.parse_instance_type(single, LOCATIONS, AVAILABLE) is None
    assert datacrunch.parse_instance_type(cpu, LOCATIONS, AVAILABLE) is None


def test_a_type_without_a_spot_price_has_only_on_demand_offers():
    offers = datacrunch.parse_instance_type(kind(spot_price=None), LOCATIONS, AVAILABLE)
    assert {o.kind for o in offers} == {"on-demand"}


def test_an_unlisted_multi_gpu_type_maps_by_the_slug_rule_for_the_review_queue():
    raw = kind(
        instance_type="8H100.80S.176V",
        model="H100",
        gpu={"description": "8x H100 SXM5 80GB", "number_of_gpus": 8},
        gpu_memory={"description": "640GB GPU RAM", "size_in_gigabytes": 640},
    )
    offers = datacrunch.parse_instance_type(raw, LOCATIONS, AVAILABLE)
    assert offers[0].instance_slug == "8h100-80s-176v"
    assert offers[0].parsed["gpu"] == "h100-sxm"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"price_per_hour": 1.98}, "expected a number in a string, got float 1.98"),
        ({"price_per_hour": "one"}, "expected a decimal number, got 'one'"),
        ({"price_per_hour": "-1.98"}, "price_per_hour: Input should be greater than 0"),
        ({"price_per_hour": "0"}, "price_per_hour: Input should be greater than 0"),
        ({"gpu": {"description": "2x"}}, "gpu.number_of_gpus: Field required"),
    ],
)
def test_bad_types_are_rejected_with_their_reason_for_every_offer_they_give(changes, reason):
    rows = datacrunch.parse_instance_type(kind(**changes), LOCATIONS, AVAILABLE)
    assert all(isinstance(r, RejectedRow) for r in rows)
    assert len(rows) == 4  # 2 locations x (on-demand, spot)
    assert {r.instance_slug for r in rows} == {"2a6000-20v"}
    assert reason in rows[0].reason


def test_every_mapping_target_is_a_curated_datacrunch_instance_type():
    with (settings.BASE_DIR / "fixtures" / "providers" / "datacrunch.toml").open("rb") as handle:
        curated = {instance_slug(i["name"]) for i in tomllib.load(handle)["instances"]}
    assert set(datacrunch.INSTANCE_SLUGS.values()) <= curated


def test_verda_is_an_alias_of_datacrunch():
    assert resolve("verda") == "datacrunch"
    assert "datacrunch" in SCRAPERS


# -- credentials ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("catalog")
@pytest.mark.parametrize(
    ("client_id", "secret", "message"),
    [
        ("", "", "DATACRUNCH_CLIENT_ID and DATACRUNCH_CLIENT_SECRET are not set"),
        ("id", "", "DATACRUNCH_CLIENT_SECRET is not set"),
        ("", "secret", "DATACRUNCH_CLIENT_ID is not set"),
    ],
    ids=["none", "no-secret", "no-id"],
)
def test_without_both_credentials_datacrunch_is_skipped_and_exit_1(
    settings, client_id, secret, message
):
    settings.DATACRUNCH_CLIENT_ID, settings.DATACRUNCH_CLIENT_SECRET = client_id, secret
    with pytest.raises(CommandError, match="datacrunch: skipped") as raised:
        call_command("refresh_prices", "--provider", "verda", stdout=StringIO())
    assert raised.value.returncode == 1
    run = ScrapeRun.objects.get(provider__slug="datacrunch")
    assert run.status == "skipped"
    assert run.error_messages == [f"{message}: datacrunch skipped"]  # names what is missing


@pytest.mark.usefixtures("catalog")
def test_the_credentials_are_exchanged_for_a_bearer_token_used_on_every_call(settings):
    settings.DATACRUNCH_CLIENT_ID, settings.DATACRUNCH_CLIENT_SECRET = "my-id", "my-secret"
    replay = ReplayTransport(RECORDINGS / "datacrunch" / "manifest.json")
    seen = []

    def network(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/oauth2/token"):
            tokens.append(json.loads(request.content))
            return httpx.Response(200, json={"access_token": "tok-1", "token_type": "Bearer"})
        seen.append(request.headers["Authorization"])
        return replay.handle_request(request)

    tokens: list[dict] = []
    with make_client(httpx.MockTransport(network)) as client:
        run = refresh_provider("datacrunch", client)
    assert run.status == "succeeded", run.error_messages
    assert tokens == [
        {"grant_type": "client_credentials", "client_id": "my-id", "client_secret": "my-secret"}
    ]
    assert seen == ["Bearer tok-1"] * 4


def test_both_credentials_are_scrubbed_from_recordings(settings):
    settings.DATACRUNCH_CLIENT_ID, settings.DATACRUNCH_CLIENT_SECRET = "my-id", "my-secret"
    assert set(SCRAPERS["datacrunch"].secrets()) == {"my-id", "my-secret", "my-id:my-secret"}


# -- the recording, end to end ------------------------------------------------------------------


def test_the_datacrunch_recording_parses_to_the_one_multi_gpu_type(replay):
    batch = datacrunch.fetch(replay("datacrunch"), ScrapeContext(now=None, api_key="replay"))
    # 2A6000.20V x 3 locations x (on-demand, spot); 1H100, 1V100 and the CPU node are skipped.
    assert len(batch.offers) == 6
    assert {o.sku for o in batch.offers} == {"2A6000.20V"}
    assert batch.rejected == ()


EXPECTED = [
    # (region, kind, price per hour, per GPU-hour USD, available). gpuhunt's Verda fixture:
    # price_per_hour "1.98" / 2 GPUs = 0.99; spot_price "0.70" / 2 = 0.35. Listed in FIN-01 only.
    ("FIN-01", "on-demand", "1.98", "0.990000", True),
    ("FIN-01", "spot", "0.70", "0.350000", True),
    ("ICE-01", "on-demand", "1.98", "0.990000", False),
    ("FIN-02", "spot", "0.70", "0.350000", False),
]


@pytest.mark.usefixtures("catalog")
def test_the_datacrunch_recording_ingests_exact_prices(settings):
    settings.DATACRUNCH_CLIENT_ID = settings.DATACRUNCH_CLIENT_SECRET = ""
    replay_command("datacrunch", "verda")
    run = ScrapeRun.objects.get(provider__slug="datacrunch")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="datacrunch", origin="scraper")
    for region, kind_, price, per_gpu, available in EXPECTED:
        offer = offers.get(instance__slug="2a6000-20v", region__code=region, kind=kind_)
        assert (offer.price_per_hour, offer.price_per_gpu_hour_usd, offer.available) == (
            Decimal(price),
            Decimal(per_gpu),
            available,
        )
    assert (run.fetched, run.created, run.updated, run.unchanged, run.rejected) == (6, 6, 0, 0, 0)


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_of_the_datacrunch_recording_writes_nothing(settings):
    settings.DATACRUNCH_CLIENT_ID = settings.DATACRUNCH_CLIENT_SECRET = ""
    replay_command("datacrunch", "datacrunch")
    history = PriceObservation.objects.count()
    replay_command("datacrunch", "datacrunch")
    run = ScrapeRun.objects.filter(provider__slug="datacrunch").latest()
    assert (run.created, run.updated, run.unchanged) == (0, 0, 6)
    assert PriceObservation.objects.count() == history
