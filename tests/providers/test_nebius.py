"""Nebius AI Cloud over gRPC: frames, messages, auth, the recording end to end, hostile answers."""

from __future__ import annotations

import json
import shutil
import tomllib
from dataclasses import dataclass
from decimal import Decimal
from io import StringIO
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from nebius.api.nebius.billing import v1alpha1 as billing
from nebius.api.nebius.common import v1 as common
from nebius.api.nebius.compute import v1 as compute
from nebius.api.nebius.iam import v1 as iam
from nebius.base.resolver import Conventional

from offerings.models import Offer, PriceObservation, ScrapeRun
from offerings.schemas import instance_slug
from providers import grpc
from providers.base import ScrapeContext, ScrapeError
from providers.http import make_client, no_sleep
from providers.refresh import refresh_provider
from providers.registry import SCRAPERS
from providers.replay import RecordingTransport, ReplayTransport
from providers.scrapers import nebius
from tests.providers.conftest import RECORDINGS, replay_command

RECORDING = RECORDINGS / "nebius"
NO_KEYS = {"NEBIUS_SERVICE_ACCOUNT_ID": "", "NEBIUS_PUBLIC_KEY_ID": "", "NEBIUS_PRIVATE_KEY": ""}


def estimate(cost: str) -> billing.EstimateResponse:
    total = billing.CostBreakdown(cost=cost, cost_rounded=cost)
    return billing.EstimateResponse(
        hourly_cost=billing.ResourceGroupCost(general=billing.GeneralTotalCost(total=total))
    )


def preset(name: str, gpus: int) -> compute.Preset:
    return compute.Preset(name=name, resources=compute.PresetResources(gpu_count=gpus))


def project(project_id: str, region: str) -> iam.Container:
    return iam.Container(
        metadata=common.ResourceMetadata(id=project_id), status=iam.ContainerStatus(region=region)
    )


# -- frames and messages (no database) ----------------------------------------------------------


def test_a_message_survives_a_frame_round_trip():
    body = grpc.encode_frame(estimate("23.60").SerializeToString())
    assert body[:5] == b"\x00" + (len(body) - 5).to_bytes(4, "big")
    assert nebius.parse_estimate(grpc.decode_unary(body, billing.EstimateResponse)) == Decimal(
        "23.60"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x00\x00\x00\x00\x10abc", "claims 16 bytes but only 3 follow"),
        (b"\x00\x00\x00", "truncated frame header"),
        (b"\x01\x00\x00\x00\x00", "compressed frame"),
        (b"\x07\x00\x00\x00\x00", "invalid flag 7"),
        (b"\x00\x7f\x00\x00\x00", "limit"),
        (b"", "expected one frame, got 0"),
        (grpc.encode_frame(b"") * 2, "expected one frame, got 2"),
    ],
)
def test_a_broken_body_is_refused_with_what_is_wrong(body, message):
    with pytest.raises(grpc.FrameError, match=message):
        grpc.decode_unary(body, billing.EstimateResponse)


@pytest.mark.parametrize(
    ("cost", "reason"),
    [
        ("", "has no hourly cost"),
        ("23.60 EUR", "is not a decimal number (the calculator states no currency; USD"),
        ("NaN", "is not a finite number"),
    ],
)
def test_an_estimate_without_a_usable_hourly_cost_is_refused(cost, reason):
    with pytest.raises(ValueError, match=reason.replace("(", r"\(")):
        nebius.parse_estimate(estimate(cost))


def test_a_negative_estimate_becomes_a_rejected_row_naming_its_offer():
    row = nebius.parse_offer(
        "gpu-h100-sxm", preset("8gpu-128vcpu-1600gb", 8), "eu-north1", "on-demand", Decimal(-1)
    )
    assert row.reason == "price_per_hour: Input should be greater than 0"
    assert (row.instance_slug, row.region, row.kind) == (
        "gpu-h100-sxm-8gpu-128vcpu-1600gb",
        "eu-north1",
        "on-demand",
    )


def test_only_presets_with_two_or_more_gpus_are_priced():
    platform = compute.Platform(
        spec=compute.PlatformSpec(
            presets=[preset("4vcpu-16gb", 0), preset("1gpu-16vcpu-200gb", 1), preset("8gpu", 8)]
        )
    )
    assert [name for name, _ in nebius.multi_gpu_presets(platform)] == ["8gpu"]


def test_one_project_is_priced_per_region_and_only_the_wanted_regions():
    projects = [
        project("project-e00b", "eu-north1"),
        project("project-e00a", "eu-north1"),
        project("project-u00a", "us-central1"),
        iam.Container(metadata=common.ResourceMetadata(id="project-x"), spec=iam.ContainerSpec()),
    ]
    assert nebius.project_regions(projects) == {
        "eu-north1": "project-e00a",
        "us-central1": "project-u00a",
    }
    assert nebius.project_regions(projects, ("us-central1",)) == {"us-central1": "project-u00a"}


def test_the_spot_estimate_asks_for_a_preemptible_vm_in_the_project():
    spec = nebius.estimate_request("project-e00a", "gpu-h100-sxm", "8gpu", spot=True)
    instance = spec.resource_spec.compute_instance_spec
    assert instance.metadata.parent_id == "project-e00a"
    assert (instance.spec.resources.platform, instance.spec.resources.preset) == (
        "gpu-h100-sxm",
        "8gpu",
    )
    assert instance.spec.HasField("preemptible")
    on_demand = nebius.estimate_request("project-e00a", "gpu-h100-sxm", "8gpu", spot=False)
    assert not on_demand.resource_spec.compute_instance_spec.spec.HasField("preemptible")


def test_the_service_hosts_are_the_ones_the_sdk_resolves():
    resolver = Conventional()
    for method in (
        nebius.EXCHANGE,
        nebius.LIST_TENANTS,
        nebius.LIST_PROJECTS,
        nebius.LIST_PLATFORMS,
        nebius.ESTIMATE,
    ):
        assert method.host == resolver.resolve(method.service).format(domain=nebius.DOMAIN)
        assert grpc.method_for(method.url) is method


def test_every_curated_nebius_type_is_reachable_by_the_slug_rule():
    with (settings.BASE_DIR / "fixtures" / "providers" / "nebius.toml").open("rb") as handle:
        curated = {instance_slug(i["name"]) for i in tomllib.load(handle)["instances"]}
    batch = nebius.fetch(
        ReplayClient.open(RECORDING / "manifest.json"), ScrapeContext(now=None, api_key="replay")
    )
    # Presets curated after the hand-built recording was made: its platform list has none of
    # them, so they are named here rather than left to fail silently.
    newer = {
        "gpu-b200-sxm-a-8gpu-160vcpu-1792gb",
        "gpu-b300-sxm-8gpu-192vcpu-2768gb",
        "gpu-gb300-4gpu-112vcpu-800gb",
    }
    reachable = {o.instance_slug for o in batch.offers}
    assert curated - newer <= reachable
    assert newer <= curated
    assert not newer & reachable, "the recording lists one now: drop it from `newer`"


class ReplayClient:
    @staticmethod
    def open(manifest: Path) -> httpx.Client:
        return make_client(ReplayTransport(manifest), sleep=no_sleep)


def test_a_grpc_status_header_fails_the_call_with_its_code_and_message():
    def answer(request: httpx.Request) -> httpx.Response:
        headers = {
            "content-type": "application/grpc",
            "grpc-status": "16",
            "grpc-message": "token%20expired",
        }
        return httpx.Response(200, headers=headers)

    with (
        make_client(httpx.MockTransport(answer)) as client,
        pytest.raises(grpc.GrpcStatusError, match="gRPC status 16 UNAUTHENTICATED: token expired"),
    ):
        grpc.call_unary(client, nebius.LIST_TENANTS, iam.ListTenantsRequest(), what="tenants")


def test_a_grpc_request_is_an_http2_style_post_with_one_frame():
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = grpc.encode_frame(iam.ListTenantsResponse().SerializeToString())
        return httpx.Response(200, headers={"content-type": "application/grpc"}, content=body)

    with make_client(httpx.MockTransport(answer)) as client:
        grpc.call_unary(
            client, nebius.LIST_TENANTS, iam.ListTenantsRequest(page_size=7), what="t", token="x"
        )
    (request,) = seen
    assert str(request.url) == "https://cpl.iam.api.nebius.cloud/nebius.iam.v1.TenantService/List"
    assert request.headers["content-type"] == "application/grpc"
    assert request.headers["te"] == "trailers"
    assert request.headers["authorization"] == "Bearer x"
    sent = grpc.decode_unary(request.content, iam.ListTenantsRequest)
    assert sent.page_size == 7


def test_an_answer_that_is_not_grpc_is_refused():
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/html"}, content=b"<html>")

    with (
        make_client(httpx.MockTransport(answer)) as client,
        pytest.raises(ScrapeError, match=r"expected gRPC from https://cpl\.iam"),
    ):
        grpc.call_unary(client, nebius.LIST_TENANTS, iam.ListTenantsRequest(), what="t")


def test_the_recording_gives_on_demand_and_spot_prices_of_the_multi_gpu_presets(replay):
    batch = nebius.fetch(replay("nebius"), ScrapeContext(now=None, api_key="replay"))
    prices = {(o.sku, o.region, o.kind): o.price_per_hour for o in batch.offers}
    assert len(prices) == 13
    assert prices[("gpu-h100-sxm_8gpu-128vcpu-1600gb", "eu-north1", "on-demand")] == Decimal(
        "23.60"
    )
    assert prices[("gpu-h100-sxm_8gpu-128vcpu-1600gb", "eu-north1", "spot")] == Decimal("10.00")
    assert ("gpu-b200-sxm_8gpu-160vcpu-1792gb", "us-central1", "spot") not in prices
    assert {o.currency for o in batch.offers} == {"USD"}
    assert batch.rejected == ()


# -- auth ---------------------------------------------------------------------------------------


@pytest.fixture
def key_pair(settings):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    settings.NEBIUS_SERVICE_ACCOUNT_ID = "serviceaccount-e00test"
    settings.NEBIUS_PUBLIC_KEY_ID = "publickey-e00test"
    settings.NEBIUS_PRIVATE_KEY = pem
    return key.public_key()


@pytest.mark.usefixtures("catalog")
def test_the_service_account_jwt_is_exchanged_for_a_bearer_token_used_on_every_call(key_pair):
    recorded = ReplayTransport(RECORDING / "manifest.json")
    exchanges: list[iam.ExchangeTokenRequest] = []
    authorizations: set[str] = set()

    def network(request: httpx.Request) -> httpx.Response:
        if request.url.path == nebius.EXCHANGE.path:
            exchanges.append(grpc.decode_unary(request.content, iam.ExchangeTokenRequest))
            answer = iam.CreateTokenResponse(access_token="tok-1", token_type="Bearer")
            body = grpc.encode_frame(answer.SerializeToString())
            return httpx.Response(200, headers={"content-type": "application/grpc"}, content=body)
        authorizations.add(request.headers["Authorization"])
        return recorded.handle_request(request)

    with make_client(httpx.MockTransport(network)) as client:
        run = refresh_provider("nebius", client)
    assert run.status == "succeeded", run.error_messages
    (exchange,) = exchanges
    assert exchange.grant_type == "urn:ietf:params:oauth:grant-type:token-exchange"
    assert exchange.subject_token_type == "urn:ietf:params:oauth:token-type:jwt"
    claims = jwt.decode(
        exchange.subject_token, key_pair, algorithms=["RS256"], audience=nebius.JWT_AUDIENCE
    )
    assert claims["iss"] == claims["sub"] == "serviceaccount-e00test"
    assert jwt.get_unverified_header(exchange.subject_token)["kid"] == "publickey-e00test"
    assert authorizations == {"Bearer tok-1"}


def test_an_unusable_private_key_fails_clearly():
    ctx = ScrapeContext(
        now=None,
        credentials={
            "NEBIUS_SERVICE_ACCOUNT_ID": "sa",
            "NEBIUS_PUBLIC_KEY_ID": "kid",
            "NEBIUS_PRIVATE_KEY": "not a key",
        },
    )
    with pytest.raises(ScrapeError, match="NEBIUS_PRIVATE_KEY is not a usable RSA private key"):
        nebius.subject_token(ctx)


@pytest.mark.usefixtures("catalog")
@pytest.mark.parametrize(
    ("unset", "message"),
    [
        (
            ("NEBIUS_SERVICE_ACCOUNT_ID", "NEBIUS_PUBLIC_KEY_ID", "NEBIUS_PRIVATE_KEY"),
            "NEBIUS_SERVICE_ACCOUNT_ID and NEBIUS_PUBLIC_KEY_ID and NEBIUS_PRIVATE_KEY are not set",
        ),
        (("NEBIUS_PRIVATE_KEY",), "NEBIUS_PRIVATE_KEY is not set"),
    ],
    ids=["none", "no-private-key"],
)
def test_without_every_credential_nebius_is_skipped_and_exit_1(settings, unset, message):
    settings.NEBIUS_SERVICE_ACCOUNT_ID = "sa"
    settings.NEBIUS_PUBLIC_KEY_ID = "kid"
    settings.NEBIUS_PRIVATE_KEY = "pem"
    for name in unset:
        setattr(settings, name, "")
    with pytest.raises(CommandError, match="nebius: skipped") as raised:
        call_command("refresh_prices", "--provider", "nebius", stdout=StringIO())
    assert raised.value.returncode == 1
    run = ScrapeRun.objects.get(provider__slug="nebius")
    assert run.status == "skipped"
    assert run.error_messages == [f"{message}: nebius skipped"]


def test_every_credential_is_scrubbed_from_recordings(settings):
    settings.NEBIUS_SERVICE_ACCOUNT_ID, settings.NEBIUS_PUBLIC_KEY_ID = "sa", "kid"
    settings.NEBIUS_PRIVATE_KEY = "pem"
    assert {"sa", "kid", "pem"} <= set(SCRAPERS["nebius"].secrets())


def test_recording_writes_redacted_protobuf_json_that_replays(tmp_path):
    """--record over gRPC: messages as protobuf-JSON, tokens redacted, and the result replays."""
    recorded = ReplayTransport(RECORDING / "manifest.json")

    def network(request: httpx.Request) -> httpx.Response:
        if request.url.path == nebius.EXCHANGE.path:
            answer = iam.CreateTokenResponse(access_token="secret-token", token_type="Bearer")
            body = grpc.encode_frame(answer.SerializeToString())
            return httpx.Response(200, headers={"content-type": "application/grpc"}, content=body)
        return recorded.handle_request(request)

    folder = tmp_path / "nebius"
    ctx = ScrapeContext(
        now=None,
        credentials={
            "NEBIUS_SERVICE_ACCOUNT_ID": "sa",
            "NEBIUS_PUBLIC_KEY_ID": "kid",
            "NEBIUS_PRIVATE_KEY": _pem(),
        },
    )
    transport = RecordingTransport(httpx.MockTransport(network), folder, secrets=["kid"])
    with make_client(transport) as client:
        live = nebius.fetch(client, ctx)
    text = "".join(p.read_text() for p in folder.iterdir())
    assert "secret-token" not in text
    assert '"accessToken": "REDACTED"' in text
    assert '"subjectToken": "REDACTED"' in text
    manifest = json.loads((folder / "manifest.json").read_text())
    assert {e["content_type"] for e in manifest} == {"application/grpc"}

    with ReplayClient.open(folder / "manifest.json") as client:
        replayed = nebius.fetch(client, ScrapeContext(now=None, api_key="replay"))
    assert replayed.offers == live.offers


def _pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


# -- the recording, end to end ------------------------------------------------------------------

EXPECTED = [
    # (instance slug, region, kind, price per hour, per GPU-hour USD): SkyPilot v7 Nebius rows.
    ("gpu-h100-sxm-8gpu-128vcpu-1600gb", "eu-north1", "on-demand", "23.60", "2.950000"),
    ("gpu-h100-sxm-8gpu-128vcpu-1600gb", "eu-north1", "spot", "10.00", "1.250000"),
    ("gpu-h200-sxm-8gpu-128vcpu-1600gb", "eu-west1", "on-demand", "28.00", "3.500000"),
    ("gpu-h200-sxm-8gpu-128vcpu-1600gb", "eu-west1", "spot", "11.60", "1.450000"),
    ("gpu-h200-sxm-8gpu-128vcpu-1600gb", "us-central1", "spot", "11.60", "1.450000"),
    ("gpu-b200-sxm-8gpu-160vcpu-1792gb", "us-central1", "on-demand", "44.00", "5.500000"),
    ("gpu-l40s-d-4gpu-128vcpu-768gb", "eu-north1", "on-demand", "9.1376", "2.284400"),
]


@pytest.mark.usefixtures("catalog")
def test_the_nebius_recording_ingests_exact_on_demand_and_spot_prices(settings):
    for name, value in NO_KEYS.items():
        setattr(settings, name, value)
    replay_command("nebius", "nebius")
    run = ScrapeRun.objects.get(provider__slug="nebius")
    assert run.status == "succeeded", run.error_messages
    offers = Offer.objects.filter(instance__provider__slug="nebius", origin="scraper")
    for slug, region, kind, price, per_gpu in EXPECTED:
        offer = offers.get(instance__slug=slug, region__code=region, kind=kind)
        assert (offer.price_per_hour, offer.currency, offer.price_per_gpu_hour_usd) == (
            Decimal(price),
            "USD",
            Decimal(per_gpu),
        )
    assert run.fetched == 13
    assert not offers.filter(instance__slug="gpu-b200-sxm-8gpu-160vcpu-1792gb", kind="spot")


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_of_the_nebius_recording_writes_nothing(settings):
    for name, value in NO_KEYS.items():
        setattr(settings, name, value)
    replay_command("nebius", "nebius")
    first = ScrapeRun.objects.get(provider__slug="nebius")
    history = PriceObservation.objects.count()
    replay_command("nebius", "nebius")
    run = ScrapeRun.objects.filter(provider__slug="nebius").latest()
    assert run.status == "succeeded"
    assert (run.created, run.updated) == (0, 0)
    assert run.unchanged == first.created + first.updated + first.unchanged
    assert PriceObservation.objects.count() == history


# -- hostile answers ----------------------------------------------------------------------------

TARGET = "estimate-eu-north1-gpu-h100-sxm-8gpu-128vcpu-on-demand.json"
PLATFORMS = "platforms-eu-north1.json"


@dataclass(frozen=True)
class Case:
    variant: str
    status: str
    reasons: tuple[str, ...]


CASES = [
    Case("truncated-frame", "failed", ("claims", "bytes but only", "follow")),
    Case("wrong-length-prefix", "failed", ("unusable gRPC answer from https://api.calculator",)),
    Case(
        "grpc-status-estimate",
        "succeeded",
        ("gRPC status 7 PERMISSION_DENIED: no access to the calculator",),
    ),
    Case(
        "grpc-status-platforms",
        "failed",
        ("nebius platforms in eu-north1: gRPC status 14 UNAVAILABLE: try again",),
    ),
    Case("unknown-currency", "succeeded", ("hourly cost '23.60 EUR' is not a decimal number",)),
    Case("negative-price", "succeeded", ("price_per_hour: Input should be greater than 0",)),
    Case("missing-preset", "succeeded", ("platform gpu-h100-sxm lists a preset without a name",)),
    Case("503-then-success", "succeeded", ()),
    Case("timeout", "failed", ("timed out waiting for https://api.calculator.billing-data-plane",)),
]


def build_variant(variant: str, folder: Path) -> Path:
    """Copy the good recording into `folder` and break one thing in it."""
    shutil.copytree(RECORDING, folder)
    manifest = folder / "manifest.json"
    entries = json.loads(manifest.read_text())
    index = next(i for i, e in enumerate(entries) if e.get("body") == TARGET)
    target = entries[index]
    good = grpc.encode_frame(
        billing.EstimateResponse.from_json((folder / TARGET).read_text()).SerializeToString()
    )

    def set_cost(cost: str) -> None:
        (folder / TARGET).write_text(estimate(cost).to_json())

    if variant == "truncated-frame":
        (folder / "broken.bin").write_bytes(good[: len(good) // 2])
        target["body"] = "broken.bin"
        del entries[index + 1 :]  # the run stops at the broken answer
    elif variant == "wrong-length-prefix":
        (folder / "broken.bin").write_bytes(b"\x00" + (len(good) - 9).to_bytes(4, "big") + good[5:])
        target["body"] = "broken.bin"
        del entries[index + 1 :]
    elif variant == "grpc-status-estimate":
        del target["body"]
        target["headers"] = {
            "grpc-status": "7",
            "grpc-message": "no%20access%20to%20the%20calculator",
        }
    elif variant == "grpc-status-platforms":
        platforms = next(i for i, e in enumerate(entries) if e.get("body") == PLATFORMS)
        del entries[platforms]["body"]
        entries[platforms]["headers"] = {"grpc-status": "14", "grpc-message": "try again"}
        del entries[platforms + 1 :]
    elif variant == "unknown-currency":
        set_cost("23.60 EUR")
    elif variant == "negative-price":
        set_cost("-23.60")
    elif variant == "missing-preset":
        listing = json.loads((folder / PLATFORMS).read_text())
        h100 = next(p for p in listing["items"] if p["metadata"]["name"] == "gpu-h100-sxm")
        h100["spec"]["presets"][1]["name"] = ""
        (folder / PLATFORMS).write_text(json.dumps(listing))
        entries = [e for e in entries if "gpu-h100-sxm-8gpu" not in e.get("body", "")]
    elif variant == "503-then-success":
        (folder / "503.txt").write_text("upstream connect error\n")
        unavailable = {**target, "status": 503, "content_type": "text/plain", "body": "503.txt"}
        entries.insert(index, unavailable)
    elif variant == "timeout":
        failing = {k: v for k, v in target.items() if k in ("method", "url", "request_body")}
        entries[index:] = [failing | {"error": "timeout"}] * 4
    manifest.write_text(json.dumps(entries, indent=2))
    return manifest


def snapshot() -> dict:
    return {
        (o.instance.slug, o.region.code, o.kind): (o.price_per_hour, o.is_active, o.available)
        for o in Offer.objects.filter(instance__provider__slug="nebius").select_related(
            "instance", "region"
        )
    }


@pytest.mark.usefixtures("catalog")
@pytest.mark.parametrize("case", CASES, ids=[c.variant for c in CASES])
def test_a_hostile_nebius_answer_leaves_every_good_price_as_it_was_with_the_reason_recorded(
    settings, sleeps, tmp_path, case
):
    for name, value in NO_KEYS.items():
        setattr(settings, name, value)
    good = ReplayTransport(RECORDING / "manifest.json")
    with make_client(good, sleep=sleeps, rng=lambda: 0.5) as client:
        assert refresh_provider("nebius", client, replaying=True).status == "succeeded"
    before = snapshot()
    assert before

    transport = ReplayTransport(build_variant(case.variant, tmp_path / case.variant))
    with make_client(transport, sleep=sleeps, rng=lambda: 0.5) as client:
        run = refresh_provider("nebius", client, replaying=True)

    assert run.status == case.status, (run.error_messages, run.rejected_rows[:3])
    recorded = " | ".join([*run.error_messages, *(r["reason"] for r in run.rejected_rows)])
    for reason in case.reasons:
        assert reason in recorded
    assert snapshot() == before
    assert transport.unused() == [], "every recorded exchange was requested"
    if case.status == "failed":
        assert (run.errors, run.created, run.updated) == (1, 0, 0)
    if case.variant == "503-then-success":
        assert sleeps == [0.5]  # one backoff (full jitter at rng 0.5 of a 1 s ceiling)
        assert (run.created, run.updated, run.rejected) == (0, 0, 0)
    if case.variant == "timeout":
        assert len(sleeps) == 3
