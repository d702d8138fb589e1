"""Breadth (#30, item 1): the clouds buyers use, names as the provider writes them, and a renamed
type found by its former name; a type taken out of the fixtures is retired, not left showing."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from offerings.models import InstanceType, Provider

pytestmark = pytest.mark.usefixtures("shipped")


def visible():
    return InstanceType.objects.visible()


def test_the_catalog_lists_the_clouds_buyers_use():
    providers = set(visible().values_list("provider__slug", flat=True))
    assert visible().count() >= 320
    assert len(providers) >= 28
    for slug in ("huawei", "volcengine", "tencent", "alibaba", "ibm", "digitalocean", "vultr"):
        assert slug in providers, slug
    for slug in ("ovhcloud", "gcore", "genesiscloud", "voltagepark", "hyperstack"):
        assert slug in providers, slug


def test_a_chinese_buyer_finds_tencent_types_with_rdma():
    rdma = visible().filter(
        provider__slug="tencent", fabric__technology__in=("infiniband", "roce", "efa", "erdma")
    )
    assert rdma.count() >= 3
    assert all(row.fabric.source_url for row in rdma.select_related("fabric"))


def test_crusoes_gb200_goes_by_its_sku_and_its_former_name_still_finds_it(client):
    crusoe = visible().filter(provider__slug="crusoe")
    assert crusoe.filter(name="gb200-186gb-nvl-ib.4x", slug="gb200-186gb-nvl-ib-4x").exists()
    assert not crusoe.filter(name__icontains="GB200 NVL72 node").exists()
    for q in ("gb200-186gb-nvl-ib", "NVL72 node"):
        names = {r["name"] for r in client.get("/api/instances", {"q": q}).json()["results"]}
        assert "gb200-186gb-nvl-ib.4x" in names, q
    page = client.get("/instances/crusoe/gb200-186gb-nvl-ib-4x/").content.decode()
    # Its former address leads to it, in both languages, keeping the query.
    for prefix in ("", "/zh-hans"):
        response = client.get(f"{prefix}/instances/crusoe/4x-gb200-nvl72/?currency=CNY")
        assert response.status_code == 301
        assert response["Location"] == (
            f"{prefix}/instances/crusoe/gb200-186gb-nvl-ib-4x/?currency=CNY"
        )
    assert client.get("/instances/crusoe/no-such-type/").status_code == 404
    assert "Also listed as:" in page
    assert "GB200 NVL72 node (4x GB200)" in page


def test_a_type_taken_out_of_the_fixtures_is_retired_and_one_put_back_returns(tmp_path, settings):
    import shutil

    fixtures = tmp_path / "fixtures"
    shutil.copytree(settings.BASE_DIR / "fixtures", fixtures)
    crusoe = fixtures / "providers" / "crusoe.toml"
    original = crusoe.read_text()
    # Take the GB200 entry out: everything from its [[instances]] header to the next one.
    start = original.index('name = "gb200-186gb-nvl-ib.4x"')
    start = original.rindex("[[instances]]", 0, start)
    end = original.index("[[instances]]", start + 1)
    crusoe.write_text(original[:start] + original[end:])
    call_command("load_catalog", fixtures=fixtures, verbosity=0)
    row = InstanceType.objects.get(provider__slug="crusoe", slug="gb200-186gb-nvl-ib-4x")
    assert row.is_active is False
    assert row.gpu_link is not None  # retired, not deleted: its facts and history stay
    assert not visible().filter(pk=row.pk).exists()
    crusoe.write_text(original)
    call_command("load_catalog", fixtures=fixtures, verbosity=0)
    row.refresh_from_db()
    assert row.is_active is True


def test_a_provider_without_a_listed_type_keeps_its_readiness_facts(client):
    baidu = Provider.objects.get(slug="baidu")
    assert not visible().filter(provider=baidu).exists()
    page = client.get("/providers/baidu/").content.decode()
    assert "type is listed yet" in page
    results = {r["slug"]: r for r in client.get("/api/providers").json()["results"]}
    assert results["baidu"]["readiness"]["fabrics"] is not None
