"""Published collective benchmarks: loaded from the estimator's records, curated in the admin,
shown on the detail page in both languages and in the API."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from offerings.estimator.calibration import RECORDED_ON, catalog_results
from offerings.management.commands.load_catalog import read_fixture
from offerings.models import CollectiveResult, InstanceType
from offerings.schemas import ProviderCatalog
from offerings.writer.curated import LoadCounts, load_collective_results
from tests.conftest import make_instance
from tests.test_admin import curator, errors_of, make_world, submit, submit_form  # noqa: F401

SOURCE = "https://github.com/NVIDIA/nccl-tests/issues/999"
GIB = 2**30


def _result(instance: InstanceType, **fields) -> CollectiveResult:
    values = {
        "collective": "all_reduce",
        "nodes": 2,
        "gpus": 16,
        "message_bytes": GIB,
        "busbw_gbytes_per_s": Decimal("455.85"),
        "basis": "third-party",
        "source_url": SOURCE,
        "verified_at": date(2026, 11, 30),
    } | fields
    return CollectiveResult.objects.create(instance=instance, **values)


def load() -> str:
    out = StringIO()
    call_command("load_catalog", stdout=out)
    return out.getvalue()


# -- what the estimator records ----------------------------------------------------------------


def test_every_recorded_result_on_a_catalog_type_names_a_shipped_type():
    shipped = set()
    for path in sorted((Path(settings.BASE_DIR) / "fixtures" / "providers").glob("*.toml")):
        catalog = read_fixture(path, ProviderCatalog)
        shipped |= {(catalog.provider.slug, i.resolved_slug) for i in catalog.instances}
    results = catalog_results()
    assert {(r.provider, r.instance) for r in results} <= shipped
    assert len({(r.provider, r.instance) for r in results}) == 27
    # one per type, collective, size, node count and source (a source may print one twice)
    assert len(results) == 157


def test_a_recorded_result_keeps_its_source_configuration_and_gpus_across_nodes():
    p5 = [r for r in catalog_results() if r.instance == "p5-48xlarge" and r.nodes == 16]
    one_gib = next(r for r in p5 if r.message_bytes == GIB)
    assert one_gib.gpus == 128
    assert one_gib.busbw_gbytes_per_s == Decimal("269.23")
    assert one_gib.basis == "third-party"
    assert one_gib.verified_at == RECORDED_ON
    assert "crazyguitar/aws-gpu-communication-benchmark" in str(one_gib.source_url)
    assert one_gib.notes.startswith("AWS ml.p5.48xlarge (SageMaker HyperPod): 16 nodes x 8 H100")
    azure = {r.basis for r in catalog_results() if "github.com/Azure/" in str(r.source_url)}
    assert azure == {"provider"}  # Azure's own repositories
    assert {r.basis for r in catalog_results() if "crazyguitar" in str(r.source_url)} == {
        "third-party"
    }


# -- the one writer ------------------------------------------------------------------------------


def test_load_catalog_stores_the_recorded_results_and_a_second_load_changes_nothing(shipped):
    assert CollectiveResult.objects.count() == len(catalog_results())
    row = CollectiveResult.objects.get(
        instance__provider__slug="coreweave",
        instance__slug="nvidia-hgx-h200",
        message_bytes=GIB,
        busbw_gbytes_per_s=Decimal("455.85"),
    )
    assert (row.nodes, row.gpus, row.busbw_gbytes_per_s) == (2, 16, Decimal("455.850"))
    assert row.fixture_digest
    assert row.locked_fields == []
    before = sorted(map(str, CollectiveResult.objects.values_list()))

    output = load()

    unchanged = f"collectiveresult created    0  updated    0  unchanged  {len(catalog_results())}"
    assert unchanged in output
    assert sorted(map(str, CollectiveResult.objects.values_list())) == before


def test_a_curators_edit_lock_and_own_result_survive_the_next_load(shipped):
    mega = CollectiveResult.objects.filter(
        instance__slug="a3-megagpu-8g", source_url__contains="lessizzmore"
    )
    others = CollectiveResult.objects.filter(instance__slug="a3-megagpu-8g").count() - 2
    edited = mega.get(message_bytes=GIB, nodes=2)
    edited.busbw_gbytes_per_s = Decimal("300")
    edited.locked_fields = ["busbw_gbytes_per_s"]
    edited.fixture_digest = "an older entry"  # the entry "changed" since: the lock still holds
    edited.save()
    moved = mega.get(message_bytes=8 * GIB)
    moved.nodes, moved.gpus, moved.locked_fields = 4, 32, ["nodes", "gpus"]
    moved.save()
    own = _result(edited.instance, source_url="https://cloud.google.com/blog/nccl")

    load()

    edited.refresh_from_db()
    assert edited.busbw_gbytes_per_s == Decimal("300")
    assert CollectiveResult.objects.get(pk=moved.pk).nodes == 4  # not written again beside it
    assert CollectiveResult.objects.filter(pk=own.pk).exists()
    assert CollectiveResult.objects.filter(instance__slug="a3-megagpu-8g").count() == 3 + others


def test_a_result_no_longer_recorded_goes_unless_a_curator_touched_it(db):
    provider_type = make_instance(*_acme(), name="hgx.8x")
    entries = [
        r.model_copy(update={"provider": "acme", "instance": "hgx-8x"})
        for r in catalog_results()
        if r.instance == "standard-nd96isr-h100-v5"
    ]
    load_collective_results(entries, LoadCounts())
    assert provider_type.collective_results.count() == 2
    kept = provider_type.collective_results.get(message_bytes=8 * GIB)
    kept.notes, kept.locked_fields = "checked again", ["notes"]
    kept.save()

    counts = LoadCounts()
    load_collective_results([], counts)

    assert list(provider_type.collective_results.all()) == [kept]
    assert counts.counts["collectiveresult"]["removed"] == 1


def test_a_result_whose_type_is_not_in_the_catalog_is_skipped(db):
    counts = LoadCounts()
    load_collective_results(catalog_results(), counts)
    assert CollectiveResult.objects.count() == 0
    assert counts.changed() == 0


def _acme():
    from offerings.models import GpuModel, Provider

    provider = Provider.objects.create(
        slug="acme", name="Acme", website="https://acme.example", kind="specialist"
    )
    gpu = GpuModel.objects.create(
        slug="h100-sxm", vendor="nvidia", name="H100 SXM", form_factor="sxm", memory_gib=80
    )
    return provider, gpu


# -- the admin -------------------------------------------------------------------------------------


def test_a_curator_adds_a_result_on_its_own_admin_page(curator):  # noqa: F811
    instance = make_world()[InstanceType]
    url = reverse("admin:offerings_collectiveresult_add")
    response = submit_form(
        curator,
        url,
        "collectiveresult",
        instance=instance.pk,
        collective="all_gather",
        nodes=4,
        gpus=32,
        message_bytes=GIB,
        busbw_gbytes_per_s="250.5",
        basis="provider",
        source_url=SOURCE,
        verified_at="2026-11-30",
    )

    assert response.status_code == 302, errors_of(response)
    row = CollectiveResult.objects.get()
    assert (row.instance, row.collective, row.gpus) == (instance, "all_gather", 32)
    assert row.fixture_digest == ""  # a curator's own row: load_catalog never removes it
    assert curator.get(reverse("admin:offerings_collectiveresult_changelist")).status_code == 200


def test_a_curator_adds_a_result_inline_on_the_instance_type(curator):  # noqa: F811
    instance = make_world()[InstanceType]
    fields = {
        "collective": "all_reduce",
        "nodes": "1",
        "gpus": "8",
        "message_bytes": str(8 * GIB),
        "busbw_gbytes_per_s": "478.87",
        "basis": "third-party",
        "source_url": SOURCE,
        "verified_at": "2026-11-30",
    }

    response = submit(
        curator,
        instance,
        **{"collective_results-TOTAL_FORMS": "1"},
        **{f"collective_results-0-{name}": value for name, value in fields.items()},
    )

    assert response.status_code == 302, errors_of(response)
    row = instance.collective_results.get()
    assert row.busbw_gbytes_per_s == Decimal("478.87")


def test_a_result_without_its_date_is_a_form_error_in_the_inline(curator):  # noqa: F811
    instance = make_world()[InstanceType]
    _result(instance, nodes=1, gpus=8)

    response = submit(curator, instance, **{"collective_results-0-verified_at": ""})

    assert response.status_code == 200
    assert any("the day it was checked" in error for error in errors_of(response))


# -- the detail page and the API -------------------------------------------------------------------


@pytest.mark.usefixtures("lazy_loads_raise")
def test_the_detail_page_lists_the_types_results_in_english(client, catalog):
    _result(catalog["ib"])
    _result(catalog["ib"], nodes=1, gpus=8, message_bytes=512 * 2**20, basis="provider")
    _result(catalog["efa"], busbw_gbytes_per_s=Decimal("1.5"))  # another type's: not shown

    body = client.get("/instances/aws/ib-8x/").content.decode()

    section = body[
        body.index('id="collectives"') : body.index("</section>", body.index('id="collectives"'))
    ]
    assert "Published collective benchmarks" in section
    assert "<code>all_reduce</code>" in section
    assert "1 GiB" in section
    assert "512 MiB" in section
    assert "455.85" in section
    assert ">1.5<" not in section
    assert f'href="{SOURCE}"' in section
    assert "2026-11-30" in section
    assert section.count("third party") == 1  # the provider's own result carries no badge
    assert section.index("512 MiB") < section.index("1 GiB")  # one node first


@pytest.mark.usefixtures("lazy_loads_raise")
def test_the_detail_page_lists_the_results_in_chinese(client, catalog):
    _result(catalog["ib"])

    body = client.get("/zh-hans/instances/aws/ib-8x/").content.decode()

    assert "已发布的集合通信基准" in body
    assert "总线带宽（GB/s）" in body
    assert "消息大小" in body
    assert "核对日期" in body
    assert "455.85" in body
    assert "1 GiB" in body


@pytest.mark.usefixtures("lazy_loads_raise")
def test_a_type_without_results_says_none_is_on_record(client, catalog):
    body = client.get("/instances/aws/ib-8x/").content.decode()
    assert "No published collective benchmark on record." in body
    body = client.get("/zh-hans/instances/aws/ib-8x/").content.decode()
    assert "暂无已发布的集合通信基准记录。" in body


@pytest.mark.usefixtures("lazy_loads_raise")
def test_the_detail_page_query_count_does_not_grow_with_results(
    client, catalog, django_assert_max_num_queries
):
    for nodes in range(1, 9):
        _result(catalog["ib"], nodes=nodes, gpus=8 * nodes)
    with django_assert_max_num_queries(14):  # as in tests/test_instance_pages.py
        assert client.get("/instances/aws/ib-8x/").status_code == 200


def test_the_api_lists_each_types_results_with_their_sources(client, catalog):
    _result(catalog["ib"])

    items = {item["slug"]: item for item in client.get("/api/instances").json()["results"]}

    assert items["ib-8x"]["collective_results"] == [
        {
            "collective": "all_reduce",
            "nodes": 2,
            "gpus": 16,
            "message_bytes": GIB,
            "busbw_gbytes_per_s": 455.85,
            "basis": "third-party",
            "source_url": SOURCE,
            "verified_at": "2026-11-30",
            "notes": "",
        }
    ]
    assert items["efa-8x"]["collective_results"] == []
    answer = client.get("/api/openapi.json").json()["paths"]["/api/instances"]["get"]
    schema = answer["responses"]["200"]["content"]["application/json"]["schema"]
    item = schema["properties"]["results"]["items"]
    assert "collective_results" in item["required"]
    result = item["properties"]["collective_results"]["items"]
    assert set(result["required"]) == set(items["ib-8x"]["collective_results"][0])
