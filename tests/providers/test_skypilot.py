"""SkyPilot's public catalog as a second price source: it fills only what no other source supplies."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest

from offerings import writer
from offerings.models import Offer, PriceCheck, PriceObservation, Provider, ScrapeRun
from offerings.schemas import ScrapeBatch, ScrapedOffer
from providers.base import ScrapeError
from providers.http import make_client, no_sleep
from providers.refresh import refresh_provider
from providers.scrapers import skypilot
from tests.providers.conftest import RECORDINGS, replay_command

AWS_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
    "Region,AvailabilityZone,Arch"
)
GCP_HEADER = (
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
    "AvailabilityZone,Price,SpotPrice"
)
SHA = "0123456789abcdef0123456789abcdef01234567"


def _csv(lines: list[str]) -> str:
    """A CSV body as SkyPilot writes one: every row, the last included, ends with a line break."""
    return "\n".join(lines) + "\n"


def _aws_row(name: str, price: str, spot: str, region: str, zone: str) -> str:
    return f"{name},H100,8.0,192.0,2048.0,gpus,{price},{spot},{region},{zone},x86_64"


def _serve(files: dict[str, str], *, commits: dict | None = None, status: int = 200):
    """A transport serving raw files by cloud and (optionally) the commits API."""
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.host == "api.github.com":
            if commits is None:
                return httpx.Response(403, json={"message": "API rate limit exceeded"})
            cloud = request.url.params["path"].split("/")[2]
            return httpx.Response(200, json=[commits[cloud]])
        cloud = request.url.path.split("/")[-2]
        return httpx.Response(status, text=files[cloud], headers={"Content-Type": "text/plain"})

    return httpx.MockTransport(handler), seen


def _aws_offer(sku: str, price: str) -> ScrapedOffer:
    """A price AWS's own scraper read, in us-east-1."""
    return ScrapedOffer(
        sku=sku,
        instance_slug=sku.replace(".", "-"),
        region="us-east-1",
        kind="on-demand",
        price_per_hour=Decimal(price),
        currency="USD",
        source_url="https://aws.amazon.com/ec2/pricing/on-demand/",
    )


def _refresh(transport, settings, clouds=("aws",)) -> ScrapeRun:
    settings.SKYPILOT_CLOUDS = list(clouds)
    with make_client(transport, sleep=no_sleep) as client:
        return refresh_provider("skypilot", client)


@pytest.mark.usefixtures("catalog")
def test_the_recording_fills_unpriced_types_undated_under_their_own_providers(replay):
    from providers.replay import ReplayTransport

    pinned = ReplayTransport(RECORDINGS / "skypilot" / "manifest.json").pinned_commits()
    with replay("skypilot") as client:
        run = refresh_provider("skypilot", client, replaying=True, pinned=pinned)
    assert run.status == "succeeded", run.error_messages
    assert run.provider.kind == Provider.Kind.PRICE_SOURCE
    filled = Offer.objects.filter(source="skypilot")
    providers = set(filled.values_list("instance__provider__slug", flat=True))
    assert providers == {"aws", "azure", "gcp", "oci", "lambda", "nebius"}
    # Hand-built from stored copies: no commit date is known, so every price is undated.
    assert not filled.filter(observed_at__isnull=False).exists()
    oci = filled.get(
        instance__slug="bm-gpu-h100-8", region__code="eu-amsterdam-1", kind="on-demand"
    )
    assert oci.price_per_hour == Decimal("80")
    # Each price cites the file at the commit the recording was cut from, never `master`.
    assert oci.source_url == (
        "https://github.com/skypilot-org/skypilot-catalog/blob/"
        "0588751183820cf2dab5c8a89447e8aac9f73fd5/catalogs/v8/oci/vms.csv"
    )
    assert not filled.filter(source_url__contains="/master/").exists()
    # GCP: the host row (9.46006) plus the H100 x8 GPU row (33.60609) of the same zone.
    # us-east4: the host row (9.46006) plus the H100 x8 GPU row (78.37241) of the same zone.
    gcp = filled.get(instance__slug="a3-highgpu-8g", region__code="us-east4", kind="on-demand")
    assert gcp.price_per_hour == Decimal("87.832470")
    # us-central1's H100 x8 row, 33.60609 (8 x 4.200761, a DWS flex-start rate SkyPilot's
    # fetcher matched as on-demand), is another purchase model: left out, named on the run.
    assert not filled.filter(
        instance__slug="a3-highgpu-8g", region__code="us-central1", kind="on-demand"
    ).exists()
    assert any(
        row["sku"] == "a3-highgpu-8g"
        and row["reason"].startswith("gcp us-central1: the H100 x8 on-demand price 33.60609")
        for row in run.rejected_rows
    )
    # Spot: the lowest zone price of the region (us-east-1's seven zones, an Atlanta Local Zone
    # among them, run from 55.04 down to 10.1808).
    spot = Offer.objects.get(
        instance__slug="p5-48xlarge", region__code="us-east-1", kind="spot", source="skypilot"
    )
    assert spot.price_per_hour == Decimal("10.1808")
    # Nothing curated was overwritten: those readings are checks.
    assert not Offer.objects.filter(origin="catalog", source="skypilot").exists()
    assert PriceCheck.objects.filter(source="skypilot").exists()
    assert any("undated" in warning for warning in run.warnings)


@pytest.mark.usefixtures("catalog")
def test_a_second_replay_writes_nothing():
    replay_command("skypilot", "skypilot")
    first = ScrapeRun.objects.get(provider__slug="skypilot")
    replay_command("skypilot", "skypilot")
    again = ScrapeRun.objects.filter(provider__slug="skypilot").latest()
    assert (again.created, again.updated, again.retired) == (0, 0, 0)
    assert again.unchanged == first.created + first.unchanged
    assert again.replay_of == "tests/providers/recordings/skypilot"  # a replay, said as one


@pytest.mark.usefixtures("catalog")
def test_live_prices_are_dated_by_the_files_last_commit_and_read_at_it(settings):
    files = {
        "aws": _csv([AWS_HEADER, _aws_row("p6-b200.48xlarge", "63.296", "", "us-east-1", "a")])
    }
    commit = {"sha": SHA, "commit": {"committer": {"date": "2026-11-20T08:30:00Z"}}}
    transport, seen = _serve(files, commits={"aws": commit})
    run = _refresh(transport, settings)
    assert run.status == "succeeded", run.error_messages
    assert any(f"/{SHA}/catalogs/v9/aws/vms.csv" in url for url in seen)
    offer = Offer.objects.get(instance__slug="p6-b200-48xlarge", region__code="us-east-1")
    # No other source prices this type: the offer is SkyPilot's.
    assert offer.source == "skypilot"
    assert offer.observed_at == datetime(2026, 11, 20, 8, 30, tzinfo=UTC)
    assert offer.source_url.endswith(f"/blob/{SHA}/catalogs/v9/aws/vms.csv")
    assert offer.history.get().observed_at == offer.observed_at


@pytest.mark.usefixtures("catalog")
def test_without_the_commits_api_the_file_is_read_at_master_and_left_undated(settings):
    files = {
        "aws": _csv([AWS_HEADER, _aws_row("p6-b200.48xlarge", "63.296", "", "us-east-1", "a")])
    }
    transport, seen = _serve(files)
    run = _refresh(transport, settings)
    assert run.status == "succeeded"
    assert any("/master/catalogs/v9/aws/vms.csv" in url for url in seen)
    assert Offer.objects.get(source="skypilot").observed_at is None
    assert any("HTTP 403" in warning and "undated" in warning for warning in run.warnings)


@pytest.mark.usefixtures("catalog")
def test_a_provider_source_wins_and_the_disagreement_is_kept_as_a_check(settings):
    aws = Provider.objects.get(slug="aws")
    own = ScrapeBatch(offers=(_aws_offer("p6-b200.48xlarge", "60"),))
    # SkyPilot first: it fills the empty offer.
    files = {
        "aws": _csv([AWS_HEADER, _aws_row("p6-b200.48xlarge", "63.296", "", "us-east-1", "a")])
    }
    _refresh(_serve(files)[0], settings)
    filled = Offer.objects.get(region__code="us-east-1", instance__slug="p6-b200-48xlarge")
    assert (filled.source, filled.basis) == ("skypilot", "third-party")
    # The provider's own run (dated: read now) replaces the undated reading; the provider states it.
    writer.upsert_offers(writer.start_scrape_run(aws), own)
    offer = Offer.objects.get(region__code="us-east-1", instance__slug="p6-b200-48xlarge")
    assert (offer.source, offer.price_per_hour, offer.basis) == ("", Decimal("60"), "provider")
    # SkyPilot again: it keeps its reading as a check and never overwrites the provider's.
    run = _refresh(_serve(files)[0], settings)
    offer.refresh_from_db()
    assert (offer.source, offer.price_per_hour) == ("", Decimal("60"))
    check = PriceCheck.objects.get(offer=offer, source="skypilot")
    assert check.price_per_hour == Decimal("63.296")
    assert run.unchanged >= 1


@pytest.mark.usefixtures("catalog")
def test_only_its_own_runs_retire_its_offers(settings):
    two = _csv(
        [
            AWS_HEADER,
            _aws_row("p6-b200.48xlarge", "63.296", "", "us-east-1", "a"),
            _aws_row("p6-b200.48xlarge", "63.296", "", "ap-south-1", "b"),
        ]
    )
    _refresh(_serve({"aws": two})[0], settings)
    # AWS's own good run without those offers leaves them alone.
    aws = Provider.objects.get(slug="aws")
    unrelated = _aws_offer("p5.48xlarge", "55.04")
    for _ in range(3):
        writer.upsert_offers(writer.start_scrape_run(aws), ScrapeBatch(offers=(unrelated,)))
    assert Offer.objects.filter(source="skypilot", is_active=True).count() == 2
    # SkyPilot's own runs without one of them retire it after two runs.
    one = _csv(two.splitlines()[:2])
    settings.REFRESH_MIN_ROW_RATIO = Decimal("0")
    for _ in range(2):
        _refresh(_serve({"aws": one})[0], settings)
    gone = Offer.objects.get(source="skypilot", region__code="ap-south-1")
    assert not gone.is_active


@pytest.mark.usefixtures("catalog")
@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        ("InstanceType,Price\np5.48xlarge,55", 200, "lacks the column(s) AcceleratorName"),
        ("not a csv at all", 200, "lacks the column(s)"),
        (AWS_HEADER, 200, "has a header but no rows"),
        ("<html>Service unavailable</html>", 503, "HTTP 503"),
    ],
)
def test_a_broken_file_fails_the_run_and_changes_nothing(settings, body, status, expected):
    before = set(Offer.objects.values_list("pk", "price_per_hour", "is_active"))
    run = _refresh(_serve({"aws": body}, status=status)[0], settings)
    assert run.status == "failed"
    assert expected in " ".join(run.error_messages)
    assert set(Offer.objects.values_list("pk", "price_per_hour", "is_active")) == before


@pytest.mark.usefixtures("catalog")
def test_bad_and_empty_prices_are_no_prices_and_bad_ones_are_named(settings):
    rows = [
        AWS_HEADER,
        _aws_row("p6-b200.48xlarge", "abc", "", "us-east-1", "a"),
        _aws_row("p6-b200.48xlarge", "0.0", "", "us-west-2", "b"),
        _aws_row("p6-b200.48xlarge", "-3", "", "eu-west-1", "c"),
        _aws_row("p6-b200.48xlarge", "63.296", "0", "ap-south-1", "d"),
    ]
    run = _refresh(_serve({"aws": _csv(rows)})[0], settings)
    assert run.status == "succeeded"
    reasons = " ".join(row["reason"] for row in run.rejected_rows)
    assert "'abc' is not a number" in reasons
    assert "'-3' is not a usable amount" in reasons
    filled = Offer.objects.filter(source="skypilot")
    assert list(filled.values_list("region__code", "kind")) == [("ap-south-1", "on-demand")]


def test_gcp_adds_the_gpu_row_of_the_same_zone_and_skips_a_host_without_one():
    rows = [
        GCP_HEADER,
        "a3-highgpu-8g,208.0,1872.0,,,,us-central1,us-central1-a,9.46006,2.75246",
        "a3-highgpu-8g,208.0,1872.0,,,,us-east4,us-east4-a,10.0,3.0",
        "a4-highgpu-8g,224.0,3968.0,,,,us-central1,us-central1-b,0.0,0.0",
        ",,,H100,8,{},us-central1,us-central1-a,33.60609,22.8008",
        ",,,B200,8,{},us-central1,us-central1-b,64.44,",
    ]
    text = _csv(rows)
    cloud = skypilot.CLOUDS["gcp"]
    offers, rejected = skypilot.offers_of(
        cloud, list(csv.DictReader(io.StringIO(text))), skypilot.FileVersion("master", None)
    )
    got = {(o.sku, o.region, o.kind): o.price_per_hour for o in offers}
    assert got == {
        ("a3-highgpu-8g", "us-central1", "on-demand"): Decimal("43.06615"),
        ("a3-highgpu-8g", "us-central1", "spot"): Decimal("25.55326"),
    }
    # A4's host rows are 0.0 and its whole price sits in the B200 row; GCP sells A4 only as
    # spot, DWS or reserved, so an on-demand column is another purchase model's; no spot here.
    assert [(r.sku, r.reason.split(":")[0]) for r in rejected] == [
        ("a4-highgpu-8g", "gcp us-central1")
    ]
    assert "does not sell a4-highgpu-8g on demand" in rejected[0].reason


@pytest.mark.usefixtures("shipped")
def test_gcp_types_not_sold_on_demand_keep_spot_and_lose_their_on_demand_rows(settings):
    """The recording's real rows: a4-highgpu-8g on demand at 90.216 in us-central1 and 64.44 in
    us-east4, a3-highgpu-2g and a3-ultragpu-8g on demand too, none of which GCP sells so."""
    run = _refresh(_serve(SKYPILOT_FILES)[0], settings, clouds=("gcp",))
    assert run.status == "succeeded", run.error_messages
    left_out = {row["sku"] for row in run.rejected_rows if "on demand" in row["reason"]}
    assert {"a4-highgpu-8g", "a3-highgpu-2g", "a3-ultragpu-8g"} <= left_out
    gcp = Offer.objects.filter(instance__provider__slug="gcp", source="skypilot")
    for slug in ("a4-highgpu-8g", "a3-highgpu-2g", "a3-highgpu-4g", "a3-ultragpu-8g"):
        assert not gcp.filter(instance__slug=slug, kind="on-demand").exists(), slug
    assert gcp.filter(instance__slug="a4-highgpu-8g", kind="spot").exists()
    assert gcp.filter(instance__slug="a3-highgpu-8g", kind="on-demand").exists()


@pytest.mark.usefixtures("catalog")
def test_an_unknown_cloud_fails_with_the_known_ones(settings):
    run = _refresh(_serve({})[0], settings, clouds=("azure", "ibm"))
    assert run.status == "failed"
    assert "unknown cloud(s) ibm; known: aws" in run.error_messages[0]


@pytest.mark.usefixtures("catalog")
def test_a_price_source_has_no_page_and_is_no_provider_choice(client, settings):
    replay_command("skypilot", "skypilot")
    assert client.get("/providers/skypilot/").status_code == 404
    assert client.get("/api/instances?provider=skypilot").status_code == 400
    assert b"SkyPilot catalog" not in client.get("/").content


def test_the_recording_credits_each_file_and_is_undated():
    entries = json.loads((RECORDINGS / "skypilot" / "manifest.json").read_text())
    assert entries
    assert all(entry["recorded_at"] is None for entry in entries)
    for entry in entries:
        credit = entry["credit"]
        assert credit["repository"] == "skypilot-org/skypilot-catalog"
        assert len(credit["commit"]) == 40
        assert entry["url"].endswith(credit["path"])


def test_the_scraper_reads_every_cloud_it_knows_by_default():
    with pytest.raises(ScrapeError, match="unknown cloud"):
        skypilot.clouds_for(["nope"])
    assert [cloud.name for cloud in skypilot.clouds_for([])] == list(skypilot.CLOUDS)


@pytest.mark.usefixtures("catalog")
def test_the_lint_warns_where_the_price_source_disagrees(settings):
    from offerings.management.commands.lint_catalog import price_disagreements

    files = {
        "aws": _csv([AWS_HEADER, _aws_row("p6-b200.48xlarge", "63.296", "", "us-east-1", "a")])
    }
    aws = Provider.objects.get(slug="aws")
    own = _aws_offer("p6-b200.48xlarge", "60")
    writer.upsert_offers(writer.start_scrape_run(aws), ScrapeBatch(offers=(own,)))
    _refresh(_serve(files)[0], settings)
    (line,) = price_disagreements()  # 63.296 against 60: 5.5% apart
    assert "aws/p6-b200-48xlarge us-east-1 on-demand: skypilot reads 63.296" in line
    assert price_disagreements(tolerance=Decimal("0.06")) == []


@pytest.mark.usefixtures("catalog")
def test_one_unreadable_file_fails_the_whole_run_and_retires_nothing(settings):
    good = _csv([AWS_HEADER, _aws_row("p6-b200.48xlarge", "63.296", "", "us-east-1", "a")])
    settings.REFRESH_MIN_ROW_RATIO = Decimal("0")
    first = _refresh(_serve({"aws": good})[0], settings)
    assert first.status == "succeeded"

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.github.com":
            return httpx.Response(403, json={"message": "rate limited"})
        if "/gcp/" in request.url.path:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, text=good)

    for _ in range(3):
        run = _refresh(httpx.MockTransport(handler), settings, clouds=("aws", "gcp"))
        assert run.status == "failed"
        assert "raw.githubusercontent.com" in run.error_messages[0]
    offer = Offer.objects.get(source="skypilot")
    assert (offer.is_active, offer.missing_runs) == (True, 0)


@pytest.mark.usefixtures("catalog")
def test_rows_repeated_across_zones_become_one_offer_at_the_lowest_price(settings):
    rows = [
        AWS_HEADER,
        _aws_row("p6-b200.48xlarge", "113.9", "60", "us-east-1", "a"),
        _aws_row("p6-b200.48xlarge", "113.9", "41.5", "us-east-1", "b"),
        _aws_row("p6-b200.48xlarge", "113.9", "41.5", "us-east-1", "c"),
    ]
    run = _refresh(_serve({"aws": _csv(rows)})[0], settings)
    assert (run.status, run.created, run.rejected) == ("succeeded", 2, 0)
    spot = Offer.objects.get(source="skypilot", kind="spot")
    assert spot.price_per_hour == Decimal("41.5")


@pytest.mark.usefixtures("catalog")
def test_a_curators_price_replaces_a_price_sources(settings):
    files = {
        "aws": _csv([AWS_HEADER, _aws_row("p6-b200.48xlarge", "63.296", "", "us-east-1", "a")])
    }
    _refresh(_serve(files)[0], settings)
    offer = Offer.objects.get(source="skypilot")
    offer.price_per_hour = Decimal("61.5")
    writer.save_curator_offer(offer, ["price_per_hour"], is_new=False)
    offer.refresh_from_db()
    assert (offer.source, offer.origin, offer.price_per_hour) == ("", "curator", Decimal("61.5"))
    # SkyPilot's next run keeps its reading as a check and leaves the curator's price alone.
    _refresh(_serve(files)[0], settings)
    offer.refresh_from_db()
    assert offer.price_per_hour == Decimal("61.5")
    assert PriceCheck.objects.get(offer=offer).price_per_hour == Decimal("63.296")


def test_the_price_check_admin_lists_readings(admin_client, db):
    assert admin_client.get("/admin/offerings/pricecheck/").status_code == 200


# -- a bad file changes nothing ------------------------------------------------------------------

SKYPILOT_FILES = {
    path.name.removesuffix("-vms.csv"): path.read_text(encoding="utf-8")
    for path in (RECORDINGS / "skypilot").glob("*-vms.csv")
}


def _state() -> set:
    return set(
        Offer.objects.values_list("pk", "price_per_hour", "is_active", "missing_runs", "source")
    )


@pytest.mark.usefixtures("shipped")
def test_a_file_cut_inside_its_last_row_fails_and_changes_no_price(settings):
    """Paperspace's file ends `V100-32Gx2,...,,4.60`: cut to `,,4.` it parsed as 4.00."""
    whole = SKYPILOT_FILES["paperspace"]
    assert whole.endswith(",,4.60\n")
    first = _refresh(_serve({"paperspace": whole})[0], settings, clouds=("paperspace",))
    assert first.status == "succeeded", first.error_messages
    before = _state()
    cut = whole[: -len("60\n")]
    run = _refresh(_serve({"paperspace": cut})[0], settings, clouds=("paperspace",))
    assert run.status == "failed"
    assert "ends inside a row" in run.error_messages[0]
    assert "cut short" in run.error_messages[0]
    assert _state() == before
    history = PriceObservation.objects.count()
    again = _refresh(_serve({"paperspace": cut})[0], settings, clouds=("paperspace",))
    assert again.status == "failed"
    assert (again.created, again.updated, again.retired) == (0, 0, 0)
    assert _state() == before
    assert PriceObservation.objects.count() == history
    assert not Offer.objects.filter(
        instance__provider__slug="paperspace", price_per_hour=Decimal("4")
    ).exists()


@pytest.mark.usefixtures("shipped")
@pytest.mark.parametrize(
    ("row", "cells"),
    [
        ("V100-32Gx2,V100-32GB,2.0,16,64.0,V100-32GB,East Coast (NY2),4.60", 8),  # one missing
        ("V100-32Gx2,V100-32GB,2.0,16,64.0,V100-32GB,East Coast (NY2),,4.60,9", 10),
    ],
)
def test_a_row_with_missing_or_surplus_cells_fails_the_run(settings, row, cells):
    lines = SKYPILOT_FILES["paperspace"].splitlines()
    body = _csv([*lines[:-1], row])
    run = _refresh(_serve({"paperspace": body})[0], settings, clouds=("paperspace",))
    assert run.status == "failed"
    assert f"has {cells} cell(s) where the header has 9" in run.error_messages[0]


@pytest.mark.usefixtures("shipped")
def test_one_file_cut_to_60_percent_is_rejected_though_the_total_passes_and_retires_nothing(
    settings,
):
    """All clouds' rows together pass 80% when only aws-vms.csv is cut (the guard counted them
    together); each file is held to its own last count."""
    clouds = tuple(sorted(SKYPILOT_FILES))
    first = _refresh(_serve(SKYPILOT_FILES)[0], settings, clouds=clouds)
    assert first.status == "succeeded"
    assert first.parts["catalogs/v9/aws/vms.csv"] > 0
    before = _state()
    lines = SKYPILOT_FILES["aws"].splitlines()
    cut = dict(SKYPILOT_FILES, aws=_csv(lines[: int(len(lines) * 0.6)]))
    total_now = sum(len(body.splitlines()) - 1 for body in cut.values())
    assert total_now >= 0.8 * sum(first.parts.values())  # the old guard would have let it by
    history = PriceObservation.objects.count()
    for _ in range(2):
        run = _refresh(_serve(cut)[0], settings, clouds=clouds)
        assert run.status == "rejected"
        assert "catalogs/v9/aws/vms.csv" in run.error_messages[0]
        assert (run.created, run.updated, run.retired) == (0, 0, 0)
        assert _state() == before
        assert PriceObservation.objects.count() == history


# -- known defects stop at the reader ------------------------------------------------------------


@pytest.mark.usefixtures("shipped")
def test_spot_prices_at_or_above_on_demand_are_left_out_and_named_on_the_run(settings):
    """The recording's real rows: p5.48xlarge in ca-central-1 has spot 63.296 and on-demand
    63.296; Azure's ND96isr_H100_v5 in eastus has spot 98.32 and on-demand 98.32."""
    clouds = tuple(sorted(SKYPILOT_FILES))
    run = _refresh(_serve(SKYPILOT_FILES)[0], settings, clouds=clouds)
    assert run.status == "succeeded"
    reasons = [row["reason"] for row in run.rejected_rows]
    named = {(row["sku"], row["reason"].partition(":")[0]) for row in run.rejected_rows}
    assert ("p5.48xlarge", "ca-central-1") in named
    assert ("Standard_ND96isr_H100_v5", "eastus") in named
    assert any(
        r.startswith("ca-central-1: spot 63.296") and "on-demand 63.296" in r for r in reasons
    )
    # AWS states spot to four decimals: on-demand 21.17764 cut to 21.1776 is on-demand still.
    assert ("g5.48xlarge", "ap-southeast-2") in named
    assert any(r.startswith("ap-southeast-2: spot 21.1776") for r in reasons)
    offers = Offer.objects.filter(is_active=True)
    on_demand = {
        (o.instance_id, o.region_id): o.price_per_hour for o in offers.filter(kind="on-demand")
    }
    # As the API shows them, rounded to four decimals, no spot price reaches on-demand.
    four = Decimal("0.0001")
    dear = [
        (o.instance.slug, o.region.code, o.price_per_hour)
        for o in offers.filter(kind="spot").select_related("instance", "region")
        if (o.instance_id, o.region_id) in on_demand
        and o.price_per_hour.quantize(four)
        >= on_demand[(o.instance_id, o.region_id)].quantize(four)
    ]
    assert dear == []


def test_the_spot_check_keeps_cheaper_spot_and_spot_without_on_demand():
    from providers.base import spot_at_or_above_on_demand

    def offer(kind: str, price: str, region: str = "r1") -> ScrapedOffer:
        return ScrapedOffer(
            sku="x.8",
            instance_slug="x-8",
            region=region,
            kind=kind,
            price_per_hour=Decimal(price),
            currency="USD",
            source_url="https://example.com/prices",
        )

    kept, rejected = spot_at_or_above_on_demand(
        [offer("on-demand", "10"), offer("spot", "4"), offer("spot", "12", "r2")]
    )
    assert [(o.kind, o.region) for o in kept] == [
        ("on-demand", "r1"),
        ("spot", "r1"),
        ("spot", "r2"),
    ]
    assert rejected == []
    # Under a unit, four-decimal rounding is more than 0.01%: 0.5263 is on-demand 0.52637 cut short.
    kept, rejected = spot_at_or_above_on_demand(
        [offer("on-demand", "0.52637"), offer("spot", "0.5263"), offer("spot", "0.4", "r2")]
    )
    assert [(o.kind, o.region) for o in kept] == [("on-demand", "r1"), ("spot", "r2")]
    assert len(rejected) == 1
    kept, rejected = spot_at_or_above_on_demand([offer("on-demand", "10"), offer("spot", "10")])
    assert [o.kind for o in kept] == ["on-demand"]
    (row,) = rejected
    assert (row.sku, row.instance_slug, row.kind) == ("x.8", None, "")  # protects no offer


@pytest.mark.usefixtures("shipped")
def test_a_region_independent_dated_price_heads_the_row_and_older_readings_say_so(client, settings):
    """Lambda's page (2026-09-20) gives one price per type for all its regions; the fixture
    records it for us-east-1. SkyPilot's undated readings of the other regions show beside it,
    marked "older source", and never head the row."""
    from offerings.models import InstanceType

    clouds = tuple(sorted(SKYPILOT_FILES))
    assert _refresh(_serve(SKYPILOT_FILES)[0], settings, clouds=clouds).status == "succeeded"
    row = InstanceType.objects.select_related("best_offer__region").get(
        provider__slug="lambda", slug="gpu-8x-h100-sxm5"
    )
    assert row.best_offer.region.code == "us-east-1"
    assert row.best_offer.observed_at is not None
    assert row.best_offer.price_per_hour == Decimal("31.92")
    others = row.offers.filter(is_active=True, kind="on-demand").exclude(pk=row.best_offer_id)
    assert others.exists()
    assert not others.filter(observed_at__isnull=False).exists()
    body = client.get("/instances/lambda/gpu-8x-h100-sxm5/").content.decode()
    assert body.count("older source</small>") == others.count()


@pytest.mark.usefixtures("catalog")
def test_a_retired_catalog_price_is_filled_by_the_price_source_again(settings):
    """A fixture price taken out (the v7 p5 figure) is retired by load_catalog; SkyPilot's
    reading of that offer must then fill it, not be kept as a check against a retired row."""
    offer = Offer.objects.get(
        instance__slug="p5en-48xlarge", region__code="us-east-1", kind="on-demand"
    )
    assert (offer.origin, offer.source) == ("catalog", "")
    Offer.objects.filter(pk=offer.pk).update(is_active=False)
    body = _csv([AWS_HEADER, _aws_row("p5en.48xlarge", "63.296", "", "us-east-1", "a")])
    run = _refresh(_serve({"aws": body})[0], settings)
    assert run.status == "succeeded", run.error_messages
    offer.refresh_from_db()
    assert (offer.is_active, offer.source, offer.price_per_hour) == (
        True,
        "skypilot",
        Decimal("63.296"),
    )
    assert not PriceCheck.objects.filter(offer=offer).exists()


@pytest.mark.usefixtures("catalog")
def test_the_row_count_guard_compares_a_replay_with_replays_and_a_live_run_with_live_runs():
    from offerings.writer.runs import last_good_run

    provider = Provider.objects.get_or_create(
        slug="skypilot",
        defaults={"name": "SkyPilot", "website": "https://example.com", "kind": "price-source"},
    )[0]
    now = datetime(2026, 12, 1, tzinfo=UTC)
    live = ScrapeRun.objects.create(provider=provider, started_at=now, status="succeeded")
    replay = ScrapeRun.objects.create(
        provider=provider, started_at=now, status="succeeded", replay_of="recordings/skypilot"
    )
    assert last_good_run(provider, replay_of="") == live
    assert last_good_run(provider, replay_of="recordings/skypilot") == replay
    assert last_good_run(provider, replay_of="elsewhere") is None
