"""The basis of every interconnect fact, from the fixtures through the rules to the API and filters;
and prices whose source shows no date."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings.models import GpuLink, InstanceType, Offer, PriceObservation
from tests.catalog_toml import ACME, GPU_H100, GPU_L40S, RATES

PROVIDER = (
    ACME
    + """
[[regions]]
code = "cn-beijing"
name = "Beijing"
geo = "asia"

[[instances]]
# The provider names the GPUs and their count, nothing about the link: the board fills it.
name = "hgx.H100.8x"
gpu = "h100-sxm"
gpu_count = 8
source_url = "https://acme.example/docs/hgx"
verified_at = 2026-11-01
[instances.nvlink]
technology = "unknown"
topology = "unknown"
source_url = "https://acme.example/docs/hgx"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
basis_of = { gpudirect_rdma = "third-party" }
technology = "infiniband"
port_speed_gbits_per_s = 400
nics = 8
bandwidth_gbits_per_s = 3200
gpudirect_rdma = true
multi_node = true
source_url = "https://acme.example/docs/network"
verified_at = 2026-11-01
[[instances.prices]]
region = "cn-beijing"
kind = "on-demand"
price_per_hour = "{price}"
currency = "CNY"
{observed}
source_url = "https://acme.example/pricing"
basis = "provider"

[[instances]]
name = "pcie.L40S.4x"
gpu = "l40s"
gpu_count = 4
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
[instances.nvlink]
basis = "third-party"
technology = "none"
source_url = "https://reseller.example/l40s"
verified_at = 2026-11-01
[instances.fabric]
basis = "provider"
technology = "ethernet"
network_gbits_per_s = 100
source_url = "https://acme.example/docs/pcie"
verified_at = 2026-11-01
"""
)


def write(root: Path, price: str = "160", observed: str = "", provider: str | None = None):
    (root / "providers").mkdir(parents=True, exist_ok=True)
    (root / "gpus.toml").write_text(GPU_H100 + GPU_L40S)
    (root / "exchange_rates.toml").write_text(RATES)
    text = provider or PROVIDER.replace("{price}", price).replace("{observed}", observed)
    (root / "providers" / "acme.toml").write_text(text)
    return root


def load(root: Path) -> str:
    out = StringIO()
    call_command("load_catalog", fixtures=root, stdout=out)
    return out.getvalue()


@pytest.fixture
def loaded(db, tmp_path):
    load(write(tmp_path))
    return tmp_path


def test_an_eight_gpu_hgx_board_gets_its_switch_from_the_platform_rule(loaded):
    link = GpuLink.objects.get(instance__slug="hgx-h100-8x")
    assert (link.technology, link.topology, link.domain_size) == ("nvlink", "nvswitch", 8)
    assert link.bandwidth_gbytes_per_s == 900
    assert set(link.basis.values()) == {"platform"}
    assert link.platform_rules["topology"] == "hgx-h100-8"


def test_a_fabric_keeps_its_stated_bases_and_rdma_follows_from_the_technology(loaded):
    fabric = InstanceType.objects.get(slug="hgx-h100-8x").fabric
    assert fabric.rdma is True
    assert fabric.basis["rdma"] == "provider"
    assert fabric.basis["gpudirect_rdma"] == "third-party"
    ethernet = InstanceType.objects.get(slug="pcie-l40s-4x").fabric
    assert (ethernet.rdma, ethernet.gpudirect_rdma) == (False, False)


def test_a_curators_locked_fact_keeps_its_value_and_basis_against_the_rules(loaded):
    link = GpuLink.objects.get(instance__slug="hgx-h100-8x")
    link.topology, link.basis["topology"] = "hybrid-cube-mesh", "provider"
    link.locked_fields = ["topology"]
    link.save()
    GpuLink.objects.filter(pk=link.pk).update(fixture_digest="changed")  # force a reload
    load(loaded)
    link.refresh_from_db()
    assert link.topology == "hybrid-cube-mesh"
    assert link.basis["topology"] == "provider"
    assert link.basis["domain_size"] == "platform"


def test_the_api_reports_the_basis_of_each_known_fact_and_the_gpu_link(loaded, client):
    results = {r["slug"]: r for r in client.get("/api/instances").json()["results"]}
    hgx, pcie = results["hgx-h100-8x"], results["pcie-l40s-4x"]
    assert hgx["nvlink"]["basis"]["topology"] == "platform"
    assert hgx["gpu_link"] == "nvlink"
    assert hgx["gpu_link_basis"] == "platform"
    assert hgx["fabric"]["basis"] == {
        "technology": "provider",
        "bandwidth_gbits_per_s": "provider",
        "nics": "provider",
        "gpudirect_rdma": "third-party",
        "multi_node": "provider",
    }
    assert "max_nodes" not in hgx["fabric"]["basis"]  # unknown: no key
    assert pcie["nvlink"] is None  # verified none, kept for old clients...
    assert (pcie["gpu_link"], pcie["gpu_link_basis"]) == ("none", "third-party")  # ...said here


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("nvlink=true", {"hgx-h100-8x"}),
        ("nvlink=true&basis=provider", set()),
        ("nvlink=true&basis=platform", {"hgx-h100-8x"}),
        ("nvlink=false", {"pcie-l40s-4x"}),
        ("nvlink=false&basis=provider", set()),
        ("nvlink=false&basis=provider&basis=third-party", {"pcie-l40s-4x"}),
        ("gpudirect_rdma=true&basis=provider", set()),
        ("gpudirect_rdma=true&basis=third-party", {"hgx-h100-8x"}),
        ("fabric=infiniband&basis=provider", {"hgx-h100-8x"}),
        ("basis=provider", {"hgx-h100-8x", "pcie-l40s-4x"}),  # no interconnect filter given
    ],
)
def test_the_basis_filter_counts_only_facts_of_the_chosen_bases(loaded, client, query, expected):
    response = client.get(f"/api/instances?{query}")
    assert response.status_code == 200
    assert {r["slug"] for r in response.json()["results"]} == expected


def test_an_unknown_basis_is_a_field_error(loaded, client):
    response = client.get("/api/instances?basis=rumour")
    assert response.status_code == 400
    assert "basis" in response.json()["fields"]


def test_a_price_whose_source_shows_no_date_is_stored_undated_not_stale(loaded, client):
    offer = Offer.objects.get(instance__slug="hgx-h100-8x")
    assert offer.observed_at is None
    assert not offer.is_stale()  # "date unknown", which is not "known to be old"
    assert PriceObservation.objects.get(offer=offer).observed_at is None
    price = client.get("/api/instances?provider=acme&gpu=h100-sxm").json()["results"][0]["price"]
    assert price["observed_at"] is None
    assert price["is_stale"] is False
    assert load(loaded).endswith("no changes.\n")  # a second load changes nothing


def test_an_undated_price_never_replaces_a_dated_one(db, tmp_path):
    load(write(tmp_path, observed="observed_at = 2026-11-01T00:00:00Z"))
    load(write(tmp_path, price="150"))
    offer = Offer.objects.get(instance__slug="hgx-h100-8x")
    assert offer.price_per_hour == 160
    assert offer.observed_at is not None


def test_a_dated_price_replaces_an_undated_one(loaded):
    load(write(loaded, price="150", observed="observed_at = 2026-11-02T00:00:00Z"))
    offer = Offer.objects.get(instance__slug="hgx-h100-8x")
    assert (offer.price_per_hour, offer.observed_at.day) == (150, 2)
    assert PriceObservation.objects.filter(offer=offer).count() == 2


def test_a_basis_map_naming_no_field_or_no_basis_is_refused(loaded):
    link = GpuLink.objects.get(instance__slug="hgx-h100-8x")
    link.basis = {"topology": "rumour"}
    with pytest.raises(ValidationError, match="a basis is one of"):
        link.full_clean()
    link.basis = {"colour": "provider"}
    with pytest.raises(ValidationError, match="No such field: colour"):
        link.full_clean()


def test_the_lint_fails_on_a_fact_without_a_basis_and_on_a_contradicted_rule(tmp_path, capsys):
    text = PROVIDER.replace("{price}", "160").replace("{observed}", "")
    text = text.replace(
        'technology = "unknown"\ntopology = "unknown"',
        'technology = "nvlink"\ntopology = "bridge"',
    )
    write(tmp_path, provider=text)
    with pytest.raises(CommandError):
        call_command("lint_catalog", fixtures=tmp_path)
    err = capsys.readouterr().err
    assert "[basis] nvlink states technology, topology without a basis" in err
    assert (
        "[platform] topology = 'bridge' contradicts the NVIDIA HGX H100 8-GPU specification" in err
    )


def test_the_lint_coverage_table_counts_facts_by_basis(tmp_path, capsys):
    call_command("lint_catalog", fixtures=write(tmp_path), coverage=True)
    out = capsys.readouterr().out
    nvlink = next(line for line in out.splitlines() if line.startswith("NVLink technology"))
    assert "2/2" in nvlink  # one from the platform rule, one from a third party
    assert nvlink.split()[-3:] == ["0", "1", "1"]
    assert "acme" in out


def test_the_openapi_document_describes_basis_gpu_link_and_undated_prices(client):
    document = client.get("/api/openapi.json").json()
    listing = document["paths"]["/api/instances"]["get"]
    page = listing["responses"]["200"]["content"]["application/json"]["schema"]
    instance = page["properties"]["results"]["items"]["properties"]
    assert instance["nvlink"]["properties"]["basis"]["properties"]["topology"]["enum"] == [
        "provider",
        "platform",
        "third-party",
    ]
    assert "basis" in instance["fabric"]["properties"]
    assert instance["gpu_link"]["enum"] == ["none", "nvlink", "infinity-fabric", "unknown"]
    assert instance["gpu_link_basis"]["nullable"] is True
    assert instance["prices"]["items"]["properties"]["observed_at"]["nullable"] is True
    assert "capacity-block" in instance["prices"]["items"]["properties"]["kind"]["enum"]
    parameters = {p["name"] for p in listing["parameters"]}
    assert "basis" in parameters
