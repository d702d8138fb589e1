"""`rdma`, `interconnect` and `provider:code` regions (issue 20, items 6, 8 and 15): the FilterSet,
the page, the API, the exports, the feed, the presets and the OpenAPI document."""

import pytest
from django.http import QueryDict
from django.utils import translation

from offerings.models import Fabric, GpuLink, GpuModel, Provider, Region
from offerings.table.parameters import parse_listing_query
from offerings.table.presets import PRESETS
from tests.conftest import make_instance, make_offer

pytestmark = pytest.mark.usefixtures("lazy_loads_raise")


def slugs(params: str) -> set[str]:
    listing = parse_listing_query(QueryDict(params))
    assert listing.is_valid, listing.errors
    return {row.slug for row in listing.filterset.qs}


def errors(params: str) -> dict:
    with translation.override("en"):  # a Chinese page requested earlier leaves Chinese active
        listing = parse_listing_query(QueryDict(params))
    assert not listing.is_valid
    return listing.errors


@pytest.fixture
def rows(catalog):
    """The shared catalog plus the two cases it lacks: RDMA without NVLink, RDMA with an
    unknown link; and a second provider using one of GCP's region codes."""
    aws = Provider.objects.get(slug="aws")
    l40s = GpuModel.objects.get(slug="l40s")
    h100 = GpuModel.objects.get(slug="h100-sxm")
    catalog["roce-pcie"] = make_instance(
        aws,
        l40s,
        name="roce.4x",
        gpu_count=4,
        link={"technology": "none"},
        fabric={"technology": "roce", "multi_node": True},
    )
    catalog["ib-unknown-link"] = make_instance(
        aws, h100, name="iblink.8x", fabric={"technology": "infiniband"}
    )
    nebius = Provider.objects.create(
        slug="nebius", name="Nebius", website="https://n.example", kind="specialist"
    )
    # The same code as GCP's europe-west4: choosing GCP's must not match this one.
    twin = Region.objects.create(provider=nebius, code="europe-west4", geo="eu")
    catalog["nebius"] = make_instance(
        nebius, h100, name="nb.8x", link={"technology": "nvlink", "topology": "nvswitch"}
    )
    make_offer(catalog["nebius"], twin, price="16.00")
    return catalog


def set_bases(instance, link: str | None, fabric: str | None) -> None:
    GpuLink.objects.filter(pk=instance.pk).update(basis={"technology": link} if link else {})
    Fabric.objects.filter(pk=instance.pk).update(basis={"technology": fabric} if fabric else {})


# -- rdma -----------------------------------------------------------------------------------------


def test_rdma_true_is_an_rdma_fabric_technology(rows):
    assert slugs("rdma=true") == {"ib-8x", "efa-8x", "roce-4x", "iblink-8x"}


def test_rdma_false_is_tcpx_or_ethernet_and_unknown_matches_neither(rows):
    assert slugs("rdma=false") == {"tcpx-8g", "pcie-4x"}
    unknown = {"2a6000-20v", "mystery-8x", "nb-8x"}
    assert not unknown & (slugs("rdma=true") | slugs("rdma=false"))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("rdma=true&basis=provider", {"efa-8x"}),
        ("rdma=true&basis=third-party", {"ib-8x"}),
        ("rdma=true&basis=provider&basis=third-party", {"ib-8x", "efa-8x"}),
        ("rdma=false&basis=provider", {"tcpx-8g", "pcie-4x"}),
        ("rdma=false&basis=platform", set()),
    ],
)
def test_rdma_counts_only_fabric_technologies_of_the_chosen_bases(rows, query, expected):
    set_bases(rows["ib"], "provider", "third-party")
    set_bases(rows["efa"], "platform", "provider")
    set_bases(rows["tcpx"], "provider", "provider")
    set_bases(rows["pcie"], "provider", "provider")
    assert slugs(query) == expected


# -- interconnect ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("nvlink", {"ib-8x", "efa-8x", "tcpx-8g", "2a6000-20v", "nb-8x"}),
        ("rdma", {"ib-8x", "efa-8x", "roce-4x", "iblink-8x"}),
        ("both", {"ib-8x", "efa-8x"}),
        ("either", {"ib-8x", "efa-8x", "tcpx-8g", "2a6000-20v", "nb-8x", "roce-4x", "iblink-8x"}),
        ("neither", {"pcie-4x"}),
    ],
)
def test_interconnect_values(rows, value, expected):
    assert slugs(f"interconnect={value}") == expected


def test_a_row_with_nothing_known_matches_no_interconnect_value(rows):
    for value in ("nvlink", "rdma", "both", "either", "neither"):
        assert "mystery-8x" not in slugs(f"interconnect={value}")


def test_neither_needs_both_absences_known(rows):
    # NVLink bridge with an unknown fabric, and a verified PCIe box with RoCE: neither is "neither"
    assert not {"2a6000-20v", "roce-4x"} & slugs("interconnect=neither")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("interconnect=either&basis=provider", {"ib-8x", "efa-8x", "tcpx-8g"}),
        ("interconnect=nvlink&basis=provider", {"ib-8x", "tcpx-8g"}),
        ("interconnect=rdma&basis=provider", {"efa-8x"}),
        ("interconnect=both&basis=provider", set()),
        ("interconnect=both&basis=provider&basis=platform", {"efa-8x"}),
        ("interconnect=neither&basis=provider", {"pcie-4x"}),
        ("interconnect=neither&basis=third-party", set()),
        ("interconnect=either&basis=platform", {"efa-8x"}),
    ],
)
def test_interconnect_counts_only_facts_of_the_chosen_bases(rows, query, expected):
    set_bases(rows["ib"], "provider", "third-party")
    set_bases(rows["efa"], "platform", "provider")
    set_bases(rows["tcpx"], "provider", "provider")
    set_bases(rows["pcie"], "provider", "provider")
    assert slugs(query) == expected


def test_interconnect_without_basis_or_with_all_three_counts_every_known_fact(rows):
    every = "basis=provider&basis=platform&basis=third-party"
    assert slugs(f"interconnect=either&{every}") == slugs("interconnect=either")


@pytest.mark.parametrize(
    "query", ["interconnect=any", "interconnect=NVLINK", "interconnect=nvlink&interconnect=rdma"]
)
def test_a_bad_interconnect_value_is_a_field_error(rows, query):
    assert list(errors(query)) == ["interconnect"]


@pytest.mark.parametrize("query", ["rdma=yes", "rdma=1", "rdma=true&rdma=false"])
def test_a_bad_rdma_value_is_a_field_error(rows, query):
    assert list(errors(query)) == ["rdma"]


def test_the_api_answers_bad_values_with_the_contract_shape(client, rows):
    response = client.get("/api/instances?interconnect=some&rdma=maybe&region=gcp:us-east-1")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_parameters"
    assert set(body["fields"]) == {"interconnect", "rdma", "region"}
    assert all(body["fields"][name] for name in body["fields"])


def test_the_api_csv_and_page_honour_rdma_and_interconnect(client, rows):
    api = client.get("/api/instances?rdma=true&interconnect=nvlink").json()
    assert {row["slug"] for row in api["results"]} == {"ib-8x", "efa-8x"}
    csv = client.get("/api/instances?format=csv&interconnect=neither").content.decode()
    assert [line.split(",")[3] for line in csv.splitlines()[1:]] == ["pcie-4x"]
    page = client.get("/?interconnect=rdma&rdma=true")
    assert page.status_code == 200
    body = page.content.decode()
    assert "roce.4x" in body
    assert "ib.8x" in body
    assert "tcpx-8g" not in body


def test_the_feed_takes_the_new_filters(client, rows):
    assert client.get("/feeds/price-changes/?interconnect=both").status_code == 200
    response = client.get("/feeds/price-changes/?interconnect=maybe")
    assert response.status_code == 400
    assert "interconnect" in response.json()["fields"]


def test_the_page_shows_bad_values_at_their_fields(client, rows):
    response = client.get("/?interconnect=some&rdma=maybe")
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="err-interconnect" class="field-error">Select a valid choice' in body
    assert 'id="err-rdma" class="field-error">Select a valid choice' in body


def test_the_form_has_both_controls_keeping_their_values(client, rows):
    body = client.get("/?interconnect=either&rdma=false").content.decode()
    assert '<option value="either" selected>' in body
    assert 'name="rdma"' in body
    assert '<option value="false" selected>' in body


# -- presets and the multi-node note -------------------------------------------------------------


def preset(slug: str):
    return next(p for p in PRESETS if p.slug == slug)


def test_the_single_node_preset_excludes_rdma_fabrics(rows):
    found = slugs(preset("nvlink-single-node").query)
    assert found == {"tcpx-8g"}
    assert not found & slugs("rdma=true")


def test_the_multi_node_trap_preset_is_nvlink_without_rdma_between_bookable_nodes(client, rows):
    trap = preset("nvlink-no-rdma")
    assert str(trap.label) == "NVLink but no RDMA between nodes"
    assert slugs(trap.query) == {"tcpx-8g"}
    assert f'data-preset="{trap.slug}"' in client.get("/").content.decode()


NOTE = "multi-node performance unknown"


def test_nvlink_rows_with_an_unknown_fabric_say_multi_node_performance_is_unknown(client, rows):
    body = client.get("/?interconnect=nvlink").content.decode()
    # The NVLink bridge and the Nebius row have an unknown fabric; the others a known one.
    assert body.count(NOTE) == 2
    for row in body.split("<tr>")[1:]:
        if "2A6000.20V" in row or "nb.8x" in row:
            assert NOTE in row
        else:
            assert NOTE not in row


@pytest.mark.parametrize(
    ("query", "row"),
    [
        ("q=mystery", "mystery.8x"),  # unknown link, unknown fabric
        ("q=iblink", "iblink.8x"),  # unknown link, InfiniBand
        ("nvlink=false", "pcie.4x"),  # PCIe only, Ethernet
    ],
)
def test_rows_without_a_known_nvlink_never_carry_the_note(client, rows, query, row):
    body = client.get(f"/?{query}").content.decode()
    assert row in body
    assert NOTE not in body


def test_the_note_is_translated(client, rows):
    body = client.get("/zh-hans/?interconnect=nvlink").content.decode()
    assert "多节点性能未知" in body
    assert NOTE not in body


# -- regions written provider:code --------------------------------------------------------------


def test_a_provider_region_selects_that_providers_region_only(rows):
    assert slugs("region=gcp:europe-west4") == {"tcpx-8g"}
    assert slugs("region=nebius:europe-west4") == {"nb-8x"}


def test_a_bare_code_keeps_matching_every_providers_region_of_that_code(rows):
    assert slugs("region=europe-west4") == {"tcpx-8g", "nb-8x"}


def test_provider_regions_repeat_and_take_the_provider_alias(rows):
    assert slugs("region=gcp:europe-west4&region=aws:us-east-1") == {
        "tcpx-8g",
        "ib-8x",
        "efa-8x",
        "pcie-4x",
    }
    assert slugs("region=verda:FIN-01") == slugs("region=datacrunch:FIN-01") == {"2a6000-20v"}


def test_a_region_repeated_many_times_counts_once(rows):
    """The hostile-query bench found 2 s for one bare code repeated: each copy was matched
    against every region found and carried into the statement."""
    from offerings.table.parameters import RegionField

    assert len(RegionField().clean(["europe-west4"] * 2_000)) == 2
    assert slugs("&".join(["region=europe-west4"] * 500)) == {"tcpx-8g", "nb-8x"}


@pytest.mark.parametrize(
    "value", ["gcp:us-east-1", "nosuchcloud:europe-west4", "gcp:", ":europe-west4", "mars-1"]
)
def test_an_unknown_provider_region_is_a_clear_field_error(rows, value):
    found = errors(f"region={value}")
    assert list(found) == ["region"]
    assert f"{value} is not one of the available choices" in found["region"][0]


def test_region_choices_are_per_provider_and_labelled_with_its_name(client, rows):
    body = client.get("/").content.decode()
    assert 'name="region" value="gcp:europe-west4"> Google: europe-west4</label>' in body
    assert 'name="region" value="nebius:europe-west4"> Nebius: europe-west4</label>' in body
    chosen = client.get("/?region=gcp:europe-west4").content.decode()
    assert 'name="region" value="gcp:europe-west4" checked>' in chosen
    assert 'name="region" value="nebius:europe-west4">' in chosen


def test_a_bare_code_shows_every_providers_region_of_that_code_chosen(client, rows):
    body = client.get("/?region=europe-west4").content.decode()
    assert 'name="region" value="gcp:europe-west4" checked>' in body
    assert 'name="region" value="nebius:europe-west4" checked>' in body


def test_the_api_honours_provider_regions(client, rows):
    results = client.get("/api/instances?region=gcp:europe-west4").json()["results"]
    assert [(row["slug"], row["price"]["region"]) for row in results] == [
        ("tcpx-8g", "europe-west4")
    ]


# -- the OpenAPI document -----------------------------------------------------------------------


def test_the_openapi_document_describes_rdma_interconnect_and_provider_regions(client, db):
    document = client.get("/api/openapi.json").json()
    for path in ("/api/instances", "/api/estimate"):
        parameters = {p["name"]: p for p in document["paths"][path]["get"]["parameters"]}
        assert parameters["rdma"]["schema"] == {"type": "string", "enum": ["true", "false"]}
        assert "unknown" in parameters["rdma"]["description"]
        assert parameters["interconnect"]["schema"]["enum"] == [
            "nvlink",
            "rdma",
            "both",
            "either",
            "nvlink-or-infiniband",
            "neither",
        ]
        assert "unknown" in parameters["interconnect"]["description"]
        region = parameters["region"]
        assert region["schema"]["type"] == "array"
        assert "provider:code" in region["description"]
        assert "bare code" in region["description"]
        assert "rdma" in parameters["basis"]["description"]
