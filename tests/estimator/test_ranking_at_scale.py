"""The estimator ranks every result from each hardware's figures and each row's price, and builds
full records for the page only (offerings.estimator.ranking): the order and every number must be
what estimating every row in full gives, on the shipped catalog (many types, unknown facts,
prices in other currencies, rows without a price, shared hardware)."""

import pytest
from django.http import QueryDict
from django.test import RequestFactory

from offerings.estimator import ranking
from offerings.estimator.core import FabricSpec, GpuLinkSpec, InstanceSpec, Job
from offerings.estimator.estimation import estimate, rank_key, rounded
from offerings.estimator.ranking import (
    first_results,
    hardware,
    instance_spec,
    lean_rows,
    ranked_results,
)
from offerings.estimator.views import parse_estimate_query
from offerings.money import RateTable
from offerings.table.rows import attach_row_offers, detail_path

QUERIES = [
    "params_b=70&mode=train-fsdp&nodes=1&nodes=2&nodes=4&nodes=8",
    "params_b=8&mode=train-ddp&nodes=1&nodes=2",
    "params_b=405&mode=train-fsdp&nodes=4&nodes=16&nodes=64&rdma=true",
    "params_b=70&mode=inference&context_tokens=32768&batch=4&nodes=1&nodes=2",
    "params_b=1&mode=train-fsdp&price_kind=spot&nodes=1&nodes=2",
]


def full_run(params: str) -> list[dict]:
    """The estimate of every row in full, ranked as the API ranks it (the way it was done)."""
    query = parse_estimate_query(QueryDict(params))
    rates = RateTable()
    absolute = RequestFactory().get("/").build_absolute_uri
    rows = attach_row_offers(query.listing.filterset.qs)
    specs = [instance_spec(row, rates, absolute(detail_path(row))) for row in rows]
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


def test_the_lean_rows_are_the_rows_hardware_and_price(shipped):
    query = parse_estimate_query(QueryDict(QUERIES[0]))
    rates = RateTable()
    full = {
        row.pk: instance_spec(row, rates) for row in attach_row_offers(query.listing.filterset.qs)
    }
    lean = lean_rows(query.listing.filterset.qs, rates)
    assert [pk for pk, _, _ in lean] == list(full)
    priced = 0
    for pk, spec, price in lean:
        assert spec == hardware(full[pk])
        assert price == full[pk].price_per_hour_usd
        priced += price is not None
    assert priced > 50
    # Types of one hardware share one spec, so each hardware is estimated once.
    distinct = {hardware(spec) for spec in full.values()}
    assert len({id(spec) for _, spec, _ in lean}) == len(distinct) < len(full)


def test_the_page_shows_the_same_rows_as_the_api(client, shipped):
    params = QUERIES[0]
    api = client.get(f"/api/estimate?{params}&page_size=20").json()["results"]
    html = client.get(f"/estimate/?{params}&page_size=20").content.decode()
    for result in api:
        assert f"<code>{result['instance']['name']}</code>" in html


# -- The first page without timing every collective (ranking.first_results) --------------------


def lean_and_full(params: str):
    query = parse_estimate_query(QueryDict(params))
    lean = lean_rows(query.listing.filterset.qs, RateTable())
    return query.job, lean, ranked_results(lean, query.job, rounded)


@pytest.mark.parametrize("params", [q for q in QUERIES if "inference" not in q])
def test_first_results_are_the_full_rankings_first_or_none(shipped, params):
    job, lean, full = lean_and_full(params)
    in_tier_1 = sum(1 for result in full if result.key[0] == 1)
    assert in_tier_1 > 5  # enough rows for the counts below to mean something
    for count in sorted({1, 2, 9, min(27, in_tier_1), in_tier_1 - 1, in_tier_1}):
        assert first_results(lean, job, rounded, count) == full[:count]
    # Past tier 1 the order needs every row's tier: the caller ranks in full.
    assert first_results(lean, job, rounded, in_tier_1 + 1) is None


def spec(gpus=8, tflops=989.0, nvlink=900.0, fabric=3200.0, max_nodes=None):
    return InstanceSpec(
        id=0,
        name="",
        gpu_count=gpus,
        gpu_memory_gib=80.0,
        bf16_dense_tflops=tflops,
        pcie_generation=5,
        link=GpuLinkSpec("nvlink", "nvswitch", 4, gpus, nvlink),
        fabric=FabricSpec("infiniband", fabric, True, max_nodes),
    )


def test_ties_in_cost_are_cut_by_instance_id_as_the_full_ranking_cuts_them():
    job = Job(params_b=8, mode="train-fsdp", nodes=(1, 2))
    same = spec()
    # Forty rows of one hardware at one price: equal costs, ordered by id then nodes; and rows
    # whose ids come first but whose prices are higher, so bounds and ties interleave.
    rows = [(pk, same, 98.32) for pk in range(100, 140)]
    rows += [(pk, spec(fabric=400.0), 98.33) for pk in range(1, 20)]
    rows += [(pk, spec(tflops=500.0), 60.0) for pk in range(50, 60)]
    full = ranked_results(rows, job, rounded)
    for count in range(1, 70):
        assert first_results(rows, job, rounded, count) == full[:count], count


def test_the_first_page_times_the_collectives_of_few_hardware(monkeypatch):
    job = Job(params_b=70, mode="train-fsdp", nodes=(1, 2, 4, 8))
    # 400 hardware, from fast to slow fabric, at prices that make the fast ones cheapest.
    rows = [
        (pk, spec(fabric=3200.0 - pk * 7, nvlink=900.0 - pk), 40.0 + pk * 0.25)
        for pk in range(1, 401)
    ]
    full = ranked_results(rows, job, rounded)
    timed = []
    real = ranking._hardware_results
    monkeypatch.setattr(
        ranking, "_hardware_results", lambda base, *a: timed.append(base) or real(base, *a)
    )
    assert first_results(rows, job, rounded, 20) == full[:20]
    assert 0 < len(timed) < 40  # of 400
