"""Two networks, two fields (#30, item 2), and honest multi-node and slice facts (item 3).

`fabric` is the back-end network GPU traffic between nodes uses; the instance's general network
(VPC, storage, internet) is `network_gbits_per_s`. A type whose only network is the general one
has fabric technology `ethernet` and no fabric bandwidth, so `fabric_gbps_min` never returns it.
"""

from __future__ import annotations

import csv
import io

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from pydantic import ValidationError

from offerings.estimator.core import FabricSpec
from offerings.models import Fabric, InstanceType
from offerings.platform import Board, derive_link
from offerings.schemas import FabricIn

SOURCE = {"source_url": "https://docs.example.com/", "verified_at": "2026-12-04"}


def test_an_ethernet_type_gives_its_network_not_a_back_end_figure():
    with pytest.raises(ValidationError, match="no back-end network"):
        FabricIn(technology="ethernet", bandwidth_gbits_per_s=25, basis="provider", **SOURCE)
    with pytest.raises(ValidationError, match="no back-end network"):
        FabricIn(technology="ethernet", nics=1, basis="provider", **SOURCE)
    fabric = FabricIn(technology="ethernet", network_gbits_per_s=25, basis="provider", **SOURCE)
    assert (fabric.bandwidth_gbits_per_s, fabric.network_gbits_per_s) == (None, 25)


def test_a_shared_figure_is_given_for_both_networks():
    with pytest.raises(ValidationError, match="network_shared"):
        FabricIn(
            technology="efa",
            bandwidth_gbits_per_s=100,
            network_shared=True,
            basis="provider",
            **SOURCE,
        )
    FabricIn(
        technology="efa",
        bandwidth_gbits_per_s=100,
        network_gbits_per_s=100,
        network_shared=True,
        basis="provider",
        **SOURCE,
    )


def test_the_estimator_crosses_the_general_network_only_where_there_is_no_back_end():
    ethernet = FabricSpec("ethernet", None, True, None, network_gbits_per_s=50)
    assert ethernet.between_nodes_gbits_per_s == 50
    infiniband = FabricSpec("infiniband", 3200, True, None, network_gbits_per_s=200)
    assert infiniband.between_nodes_gbits_per_s == 3200
    # An unknown fabric is not the general network: nothing says what nodes cross.
    assert (
        FabricSpec("unknown", None, None, None, network_gbits_per_s=50).between_nodes_gbits_per_s
        is None
    )


def test_a_slice_gets_the_full_nvlink_figure_only_on_a_known_switch():
    board = Board("h100-sxm", 4)
    direct = derive_link(board, {"technology": "nvlink"}, {"technology": "provider"})
    assert direct.values["bandwidth_gbytes_per_s"] is None  # a 4-GPU board wired all-to-all
    assert direct.values["generation"] == 4  # the model's generation still follows
    switched = derive_link(
        board,
        {"technology": "nvlink", "topology": "nvswitch"},
        {"technology": "provider", "topology": "provider"},
    )
    assert switched.values["bandwidth_gbytes_per_s"] == 900
    assert switched.basis["bandwidth_gbytes_per_s"] == "platform"
    whole = derive_link(Board("h100-sxm", 8), {"technology": "nvlink"}, {"technology": "provider"})
    assert whole.values["bandwidth_gbytes_per_s"] == 900  # the HGX board rule names the switch


@pytest.mark.usefixtures("shipped")
class TestTheShippedCatalog:
    def test_no_ethernet_type_carries_a_fabric_bandwidth(self):
        ethernet = Fabric.objects.filter(instance__in=InstanceType.objects.visible())
        ethernet = ethernet.filter(technology="ethernet")
        assert ethernet.exists()
        assert not ethernet.filter(bandwidth_gbits_per_s__isnull=False).exists()
        assert not ethernet.filter(nics__isnull=False).exists()

    def test_at_least_a_hundred_types_state_their_general_network(self):
        stated = InstanceType.objects.visible().filter(fabric__network_gbits_per_s__isnull=False)
        assert stated.count() >= 100

    def test_a_fabric_bandwidth_floor_returns_no_type_whose_only_network_is_shared(self, client):
        body = client.get("/api/instances", {"fabric_gbps_min": 20, "page_size": 200}).json()
        assert body["count"] > 0
        assert {r["fabric"]["technology"] for r in body["results"]}.isdisjoint({"ethernet"})
        assert all(r["fabric"]["bandwidth_gbits_per_s"] >= 20 for r in body["results"])

    def test_the_api_and_the_csv_carry_the_general_network(self, client):
        body = client.get("/api/instances", {"provider": "tencent", "page_size": 200}).json()
        gt4 = next(r for r in body["results"] if r["name"] == "GT4.41XLARGE948")
        assert gt4["fabric"]["technology"] == "ethernet"
        assert gt4["fabric"]["bandwidth_gbits_per_s"] is None
        assert (gt4["network_gbits_per_s"], gt4["network_shared"]) == (50, False)
        assert gt4["network_basis"] == "provider"
        aws = client.get("/api/instances", {"provider": "aws", "page_size": 200}).json()
        g6e = next(r for r in aws["results"] if r["name"] == "g6e.48xlarge")
        assert g6e["fabric"]["bandwidth_gbits_per_s"] == g6e["network_gbits_per_s"] == 400
        assert g6e["network_shared"] is True
        rows = list(csv.DictReader(io.StringIO(client.get("/?provider=tencent&format=csv").text)))
        assert {"network_gbits_per_s", "network_shared", "network_basis"} <= set(rows[0])

    def test_the_detail_page_says_which_network_is_which(self, client):
        page = client.get("/instances/tencent/gt4-41xlarge948/").content.decode()
        assert "nodes talk over the general network only" in page
        assert "General network Gb/s" in page
        # p6e-gb200: one set of cards, but a limit of its own for each kind of traffic.
        separate = " ".join(
            client.get("/instances/aws/p6e-gb200-36xlarge/").content.decode().split()
        )
        assert "It states a separate limit for each kind of traffic" in separate
        table = client.get("/?provider=aws&q=p6e").content.decode()
        assert "1600 Gb/s, shared with the general network" in table
        assert "general network 3200 Gb/s" in table
        shared = client.get("/instances/aws/g6e-48xlarge/").content.decode()
        assert "share their bandwidth" in " ".join(shared.split())

    def test_the_table_shows_the_general_network_beside_the_fabric(self, client):
        page = client.get("/?provider=tencent").content.decode()
        assert "general network 50 Gb/s" in page
        # HCCPNV6: a third party says 3.2 Tb/s of RDMA without naming InfiniBand or RoCE.
        assert "RDMA (kind not stated)" in page

    def test_the_compare_page_and_the_planner_name_the_general_network(self, client):
        ids = "tencent/gt4-41xlarge948,aws/g6e-48xlarge"
        page = " ".join(client.get(f"/compare/?ids={ids}").content.decode().split())
        assert "General network Gb/s" in page
        assert "none: general network only" in page
        body = client.get("/api/plan", {"gpus": 16, "provider": "tencent"}).json()
        gt4 = next(r for r in body["results"] if r["instance"]["name"] == "GT4.41XLARGE948")
        assert gt4["fabric"] == "ethernet"
        assert gt4["fabric_gbits_per_s_per_gpu"] is None
        assert gt4["network_gbits_per_s_per_gpu"] == 50 / 8
        plan = client.get("/plan/", {"gpus": 16, "provider": "tencent"}).content.decode()
        assert "TCP over the general network" in plan

    def test_the_diagram_draws_the_general_network_of_a_plain_ethernet_node(self, client):
        page = client.get("/instances/tencent/gt4-41xlarge948/").content.decode()
        assert "general network 50 Gb/s" in page.split("<svg", 1)[1]

    def test_a_vpc_page_no_longer_makes_a_type_multi_node(self):
        vpc_pages = ("virtual-private-cloud", "doc-detail/100380", "vpc/faq", "network-throughput")
        for fabric in Fabric.objects.filter(technology="ethernet", multi_node=True):
            assert fabric.cluster_source_url, fabric.instance
            assert not any(page in fabric.cluster_source_url for page in vpc_pages), fabric.instance

    def test_a_slice_without_a_named_switch_has_no_platform_bandwidth(self):
        for name in ("2x NVIDIA H100 SXM", "4x NVIDIA H100 SXM"):
            link = InstanceType.objects.get(provider__slug="lambda", name=name).gpu_link
            assert link.bandwidth_gbytes_per_s is None, name


@pytest.fixture
def migrated_back():
    """A test that migrates the database back; afterwards it is migrated to the latest again,
    so a later transactional test finds every column."""
    yield MigrationExecutor(connection)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_an_ethernet_figure_to_the_general_network(migrated_back):
    executor = migrated_back
    executor.migrate([("offerings", "0019_local_names")])
    old = executor.loader.project_state([("offerings", "0019_local_names")]).apps
    provider = old.get_model("offerings", "Provider").objects.create(
        slug="acme", name="Acme", website="https://acme.example/", kind="specialist"
    )
    gpu = old.get_model("offerings", "GpuModel").objects.create(
        slug="l4", vendor="nvidia", name="L4", form_factor="pcie", memory_gib=24
    )
    instance = old.get_model("offerings", "InstanceType").objects.create(
        provider=provider, name="l4.4x", slug="l4-4x", gpu=gpu, gpu_count=4
    )
    old.get_model("offerings", "Fabric").objects.create(
        instance=instance,
        technology="ethernet",
        bandwidth_gbits_per_s=50,
        nics=1,
        basis={"technology": "provider", "bandwidth_gbits_per_s": "provider", "nics": "provider"},
        locked_fields=["bandwidth_gbits_per_s", "nics"],
    )
    executor = MigrationExecutor(connection)
    executor.migrate([("offerings", "0020_general_network")])
    # Read as the schema stood then: later migrations add fabric columns (0024: generation).
    moved = executor.loader.project_state([("offerings", "0020_general_network")]).apps
    fabric = moved.get_model("offerings", "Fabric").objects.get(instance__slug="l4-4x")
    assert (fabric.bandwidth_gbits_per_s, fabric.nics, fabric.network_gbits_per_s) == (
        None,
        None,
        50,
    )
    assert fabric.basis == {"technology": "provider", "network_gbits_per_s": "provider"}
    assert fabric.locked_fields == ["network_gbits_per_s"]
