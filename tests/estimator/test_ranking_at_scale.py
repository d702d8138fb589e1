"""The estimator ranks every result from each hardware's figures and each row's price, and builds
full records for the page only (offerings.estimator.ranking): the order and every number must be
what estimating every row in full gives, on the shipped catalog (many types, unknown facts,
prices in other currencies, rows without a price, shared hardware)."""

import io

import pytest
from django.core.management import call_command
from django.http import QueryDict
from django.test import RequestFactory

from offerings.estimator.estimation import estimate, rank_key
from offerings.estimator.ranking import hardware, lean_specs
from offerings.estimator.views import instance_spec, parse_estimate_query, rounded
from offerings.listing import attach_row_offers
from offerings.money import RateTable

QUERIES = [
    "params_b=70&mode=train-fsdp&nodes=1&nodes=2&nodes=4&nodes=8",
    "params_b=8&mode=train-ddp&nodes=1&nodes=2",
    "params_b=405&mode=train-fsdp&nodes=4&nodes=16&nodes=64&rdma=true",
    "params_b=70&mode=inference&context_tokens=32768&batch=4&nodes=1&nodes=2",
    "params_b=1&mode=train-fsdp&price_kind=spot&nodes=1&nodes=2",
]


@pytest.fixture
def shipped(db):
    call_command("load_catalog", stdout=io.StringIO())


def full_run(params: str) -> list[dict]:
    """The estimate of every row in full, ranked as the API ranks it (the way it was done)."""
    query = parse_estimate_query(QueryDict(params))
    rates = RateTable()
    absolute = RequestFactory().get("/").build_absolute_uri
    rows = attach_row_offers(query.listing.filterset.qs)
    specs = [instance_spec(row, rates, absolute) for row in rows]
    results = [rounded(r.to_dict()) for r in estimate(specs, query.job).results]
    results.sort(key=lambda r: rank_key(r, not query.job.is_training))
    return results


def every_page(client, params: str) -> list[dict]:
    results, url = [], f"/api/estimate?{params}&page_size=9"
    while url:
        body = client.get(url).json()
        results += body["results"]
        url = body["next"]
    return results


@pytest.mark.parametrize("params", QUERIES)
def test_every_page_is_the_full_runs_records_in_the_full_runs_order(client, shipped, params):
    expected = full_run(params)
    assert len(expected) > 9  # several pages
    assert every_page(client, params) == expected


def test_the_lean_specs_are_the_rows_hardware_and_price(shipped):
    query = parse_estimate_query(QueryDict(QUERIES[0]))
    rates = RateTable()
    full = {
        row.pk: instance_spec(row, rates, lambda path: path)
        for row in attach_row_offers(query.listing.filterset.qs)
    }
    lean = lean_specs(query.listing.filterset.qs, rates)
    assert {spec.id for spec in lean} == set(full)
    priced = 0
    for spec in lean:
        assert hardware(spec) == hardware(full[spec.id])
        assert spec.price_per_hour_usd == full[spec.id].price_per_hour_usd
        priced += spec.price_per_hour_usd is not None
    assert priced > 50


def test_the_page_shows_the_same_rows_as_the_api(client, shipped):
    params = QUERIES[0]
    api = client.get(f"/api/estimate?{params}&page_size=20").json()["results"]
    html = client.get(f"/estimate/?{params}&page_size=20").content.decode()
    for result in api:
        assert f"<code>{result['instance']['name']}</code>" in html
