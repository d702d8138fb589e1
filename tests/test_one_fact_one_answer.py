"""One fact, one answer (#29, item 6): a provider's summary of its types' facts is computed from
them, so the provider page, its types' pages and /api/providers cannot disagree; a type whose
notes say it is bought through sales has that purchase mode on record."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from gpucatalog.wsgi import application
from offerings.models import InstanceType, Provider
from offerings.pages.readiness import RDMA_FABRICS, VARIES

pytestmark = pytest.mark.usefixtures("shipped")


def readiness(client) -> dict[str, dict]:
    body = client.get("/api/providers").json()
    return {row["slug"]: row["readiness"] for row in body["results"]}


def test_every_providers_fabric_kinds_are_its_listed_types_kinds(client):
    for slug, facts in readiness(client).items():
        kinds = set(
            InstanceType.objects.visible()
            .filter(provider__slug=slug)
            .exclude(fabric__technology="unknown")
            .values_list("fabric__technology", flat=True)
        )
        fabrics = facts["fabrics"]
        if kinds:
            assert set(fabrics["value"]) == kinds, slug
            assert fabrics["from_types"]["types"] >= 1
        elif fabrics is not None and "from_types" in fabrics:
            assert fabrics["value"] is None, slug  # every type unknown: so is the summary


def test_gpudirect_rdma_is_what_the_rdma_types_have_or_varies(client):
    for slug, facts in readiness(client).items():
        values = set(
            InstanceType.objects.visible()
            .filter(provider__slug=slug, fabric__technology__in=RDMA_FABRICS)
            .values_list("fabric__gpudirect_rdma", flat=True)
        )
        gpudirect = facts["gpudirect_rdma"]
        if not values or gpudirect is None or "from_types" not in gpudirect:
            continue
        if len(values) == 1:
            assert gpudirect["value"] == values.pop(), slug
        else:
            assert gpudirect["value"] == VARIES, slug


def test_the_three_disagreements_of_the_issue_are_gone(client):
    facts = readiness(client)
    # Alibaba states GPUDirect RDMA for sccgn (not listed); its listed eRDMA types say no or
    # nothing: the summary says it varies, and keeps Alibaba's statement beside it.
    alibaba = facts["alibaba"]["gpudirect_rdma"]
    assert alibaba["value"] == VARIES
    assert alibaba["stated"]["value"] is True
    assert "sccgn" in alibaba["stated"]["source_url"]
    # Tencent's network: its GPU VMs are Ethernet and its HCC types RoCE, so is the summary.
    assert facts["tencent"]["fabrics"]["value"] == ["roce", "ethernet"]
    for prefix, unknown, varies in (
        ("", "unknown", "varies by type"),
        ("/zh-hans", "未知", "因类型而异"),
    ):
        tencent = client.get(f"{prefix}/providers/tencent/").content.decode()
        card = tencent.split('id="readiness"', 1)[1].split("</section>", 1)[0]
        fabrics = card.split('data-fact="fabrics"', 1)[1].split("</dd>", 1)[0]
        assert "RoCE" in fabrics
        # HCCPNV6: a third party says RDMA without naming its kind, counted as one unknown.
        assert f"1 {unknown}" in fabrics
        page = client.get(f"{prefix}/providers/alibaba/").content.decode()
        card = page.split('id="readiness"', 1)[1].split("</section>", 1)[0]
        gpudirect = card.split('data-fact="gpudirect_rdma"', 1)[1].split("</dd>", 1)[0]
        assert varies in gpudirect
    # ebmgn8v: its note says it is bought through sales, and so does its purchase mode.
    detail = client.get("/api/instances?provider=alibaba&q=ebmgn8v").json()["results"]
    (row,) = [r for r in detail if r["name"] == "ecs.ebmgn8v.48xlarge"]
    assert [mode["kind"] for mode in row["purchase_modes"]] == ["sales-only"]
    html = client.get("/instances/alibaba/ecs-ebmgn8v-48xlarge/").content.decode()
    assert "no source says how to buy" not in html.lower()


def test_every_type_whose_notes_say_sales_has_a_sales_only_mode():
    from offerings.management.commands.lint_catalog import SOLD_THROUGH_SALES

    said = [
        row
        for row in InstanceType.objects.visible()
        if SOLD_THROUGH_SALES.search(f"{row.notes} {row.setup_notes}")
    ]
    assert len(said) >= 18  # 14 Alibaba, 3 Tencent PNV4, the Nebius GB300 tray
    for row in said:
        kinds = set(row.purchase_modes.values_list("kind", flat=True))
        assert "sales-only" in kinds, row.name


def test_the_providers_answer_conforms_to_the_openapi_document():
    # As tests/security/test_schemathesis.py calls the app: the test's transaction kept open.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
        case = schema["/api/providers"]["GET"].Case()
        response = case.call_and_validate()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    summaries = [
        fact
        for row in response.json()["results"]
        for fact in row["readiness"].values()
        if fact and "from_types" in fact
    ]
    assert any(fact["value"] == VARIES for fact in summaries)  # the schema took "varies"
    assert any(fact["stated"] for fact in summaries)
    assert Provider.objects.exists()
