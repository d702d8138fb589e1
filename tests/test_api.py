"""/api/instances, the exports and the filter page: the same rows everywhere, bounded queries."""

import csv
import io
import json
from datetime import date
from decimal import Decimal

import pytest
from django.http import QueryDict

from offerings.estimator.ranking import lean_rows
from offerings.models import ExchangeRate, GpuModel, InstanceType, Offer, Provider, Region
from offerings.money import RateTable
from offerings.planner.core import PlanOffer, PlanRow, shapes_for
from offerings.table.parameters import parse_listing_query
from offerings.table.rows import offer_usd
from tests.conftest import NVSWITCH_8, SOURCE, make_instance, make_offer

# Every view here runs with lazy loads raising (Django 6.1 fetch modes): no N+1 can hide.
pytestmark = pytest.mark.usefixtures("lazy_loads_raise")


@pytest.fixture
def cny_row(db):
    """A Chinese cloud's instance priced in CNY, converted at a dated reference rate."""
    ali = Provider.objects.create(
        slug="alibaba", name="Alibaba Cloud", website="https://ali.example", kind="hyperscaler"
    )
    region = Region.objects.create(provider=ali, code="cn-beijing", geo="asia")
    gpu = GpuModel.objects.create(
        slug="h20", vendor="nvidia", name="H20", form_factor="sxm", memory_gib=96
    )
    rate = ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2025, 10, 21),
        usd_per_unit=Decimal("0.140476"),
        source_url=SOURCE,
    )
    instance = make_instance(
        ali, gpu, name="ebmgn8v.48xlarge", link=NVSWITCH_8, fabric={"technology": "erdma"}
    )
    # 100 CNY/h x 0.140476 = 14.0476 USD/h; / 8 = 1.75595 -> half-even 1.7560 (not 1.7559)
    make_offer(
        instance,
        region,
        price="100",
        currency="CNY",
        per_gpu=Decimal("1.755950"),
        exchange_rate_date=rate.rate_date,
    )
    return instance


def test_the_api_the_estimator_and_the_planner_convert_a_price_at_its_dated_rate(client, cny_row):
    """One conversion (`RateTable.usd`) for every consumer of a price: 100 CNY/h read on
    2025-10-21 is 14.0476 USD/h at that day's rate, not at a newer one, in the API's rows, the
    estimator's ranking and records and the planner's shapes, exactly (Decimal) where they
    keep Decimals."""
    ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2025, 11, 3),
        usd_per_unit=Decimal("0.15"),  # the newest rate: a price read before it keeps its own
        source_url=SOURCE,
    )
    rates = RateTable()
    exact = Decimal("100") * Decimal("0.140476")
    assert exact == Decimal("14.0476")
    assert rates.usd(Decimal("100"), "CNY", date(2025, 10, 21)) == exact
    assert rates.usd(Decimal("100"), "CNY") == Decimal("15.00")  # undated: the newest
    assert rates.usd(Decimal("100"), "XXX") is None

    offer = Offer.objects.get(instance=cny_row)
    assert offer_usd(offer, 8, rates) == (exact, exact / 8)  # the API's rows and exports
    matching = parse_listing_query(QueryDict(), queryset=InstanceType.objects.for_table())
    ((_pk, _spec, ranked),) = lean_rows(matching.filterset.qs, rates)  # the estimator's ranking
    assert ranked == float(exact)
    (shape,) = shapes_for(  # the planner: 16 GPUs are 2 nodes
        [PlanRow.of(row) for row in InstanceType.objects.values_list(*PlanRow.FIELDS)],
        {cny_row.pk: [PlanOffer.of(o) for o in Offer.objects.values_list(*PlanOffer.FIELDS)]},
        16,
        rates,
    )
    assert (shape.nodes, shape.price_per_hour_usd) == (2, exact * 2)

    shown = float(exact)
    row = client.get("/api/instances").json()["results"][0]
    assert row["price"]["price_per_hour"] == shown
    plan = client.get("/api/plan?gpus=8").json()["results"][0]
    assert plan["price_per_hour_usd"] == shown
    estimate = client.get("/api/estimate?params_b=7&mode=inference&nodes=1").json()["results"][0]
    assert estimate["cost_per_hour_usd"] == shown  # the record built by instance_spec


def test_a_row_has_the_contract_shape(client, cny_row):
    body = client.get("/api/instances").json()
    assert body["count"] == 1
    assert body["next"] is None
    row = body["results"][0]
    assert row["id"] == cny_row.pk
    assert (row["provider"], row["name"], row["slug"]) == (
        "alibaba",
        "ebmgn8v.48xlarge",
        "ebmgn8v-48xlarge",
    )
    assert (row["gpu"], row["gpu_count"], row["gpu_memory_gib"]) == ("h20", 8, 96)
    assert row["nvlink"] == {
        "technology": "nvlink",
        "generation": 4,
        "topology": "nvswitch",
        "domain_size": 8,
        "bandwidth_gbytes_per_s": 900,
        "basis": {},  # this row was made without bases (see tests/test_fact_basis.py)
    }
    assert row["fabric"] == {
        "technology": "erdma",
        "bandwidth_gbits_per_s": None,
        "nics": None,
        "gpudirect_rdma": None,
        "multi_node": None,
        "max_nodes": None,
        "basis": {},
    }
    assert (row["gpu_link"], row["gpu_link_basis"]) == ("nvlink", None)
    assert row["url"] == "http://testserver/instances/alibaba/ebmgn8v-48xlarge/"
    assert SOURCE in row["sources"]


def test_prices_in_another_currency_are_usd_with_the_original_kept(client, cny_row):
    price = client.get("/api/instances").json()["results"][0]["price"]
    assert price == {
        "kind": "on-demand",
        "term_months": 0,
        "region": "cn-beijing",
        "price_per_hour": 14.0476,
        "price_per_gpu_hour": 1.756,  # 1.75595 rounded half-even once
        "currency": "USD",
        "observed_at": "2026-11-01T00:00:00Z",
        "is_stale": True,
        "available": None,
        "source_url": "https://docs.example.com/spec",  # each price names its own source
        "basis": "provider",  # and who states it there
        "original_price": 100.0,
        "original_currency": "CNY",
        "exchange_rate_date": "2025-10-21",
    }


def test_a_pcie_only_instance_has_a_null_nvlink(client, catalog):
    rows = client.get("/api/instances?nvlink=false").json()["results"]
    assert [r["nvlink"] for r in rows] == [None]


def test_a_row_without_a_matching_price_has_a_null_price(client, catalog):
    rows = {r["slug"]: r for r in client.get("/api/instances").json()["results"]}
    assert rows["mystery-8x"]["price"] is None
    assert rows["mystery-8x"]["prices"] == []
    assert len(rows["ib-8x"]["prices"]) == 2


def test_bad_parameters_answer_400_with_the_contract_shape(client, catalog):
    response = client.get("/api/instances?nvlink=maybe&gpu__slug=h100&page_size=999")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_parameters"
    assert set(body["fields"]) == {"nvlink", "gpu__slug", "page_size"}


def test_a_page_past_the_end_is_invalid(client, catalog):
    response = client.get("/api/instances?page=2")
    assert response.status_code == 400
    assert "page" in response.json()["fields"]


def test_paging_links_to_the_next_page_keeping_the_filters(client, catalog):
    body = client.get("/api/instances?page_size=2&nvlink=true").json()
    assert body["count"] == 4
    assert len(body["results"]) == 2
    assert "nvlink=true" in body["next"]
    assert "page=2" in body["next"]
    second = client.get(body["next"]).json()
    assert second["next"] is None
    assert {r["slug"] for r in body["results"] + second["results"]} == {
        "ib-8x",
        "efa-8x",
        "tcpx-8g",
        "2a6000-20v",
    }


def api_slugs(client, params: str) -> list[str]:
    return [
        r["slug"] for r in client.get(f"/api/instances?{params}&page_size=200").json()["results"]
    ]


@pytest.mark.parametrize(
    "params",
    ["", "nvlink=true&sort=-fabric_gbps", "fabric=infiniband&fabric=efa", "max_gpu_hour=3.5"],
)
def test_csv_and_json_exports_hold_exactly_the_api_rows_in_order(client, catalog, params):
    expected = api_slugs(client, params)
    as_json = client.get(f"/?{params}&format=json")
    assert as_json["Content-Disposition"].startswith("attachment")
    exported = json.loads(as_json.content)
    assert exported["count"] == len(expected)
    assert [r["slug"] for r in exported["results"]] == expected
    as_csv = client.get(f"/?{params}&format=csv")
    assert as_csv["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(as_csv.content.decode())))
    assert [r["slug"] for r in rows] == expected


def test_the_csv_header_uses_the_api_names_joined_by_underscores(client, catalog):
    header = client.get("/?format=csv").content.decode().splitlines()[0].split(",")
    for name in ("id", "provider", "gpu_count", "nvlink_technology", "nvlink_domain_size"):
        assert name in header
    for name in ("fabric_bandwidth_gbits_per_s", "price_price_per_gpu_hour", "price_kind"):
        assert name in header


def test_the_csv_shows_cny_when_asked_and_json_stays_usd(client, cny_row):
    rows = list(
        csv.DictReader(io.StringIO(client.get("/?format=csv&currency=CNY").content.decode()))
    )
    assert rows[0]["price_currency"] == "CNY"
    assert Decimal(rows[0]["price_price_per_hour"]) == Decimal("100.0")
    exported = json.loads(client.get("/?format=json&currency=CNY").content)
    assert exported["results"][0]["price"]["currency"] == "USD"


def test_an_empty_export_still_has_a_header(client, catalog):
    body = client.get("/?format=csv&provider=gcp&nvlink=false").content.decode()
    assert body.startswith("id,provider,name,slug")
    assert len(body.splitlines()) == 1


@pytest.mark.parametrize("count", [10, 100, 500])
def test_the_api_query_count_does_not_grow_with_rows(
    client, db, count, django_assert_max_num_queries
):
    provider = Provider.objects.create(
        slug="bulk", name="Bulk", website="https://b.example", kind="marketplace"
    )
    region = Region.objects.create(provider=provider, code="r1", geo="eu")
    gpu = GpuModel.objects.create(
        slug="b200", vendor="nvidia", name="B200", form_factor="sxm", memory_gib=180
    )
    for n in range(count):
        make_offer(make_instance(provider, gpu, name=f"n{n}", link=NVSWITCH_8), region)
    # The API: the data version, the rates, the count, the page's rows, then their offers,
    # purchase modes and collective results (7 queries), at any number of rows.
    for _ in range(2):
        with django_assert_max_num_queries(7):
            assert client.get("/api/instances?page_size=200&nvlink=true").status_code == 200
    # The page: the version, the rates and the form's choice lists (one statement), the counts,
    # the rows and, for a filtered page, their matching offers.
    with django_assert_max_num_queries(5):
        assert client.get("/?nvlink=true").status_code == 200
    with django_assert_max_num_queries(7):
        assert client.get("/?format=csv").status_code == 200


def test_the_openapi_document_lists_every_filter_and_the_error_answers(client, db):
    document = client.get("/api/openapi.json").json()
    assert document["openapi"].startswith("3.")
    operation = document["paths"]["/api/instances"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"q", "gpu", "nvlink", "nvswitch", "fabric", "max_gpu_hour", "sort", "format"} <= names
    assert {"200", "400", "429"} <= set(operation["responses"])


def test_the_page_query_count_does_not_grow_with_regions(client, db, django_assert_max_num_queries):
    """The region choices name their provider: one join, not a query per region. A cold default
    page sends four statements: the data version, the reference data (the rates and the GPU,
    provider and region choices in one), the counts and the page's rows."""
    provider = Provider.objects.create(
        slug="many", name="Many regions", website="https://m.example", kind="marketplace"
    )
    for n in range(60):
        Region.objects.create(provider=provider, code=f"r{n}", geo="eu")
    with django_assert_max_num_queries(4):
        assert client.get("/").status_code == 200
