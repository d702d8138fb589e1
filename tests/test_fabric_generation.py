"""The fabric's generation, for the two fabrics whose generations perform differently: AWS EFA
(v1 to v4) and Google's GPUDirect-TCPX and TCPXO. A generation belongs to its technology (in the
fixtures' schema and in the database), loads from the fixtures with its basis and its lock, and
shows in the API, the CSV export and the detail page.
"""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest
from django.core.exceptions import ValidationError as ModelValidationError
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from pydantic import ValidationError

from offerings.models import Fabric
from offerings.schemas import FabricIn
from tests.test_load_catalog import PROVIDER, load, write_fixtures

SOURCE = {"source_url": "https://docs.example.com/", "verified_at": "2026-12-04"}


def acme_text(fabric: str = 'technology = "infiniband"') -> str:
    """The load_catalog tests' provider, its 8-GPU type's fabric technology line replaced."""
    text = PROVIDER.replace("{price}", "160").replace("{observed}", "2026-11-01T00:00:00Z")
    assert 'technology = "infiniband"' in text
    return text.replace('technology = "infiniband"', fabric, 1)


def test_a_generation_is_one_of_its_technologys_generations():
    assert FabricIn(technology="efa", generation="efa-v3", basis="provider", **SOURCE).generation
    assert FabricIn(technology="tcpx", generation="tcpxo", basis="provider", **SOURCE).generation
    assert FabricIn(technology="efa", basis="provider", **SOURCE).generation == ""
    with pytest.raises(ValidationError, match=r"generation 'tcpxo' is a generation of .*'tcpx'"):
        FabricIn(technology="efa", generation="tcpxo", basis="provider", **SOURCE)
    with pytest.raises(ValidationError, match=r"generation 'efa-v2' is a generation of .*'efa'"):
        FabricIn(technology="infiniband", generation="efa-v2", basis="provider", **SOURCE)
    with pytest.raises(ValidationError, match="generation"):
        FabricIn(technology="efa", generation="efa-v9", basis="provider", **SOURCE)


@pytest.mark.parametrize(
    ("technology", "generation"),
    [("efa", "tcpx"), ("tcpx", "efa-v1"), ("roce", "efa-v4"), ("unknown", "tcpxo")],
)
def test_the_database_refuses_a_generation_of_another_technology(instance, technology, generation):
    fabric = instance.fabric
    fabric.technology, fabric.generation = technology, generation
    with pytest.raises(ModelValidationError, match="needs technology EFA"):
        fabric.full_clean(exclude=["instance"])
    with (
        pytest.raises(IntegrityError, match="fabric_generation_matches_technology"),
        transaction.atomic(),
    ):
        fabric.save()


def test_the_database_keeps_a_generation_of_its_own_technology(instance):
    Fabric.objects.filter(pk=instance.pk).update(technology="efa", generation="efa-v2")
    Fabric.objects.filter(pk=instance.pk).update(technology="tcpx", generation="tcpxo")
    assert Fabric.objects.get(pk=instance.pk).get_generation_display() == "GPUDirect-TCPXO"


def test_a_fixture_with_a_generation_of_another_technology_names_the_file_and_the_field(
    db, tmp_path
):
    text = acme_text('technology = "infiniband"\ngeneration = "efa-v2"')
    write_fixtures(tmp_path, provider=text)
    with pytest.raises(CommandError, match=r"acme\.toml") as error:
        load(tmp_path)
    assert "generation 'efa-v2' is a generation of technology 'efa', not 'infiniband'" in str(
        error.value
    )
    assert not Fabric.objects.exists()


def test_a_fixture_with_an_unknown_generation_is_refused(db, tmp_path):
    write_fixtures(tmp_path, provider=acme_text('technology = "efa"\ngeneration = "efa-v5"'))
    with pytest.raises(CommandError, match=r"acme\.toml") as error:
        load(tmp_path)
    assert "generation" in str(error.value)
    assert not Fabric.objects.exists()


def test_a_loaded_generation_carries_its_basis_and_keeps_a_curators_lock(db, tmp_path):
    write_fixtures(tmp_path, provider=acme_text('technology = "efa"\ngeneration = "efa-v2"'))
    load(tmp_path)
    fabric = Fabric.objects.get(instance__slug="hgx-h100-8x")
    assert (fabric.generation, fabric.basis["generation"]) == ("efa-v2", "provider")
    assert "generation" not in Fabric.objects.get(instance__slug="pcie-l40s-4x").basis
    # A curator's correction, locked, survives a changed fixture; the basis stays with it.
    fabric.generation = "efa-v3"
    fabric.basis["generation"] = "third-party"
    fabric.locked_fields = ["generation"]
    fabric.save()
    text = acme_text('technology = "efa"\ngeneration = "efa-v1"').replace("nics = 8", "nics = 4")
    write_fixtures(tmp_path, provider=text)
    load(tmp_path)
    fabric.refresh_from_db()
    assert (fabric.generation, fabric.basis["generation"], fabric.nics) == (
        "efa-v3",
        "third-party",
        4,
    )
    # Unlocked, the fixture's generation (and its basis) come back on the next change.
    fabric.locked_fields = []
    fabric.save()
    write_fixtures(tmp_path, provider=acme_text('technology = "efa"\ngeneration = "efa-v1"'))
    load(tmp_path)
    fabric.refresh_from_db()
    assert (fabric.generation, fabric.basis["generation"]) == ("efa-v1", "provider")


@pytest.mark.usefixtures("shipped")
class TestTheShippedCatalog:
    def test_the_named_types_have_their_sources_generation(self):
        expected = {
            ("aws", "p4d-24xlarge"): "efa-v1",
            ("aws", "p5-48xlarge"): "efa-v2",
            ("aws", "p5en-48xlarge"): "efa-v3",
            ("aws", "p6-b200-48xlarge"): "efa-v4",
            ("gcp", "a3-highgpu-8g"): "tcpx",
            ("gcp", "a3-edgegpu-8g"): "tcpx",
            ("gcp", "a3-megagpu-8g"): "tcpxo",
        }
        for (provider, slug), generation in expected.items():
            fabric = Fabric.objects.get(instance__provider__slug=provider, instance__slug=slug)
            assert (fabric.generation, fabric.basis.get("generation")) == (
                generation,
                "provider",
            ), slug

    def test_the_calibrations_runs_take_the_catalogs_generation(self):
        # The collective model's recorded runs name each run's type; its generation there is
        # the catalog's, so a fitted factor is the one a buyer's answer uses.
        from offerings.estimator.calibration import RUN_FABRIC_GENERATIONS

        for ref, generation in RUN_FABRIC_GENERATIONS.items():
            provider, slug = ref.split("/")
            fabric = Fabric.objects.get(instance__provider__slug=provider, instance__slug=slug)
            assert fabric.generation == generation, ref

    def test_only_efa_and_tcpx_fabrics_have_a_generation(self):
        stated = Fabric.objects.exclude(generation="")
        assert set(stated.values_list("technology", flat=True)) == {"efa", "tcpx"}
        counts = Counter(stated.values_list("generation", flat=True))
        assert set(counts) == {"efa-v1", "efa-v2", "efa-v3", "efa-v4", "tcpx", "tcpxo"}
        # Every fabric with a generation carries its basis, and none without one does.
        assert all("generation" in basis for basis in stated.values_list("basis", flat=True))
        assert not Fabric.objects.filter(generation="", basis__has_key="generation").exists()

    @pytest.mark.usefixtures("lazy_loads_raise")
    def test_the_api_and_the_csv_carry_the_generation(self, client):
        query = {"provider": ["aws", "gcp"], "page_size": 200}
        body = client.get("/api/instances", query).json()
        assert body["count"] <= 200
        rows = {(r["provider"], r["slug"]): r for r in body["results"]}
        assert rows["aws", "p5en-48xlarge"]["fabric_generation"] == "efa-v3"
        assert rows["gcp", "a3-megagpu-8g"]["fabric_generation"] == "tcpxo"
        assert rows["gcp", "a2-highgpu-8g"]["fabric_generation"] is None  # plain Ethernet
        paths = client.get("/api/openapi.json").json()["paths"]
        answer = paths["/api/instances"]["get"]["responses"]["200"]["content"]
        instance = answer["application/json"]["schema"]["properties"]["results"]["items"]
        assert "fabric_generation" in instance["required"]
        assert "efa-v4" in instance["properties"]["fabric_generation"]["enum"]
        text = client.get("/?provider=gcp&format=csv").text
        by_slug = {row["slug"]: row for row in csv.DictReader(io.StringIO(text))}
        assert by_slug["a3-highgpu-8g"]["fabric_generation"] == "tcpx"
        assert by_slug["a2-highgpu-8g"]["fabric_generation"] == ""

    def test_the_detail_page_names_the_generation_in_the_pages_language(self, client):
        page = " ".join(client.get("/instances/aws/p5-48xlarge/").content.decode().split())
        assert "<dt>Generation</dt> <dd>EFA v2 <small" in page
        chinese = " ".join(
            client.get("/zh-hans/instances/gcp/a3-megagpu-8g/").content.decode().split()
        )
        assert "<dt>代际</dt> <dd>GPUDirect-TCPXO <small" in chinese
        # Plain Ethernet has no generation to state: only the GPU link's row is there.
        ethernet = client.get("/instances/gcp/a2-highgpu-8g/").content.decode()
        assert ethernet.count("<dt>Generation</dt>") == 1

    def test_the_badge_and_the_drawing_name_tcpx_or_tcpxo_as_the_source_does(self, client):
        mega = client.get("/instances/gcp/a3-megagpu-8g/").content.decode()
        assert "TCPXO (not RDMA)" in mega  # the badge
        assert "GPUDirect-TCPXO (not RDMA)" in mega  # the node drawing
        high = client.get("/zh-hans/instances/gcp/a3-highgpu-8g/").content.decode()
        assert "TCPX（非 RDMA）" in high
        assert "GPUDirect-TCPX（非 RDMA）" in high
        assert "TCPX/TCPXO" not in mega + high


def test_the_models_choices_are_the_schemas_generations():
    from offerings.models import FabricGeneration
    from offerings.schemas import FABRIC_GENERATIONS

    assert tuple(FabricGeneration.values[1:]) == sum(FABRIC_GENERATIONS.values(), ())
