"""Platform rules: what a vendor's board forces, with the weakest basis of the inputs."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from offerings import platform
from offerings.platform import Board, derive_link, weakest


def test_the_weakest_basis_of_several_inputs_is_the_least_direct_one():
    assert weakest("provider", "platform") == "platform"
    assert weakest("platform", "third-party", "provider") == "third-party"
    assert weakest("provider") == "provider"
    assert weakest("provider", None) is None


def test_eight_h100_sxm_gpus_are_an_hgx_board_with_one_switched_eight_gpu_domain():
    derived = derive_link(Board("h100-sxm", 8), {}, {})
    assert derived.values == {
        "technology": "nvlink",
        "generation": 4,
        "topology": "nvswitch",
        "domain_size": 8,
        "bandwidth_gbytes_per_s": 900,
    }
    assert set(derived.basis.values()) == {"platform"}
    assert derived.rules["topology"] == "hgx-h100-8"
    assert derived.conflicts == []


def test_a_rule_never_overrides_a_stated_fact_and_reports_a_conflict():
    stated = {"technology": "nvlink", "topology": "bridge", "domain_size": 2}
    derived = derive_link(Board("h100-sxm", 8), stated, dict.fromkeys(stated, "provider"))
    assert derived.values["topology"] == "bridge"
    assert derived.basis["topology"] == "provider"
    assert derived.values["bandwidth_gbytes_per_s"] == 900  # unstated: filled
    assert any("topology = 'bridge' contradicts" in c for _, c in derived.conflicts)
    assert any("domain_size = 2" in c for _, c in derived.conflicts)
    assert [name for name, _ in derived.conflicts] == ["topology", "domain_size"]


def test_a_platform_rule_on_a_gpu_only_a_third_party_names_is_third_party():
    derived = derive_link(Board("h100-sxm", 8), {}, {}, gpu_basis="third-party")
    assert set(derived.basis.values()) == {"third-party"}


def test_the_per_model_bandwidth_needs_a_known_switched_link_and_takes_its_basis():
    assert derive_link(Board("gb200", 4), {}, {}).values["bandwidth_gbytes_per_s"] is None
    stated = {"technology": "nvlink"}
    derived = derive_link(Board("gb200", 4), stated, {"technology": "third-party"})
    assert derived.values["bandwidth_gbytes_per_s"] is None  # no switch known: no figure
    stated = {"technology": "nvlink", "topology": "nvswitch"}
    derived = derive_link(
        Board("gb200", 4), stated, {"technology": "provider", "topology": "third-party"}
    )
    assert derived.values["bandwidth_gbytes_per_s"] == 1800
    assert derived.basis["bandwidth_gbytes_per_s"] == "third-party"  # the weakest input


def test_a_slice_of_sxm_gpus_is_one_domain_of_its_gpus_but_its_topology_is_not_forced():
    derived = derive_link(Board("h100-sxm", 4), {}, {})
    assert derived.values["technology"] == "nvlink"
    assert derived.values["generation"] == 4
    # A switch partition or a 4-GPU board wired all-to-all: each peer's share of the links is
    # not the model's full figure, so without a named switch the bandwidth stays unknown.
    assert derived.values["bandwidth_gbytes_per_s"] is None
    assert derived.values["topology"] is None
    assert derived.values["domain_size"] == 4
    assert derived.rules["domain_size"] == "hgx-slice-4"
    assert derive_link(Board("b200", 2), {}, {}).values["domain_size"] == 2
    assert derive_link(Board("h100-sxm", 1), {}, {}).values["technology"] is None
    assert derive_link(Board("h100-sxm", 3), {}, {}).values["domain_size"] is None


def test_a_v100_slice_is_not_forced_into_one_domain():
    # Four GPUs of a DGX-1's hybrid cube-mesh need not all be linked to each other.
    derived = derive_link(Board("v100-sxm2-32gb", 4), {}, {})
    assert derived.values["technology"] == "nvlink"
    assert derived.values["domain_size"] is None


def test_a_stated_slice_domain_wins_and_a_different_one_is_a_conflict():
    derived = derive_link(
        Board("a100-sxm-80gb", 4), {"domain_size": 2}, {"domain_size": "provider"}
    )
    assert derived.values["domain_size"] == 2
    assert [name for name, _ in derived.conflicts] == ["domain_size"]


def test_plain_ethernet_is_known_to_have_no_rdma_and_no_gpudirect_rdma():
    from offerings.schemas import FabricIn

    fabric = FabricIn(
        technology="ethernet",
        network_gbits_per_s=100,
        basis="provider",
        source_url="https://docs.example.com/",
        verified_at="2026-12-01",
    )

    class Entry:
        pass

    entry = Entry()
    entry.fabric = fabric
    values, bases = platform.fabric_of_entry(entry)
    assert (values["rdma"], values["gpudirect_rdma"]) == (False, False)
    assert bases["gpudirect_rdma"] == "provider"


@pytest.mark.parametrize(("gpu", "gbytes"), [("a100-sxm-80gb", 600), ("b200", 1800)])
def test_nvlink_bandwidth_is_keyed_by_the_gpu_model(gpu, gbytes):
    assert derive_link(Board(gpu, 8), {}, {}).values["bandwidth_gbytes_per_s"] == gbytes


def test_a_gb200_tray_is_one_72_gpu_domain_only_when_the_provider_names_the_nvl72_rack():
    assert derive_link(Board("gb200", 4), {}, {}).values["domain_size"] is None
    derived = derive_link(Board("gb200", 4, rack="nvl72"), {}, {})
    assert derived.values["domain_size"] == 72
    assert derived.rules["domain_size"] == "gb200-nvl72"


def test_eight_mi300x_are_an_all_to_all_infinity_fabric_mesh():
    derived = derive_link(Board("mi300x", 8), {}, {})
    assert derived.values["technology"] == "infinity-fabric"
    assert derived.values["topology"] == "mesh"
    assert derived.values["domain_size"] == 8


def test_a_verified_absence_of_nvlink_gets_nothing_from_the_rules():
    derived = derive_link(Board("h100-sxm", 8), {"technology": "none"}, {"technology": "provider"})
    assert derived.values["technology"] == "none"
    assert derived.values["topology"] is None
    assert derived.rules == {}


def test_locked_fields_are_left_unknown_by_the_rules():
    derived = derive_link(Board("h100-sxm", 8), {}, {}, locked={"topology"})
    assert derived.values["topology"] is None
    assert derived.values["domain_size"] == 8


def test_every_rule_cites_a_vendor_document_and_names_a_board():
    for rule in platform.RULES:
        host = urlsplit(rule.document_url).hostname or ""
        assert host.endswith((".nvidia.com", ".amd.com")), rule.slug
        assert rule.system.startswith(("NVIDIA ", "AMD "))
        assert set(rule.facts) <= set(platform.LINK_FIELDS)


def test_a_third_party_figure_the_platform_forces_takes_the_platform_basis():
    stated = {"bandwidth_gbytes_per_s": 900}
    derived = derive_link(Board("h100-sxm", 8), stated, {"bandwidth_gbytes_per_s": "third-party"})
    assert derived.basis["bandwidth_gbytes_per_s"] == "platform"
    provider = derive_link(Board("h100-sxm", 8), stated, {"bandwidth_gbytes_per_s": "provider"})
    assert provider.basis["bandwidth_gbytes_per_s"] == "provider"
    assert "bandwidth_gbytes_per_s" not in provider.rules
