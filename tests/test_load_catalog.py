"""load_catalog: inserts what is missing, updates what changed, spares curators' edits."""

from datetime import UTC, datetime
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings.models import (
    ExchangeRate,
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    Offer,
    PriceObservation,
    Provider,
    Region,
)
from tests.catalog_toml import ACME, GPU_H100, GPU_L40S, RATES

GPUS = GPU_H100 + GPU_L40S

PROVIDER = (
    ACME
    + """
[[regions]]
code = "cn-beijing"
name = "Beijing"
geo = "asia"

[[instances]]
name = "hgx.H100.8x"
gpu = "h100-sxm"
gpu_count = 8
vcpus = 192
ram_gib = 2048
source_url = "https://acme.example/docs/hgx"
verified_at = 2026-11-01
[instances.nvlink]
basis = "provider"
technology = "nvlink"
generation = 4
topology = "nvswitch"
domain_size = 8
bandwidth_gbytes_per_s = 900
source_url = "https://acme.example/docs/hgx"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
technology = "infiniband"
port_speed_gbits_per_s = 400
nics = 8
bandwidth_gbits_per_s = 3200
rdma = true
gpudirect_rdma = true
source_url = "https://acme.example/docs/network"
verified_at = 2026-11-01
[[instances.prices]]
region = "cn-beijing"
kind = "on-demand"
price_per_hour = "{price}"
currency = "CNY"
observed_at = {observed}
source_url = "https://acme.example/pricing"
basis = "provider"
[[instances.prices]]
region = "cn-beijing"
kind = "reserved"
term_months = 12
term_total = "876000"
currency = "CNY"
observed_at = 2026-11-01T00:00:00Z
source_url = "https://acme.example/pricing"
basis = "provider"

[[instances]]
name = "pcie.L40S.4x"
gpu = "l40s"
gpu_count = 4
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
[instances.nvlink]
basis = "provider"
technology = "none"
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
technology = "unknown"
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
"""
)


def write_fixtures(root: Path, price="160", observed="2026-11-01T00:00:00Z", provider=None):
    (root / "providers").mkdir(parents=True, exist_ok=True)
    (root / "gpus.toml").write_text(GPUS)
    (root / "exchange_rates.toml").write_text(RATES)
    text = provider or PROVIDER.replace("{price}", price).replace("{observed}", observed)
    (root / "providers" / "acme.toml").write_text(text)
    return root


def load(root: Path) -> str:
    out = StringIO()
    call_command("load_catalog", fixtures=root, stdout=out)
    return out.getvalue()


def snapshot():
    """Every loaded row's full state, to prove a second load changes nothing."""
    models = [ExchangeRate, GpuModel, Provider, Region, InstanceType, GpuLink, Fabric, Offer]
    state = {m.__name__: sorted(map(str, m.objects.values_list())) for m in models}
    state["history"] = sorted(map(str, PriceObservation.objects.values_list()))
    return state


@pytest.fixture
def fixtures_dir(tmp_path):
    return write_fixtures(tmp_path)


def test_loading_creates_the_catalog_with_its_interconnects(db, fixtures_dir):
    load(fixtures_dir)
    hgx = InstanceType.objects.get(provider__slug="acme", slug="hgx-h100-8x")
    assert hgx.name == "hgx.H100.8x"
    assert hgx.gpu_link.topology == "nvswitch"
    assert hgx.fabric.bandwidth_gbits_per_s == 3200
    pcie = InstanceType.objects.get(slug="pcie-l40s-4x")
    assert pcie.gpu_link.technology == "none"
    assert pcie.fabric.technology == "unknown"
    assert pcie.fabric.bandwidth_gbits_per_s is None  # unknown stays unknown


def test_prices_keep_their_currency_and_convert_to_usd_per_gpu_hour(db, fixtures_dir):
    load(fixtures_dir)
    on_demand = Offer.objects.get(kind="on-demand")
    assert on_demand.currency == "CNY"
    assert on_demand.price_per_hour == Decimal("160")
    # 160 CNY x 0.14 USD/CNY / 8 GPUs = 2.80 USD per GPU-hour
    assert on_demand.price_per_gpu_hour_usd == Decimal("2.8")
    assert str(on_demand.exchange_rate_date) == "2026-11-27"


def test_a_reserved_term_total_becomes_hourly_over_730_hours_a_month(db, fixtures_dir):
    load(fixtures_dir)
    reserved = Offer.objects.get(kind="reserved")
    # 876,000 CNY / (730 h x 12 months) = 100 CNY per hour
    assert reserved.price_per_hour == Decimal("100")
    assert reserved.term_months == 12


def test_a_second_load_changes_nothing(db, fixtures_dir):
    load(fixtures_dir)
    before = snapshot()
    output = load(fixtures_dir)
    assert "no changes" in output
    assert snapshot() == before


def test_a_changed_fixture_entry_updates_only_that_row(db, fixtures_dir):
    load(fixtures_dir)
    pcie_updated = InstanceType.objects.get(slug="pcie-l40s-4x").updated_at
    text = (fixtures_dir / "providers" / "acme.toml").read_text()
    (fixtures_dir / "providers" / "acme.toml").write_text(
        text.replace("vcpus = 192", "vcpus = 208")
    )
    load(fixtures_dir)
    assert InstanceType.objects.get(slug="hgx-h100-8x").vcpus == 208
    assert InstanceType.objects.get(slug="pcie-l40s-4x").updated_at == pcie_updated


def test_a_locked_field_survives_a_changed_fixture(db, fixtures_dir):
    load(fixtures_dir)
    hgx = InstanceType.objects.get(slug="hgx-h100-8x")
    hgx.vcpus = 190
    hgx.locked_fields = ["vcpus"]
    hgx.save()
    text = (fixtures_dir / "providers" / "acme.toml").read_text()
    text = text.replace("vcpus = 192", "vcpus = 208").replace("ram_gib = 2048", "ram_gib = 1900")
    (fixtures_dir / "providers" / "acme.toml").write_text(text)
    load(fixtures_dir)
    hgx.refresh_from_db()
    assert hgx.vcpus == 190  # the curator's value
    assert hgx.ram_gib == Decimal("1900")  # unlocked fields still follow the fixture


def test_an_older_fixture_price_never_replaces_a_newer_observation(db, fixtures_dir):
    load(fixtures_dir)
    offer = Offer.objects.get(kind="on-demand")
    offer.price_per_hour = Decimal("150")
    offer.observed_at = datetime(2026, 11, 20, tzinfo=UTC)
    offer.save()
    write_fixtures(fixtures_dir, price="170", observed="2026-11-10T00:00:00Z")
    load(fixtures_dir)
    offer.refresh_from_db()
    assert offer.price_per_hour == Decimal("150")
    assert offer.history.count() == 1


def test_a_newer_changed_price_appends_one_history_row(db, fixtures_dir):
    load(fixtures_dir)
    write_fixtures(fixtures_dir, price="150", observed="2026-11-20T00:00:00Z")
    load(fixtures_dir)
    offer = Offer.objects.get(kind="on-demand")
    assert offer.price_per_hour == Decimal("150")
    assert list(offer.history.values_list("price_per_hour", flat=True)) == [
        Decimal("150"),
        Decimal("160"),
    ]


def test_a_newer_unchanged_price_moves_the_date_without_history(db, fixtures_dir):
    load(fixtures_dir)
    write_fixtures(fixtures_dir, price="160", observed="2026-11-20T00:00:00Z")
    load(fixtures_dir)
    offer = Offer.objects.get(kind="on-demand")
    assert offer.observed_at == datetime(2026, 11, 20, tzinfo=UTC)
    assert offer.history.count() == 1


@pytest.mark.parametrize(
    "broken",
    [
        ("gpu_count = 8", "gpu_count = 0", "instances.0.gpu_count"),
        ('currency = "CNY"\nobserved', 'currency = "yuan"\nobserved', "currency"),
        ('technology = "none"', 'technology = "none"\nbandwidth_gbytes_per_s = 50', "none"),
        ('technology = "infiniband"', 'technology = "tcpx"', "not RDMA"),
        (
            'region = "cn-beijing"\nkind = "on-demand"',
            'region = "mars"\nkind = "on-demand"',
            "mars",
        ),
        ("verified_at = 2026-11-01\n[instances.fabric]", "[instances.fabric]", "verified_at"),
    ],
    ids=["zero-gpus", "bad-currency", "none-with-bandwidth", "tcpx-rdma", "bad-region", "no-date"],
)
def test_an_invalid_fixture_names_the_file_and_writes_nothing(db, fixtures_dir, broken):
    before, after, message = broken
    text = PROVIDER.replace("{price}", "160").replace("{observed}", "2026-11-01T00:00:00Z")
    assert before in text
    write_fixtures(fixtures_dir, provider=text.replace(before, after, 1))
    with pytest.raises(CommandError, match=r"acme\.toml") as error:
        load(fixtures_dir)
    assert message in str(error.value)
    assert not InstanceType.objects.exists()


def test_an_unknown_gpu_slug_rolls_back_the_whole_load(db, fixtures_dir):
    text = PROVIDER.replace("{price}", "1").replace("{observed}", "2026-11-01T00:00:00Z")
    write_fixtures(fixtures_dir, provider=text.replace('gpu = "l40s"', 'gpu = "l41s"'))
    with pytest.raises(CommandError, match="l41s"):
        load(fixtures_dir)
    assert not Provider.objects.exists()
    assert not GpuModel.objects.exists()


def test_a_price_in_a_currency_without_a_rate_is_refused(db, fixtures_dir):
    (fixtures_dir / "exchange_rates.toml").write_text("")
    with pytest.raises(CommandError, match="no reference exchange rate for CNY"):
        load(fixtures_dir)
    assert not Offer.objects.exists()


def test_the_shipped_catalog_loads_and_a_second_load_changes_nothing(db):
    shipped = Path(settings.BASE_DIR) / "fixtures"
    assert any((shipped / "providers").glob("*.toml")), "fixtures/providers/ is empty"
    load(shipped)
    assert InstanceType.objects.count() >= 5
    before = snapshot()
    assert "no changes" in load(shipped)
    assert snapshot() == before


def test_load_catalog_and_a_replay_in_any_order_change_nothing_the_second_time(db):
    """After `make run` (load, then every replay), `load_catalog` moved GCP a2-megagpu-16g's
    undated price 55.739504 -> 55.739510 and the GCP replay moved it back, each with a history
    row: two undated readings from two writers of the same rank undid each other."""
    from offerings.models import Offer, PriceObservation
    from tests.providers.conftest import replay_command

    shipped = Path(settings.BASE_DIR) / "fixtures"
    load(shipped)
    replay_command("gcp", "gcp")
    prices = set(Offer.objects.values_list("pk", "price_per_hour", "source_url", "observed_at"))
    history = PriceObservation.objects.count()
    for _ in range(2):
        assert "no changes" in load(shipped)
        replay_command("gcp", "gcp")
    assert set(Offer.objects.values_list("pk", "price_per_hour", "source_url", "observed_at")) == (
        prices
    )
    assert PriceObservation.objects.count() == history


def test_a_price_taken_out_of_its_fixture_is_retired_and_keeps_its_history(db, fixtures_dir):
    """AWS's p5.48xlarge price was SkyPilot's v7 figure from before the June 2025 cut; taken out
    of the fixture, it must stop showing, not linger as the catalog's price."""
    load(fixtures_dir)
    reserved = Offer.objects.get(kind="reserved", origin="catalog")
    assert reserved.is_active
    history = PriceObservation.objects.filter(offer=reserved).count()
    path = fixtures_dir / "providers" / "acme.toml"
    block = path.read_text().split("[[instances.prices]]")[2].split("\n\n")[0]
    assert 'kind = "reserved"' in block
    path.write_text(path.read_text().replace("[[instances.prices]]" + block, "", 1))
    out = load(fixtures_dir)
    reserved.refresh_from_db()
    assert reserved.is_active is False
    assert "retired    1" in out
    assert PriceObservation.objects.filter(offer=reserved).count() == history
    assert Offer.objects.filter(kind="on-demand", origin="catalog", is_active=True).exists()
    assert "no changes" in load(fixtures_dir)
    # Put back into its fixture, the price comes back.
    write_fixtures(fixtures_dir)
    load(fixtures_dir)
    reserved.refresh_from_db()
    assert reserved.is_active is True
    assert "no changes" in load(fixtures_dir)


def test_the_migration_retires_prices_replayed_from_hand_built_recordings(db):
    """Dated scraper prices (live runs), SkyPilot's and the catalog's stay; an undated price of a
    provider's own scraper could only come from replaying a hand-built recording."""
    from importlib import import_module

    from django.apps import apps

    from tests.providers.conftest import load_scraped_providers, replay_command

    load_scraped_providers()
    replay_command("aws", "aws")
    replayed = Offer.objects.filter(origin="scraper", source="", is_active=True)
    assert replayed.exists()
    assert not replayed.filter(observed_at__isnull=False).exists()
    catalog = set(Offer.objects.filter(origin="catalog", is_active=True).values_list("pk"))
    dated = replayed.first()
    Offer.objects.filter(pk=dated.pk).update(observed_at=datetime(2026, 11, 1, tzinfo=UTC))
    module = import_module("offerings.migrations.0018_retire_replayed_hand_built_prices")
    module.retire_replayed_hand_built_prices(apps, None)
    still = Offer.objects.filter(origin="scraper", source="", is_active=True)
    assert list(still.values_list("pk", flat=True)) == [dated.pk]
    assert set(Offer.objects.filter(origin="catalog", is_active=True).values_list("pk")) == catalog
