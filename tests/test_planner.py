"""The cluster planner: `/api/plan` and `/plan/` on the small catalog of traps (tests/conftest.py)."""

from __future__ import annotations

import pytest

from offerings.models import Fabric, GpuModel

pytestmark = pytest.mark.usefixtures("catalog")


@pytest.fixture(autouse=True)
def computable_h100(catalog):
    """The estimator needs the GPU's dense BF16 rate (NVIDIA's H100 SXM figure)."""
    GpuModel.objects.filter(slug="h100-sxm").update(bf16_dense_tflops=989.4)


def plan(client, query: str) -> dict:
    response = client.get(f"/api/plan?{query}")
    assert response.status_code == 200, response.content
    return response.json()


def by_name(body: dict) -> dict:
    shapes: dict = {}
    for item in body["results"]:
        shapes.setdefault(item["instance"]["name"], []).append(item)
    return shapes


def test_gpus_add_up_and_prices_are_nodes_times_the_instance_price(client):
    body = plan(client, "gpus=64&gpu=h100-sxm")
    shapes = by_name(body)
    ib = {item["price_kind"]: item for item in shapes["ib.8x"]}
    assert (ib["on-demand"]["nodes"], ib["on-demand"]["gpus"]) == (8, 64)
    assert ib["on-demand"]["price_per_hour_usd"] == 8 * 24.00
    assert "spot" not in ib  # spot capacity competes only when asked for
    spot = {i["price_kind"]: i for i in by_name(plan(client, "gpus=64&price_kind=spot"))["ib.8x"]}
    assert spot["spot"]["price_per_hour_usd"] == 8 * 8.00
    assert spot["spot"]["price_per_gpu_hour_usd"] == 1.00
    assert ib["on-demand"]["fabric"] == "infiniband"
    assert ib["on-demand"]["fabric_gbits_per_s_per_gpu"] == 400
    # One NVSwitch board of 8 is not one domain for 64 GPUs.
    assert ib["on-demand"]["one_nvlink_domain"] is False
    # A type with no price gives one shape without a price.
    (mystery,) = shapes["mystery.8x"]
    assert mystery["price_per_hour_usd"] is None
    assert mystery["price_kind"] is None


def test_feasible_shapes_come_first_and_the_rest_say_why(client):
    body = plan(client, "gpus=16&gpu=h100-sxm")
    feasible = [item["feasible"] for item in body["results"]]
    assert feasible == sorted(feasible, reverse=True)
    reasons = {item["instance"]["name"]: item["reason"] for item in body["results"]}
    assert reasons["ib.8x"] is None
    assert "not stated" in reasons["mystery.8x"]  # unknown multi-node booking
    # Feasible shapes by total price per hour: the on-demand IB shape (2 x 24.00) first; its
    # spot price (2 x 8.00) is left out, since spot capacity can go away mid-run.
    first = body["results"][0]
    assert (first["instance"]["name"], first["price_kind"]) == ("ib.8x", "on-demand")
    assert "spot" not in {item["price_kind"] for item in body["results"]}


def test_unknown_max_nodes_stays_feasible_with_a_warning_and_a_stated_one_binds(client, catalog):
    body = plan(client, "gpus=16&provider=aws&gpu=h100-sxm")
    efa = by_name(body)["efa.8x"][0]
    assert efa["feasible"] is True
    assert any("not stated" in warning for warning in efa["warnings"])
    Fabric.objects.filter(instance=catalog["ib"]).update(max_nodes=1)
    ib = by_name(plan(client, "gpus=16&gpu=h100-sxm"))["ib.8x"][0]
    assert ib["feasible"] is False
    assert "largest self-serve cluster is 1" in ib["reason"]


def test_one_node_needs_no_fabric_and_a_single_node_type_cannot_grow(client):
    small = by_name(plan(client, "gpus=4&gpu=l40s"))["pcie.4x"][0]
    assert (small["nodes"], small["feasible"]) == (1, True)
    big = by_name(plan(client, "gpus=8&gpu=l40s"))["pcie.4x"][0]
    assert (big["nodes"], big["feasible"]) == (2, False)
    assert "no self-serve multi-node booking" in big["reason"]


def test_budgets_exclude_dearer_and_unpriced_shapes(client):
    names = {
        (i["instance"]["name"], i["price_kind"])
        for i in plan(client, "gpus=16&max_price_per_hour=50")["results"]
    }
    # ib: 2 x 24 = 48 fits (spot is not weighed unless asked); efa 2 x 40 = 80 does not;
    # unpriced shapes are out.
    assert ("ib.8x", "on-demand") in names
    assert ("ib.8x", "spot") not in names
    assert not any(name == "efa.8x" for name, _ in names)
    assert not any(kind is None for _, kind in names)
    per_gpu = plan(client, "gpus=16&max_gpu_hour=2")["results"]
    assert {(i["instance"]["name"], i["price_kind"]) for i in per_gpu} == {
        ("pcie.4x", "reserved"),
        ("2A6000.20V", "on-demand"),
    }


def test_rdma_only_and_price_kind_filters_apply(client):
    names = {i["instance"]["name"] for i in plan(client, "gpus=16&rdma=true")["results"]}
    assert names == {"ib.8x", "efa.8x"}
    kinds = {i["price_kind"] for i in plan(client, "gpus=8&price_kind=spot")["results"]}
    assert kinds == {"spot"}


def test_with_a_job_shapes_carry_the_estimate_and_rank_by_cost_per_token(client):
    body = plan(client, "gpus=16&gpu=h100-sxm&params_b=7&mode=train-fsdp")
    assert body["assumptions"]["ranking"] == "cost_per_billion_tokens_usd"
    costed = [i for i in body["results"] if i["cost_per_billion_tokens_usd"] is not None]
    assert costed
    assert all(i["step_s"] > 0 and 0 < i["efficiency"] <= 1 for i in costed)
    feasible_costs = [
        i["cost_per_billion_tokens_usd"]
        for i in body["results"]
        if i["feasible"] and i["cost_per_billion_tokens_usd"] is not None
    ]
    assert feasible_costs == sorted(feasible_costs)


def test_the_estimate_agrees_with_the_estimator_api(client):
    shape = next(
        i
        for i in plan(client, "gpus=16&gpu=h100-sxm&params_b=7&mode=train-fsdp")["results"]
        if i["instance"]["name"] == "tcpx-8g"
    )
    estimate = client.get(
        "/api/estimate?params_b=7&mode=train-fsdp&nodes=2&gpu=h100-sxm&provider=gcp"
    ).json()
    (row,) = [r for r in estimate["results"] if r["nodes"] == 2]
    assert shape["step_s"] is not None
    assert shape["step_s"] == row["step_s"]
    assert shape["cost_per_billion_tokens_usd"] == row["cost_per_billion_tokens_usd"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("", "gpus"),
        ("gpus=0", "gpus"),
        ("gpus=100001", "gpus"),
        ("gpus=eight", "gpus"),
        ("gpus=8&max_price_per_hour=-1", "max_price_per_hour"),
        ("gpus=8&max_price_per_hour=nan", "max_price_per_hour"),
        ("gpus=8&gpu=nope", "gpu"),
        ("gpus=8&params_b=70&mode=sing", "mode"),
        ("gpus=8&page=99", "page"),
    ],
)
def test_bad_input_gets_a_clear_400_naming_the_field(client, query, field):
    response = client.get(f"/api/plan?{query}")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_parameters"
    assert field in body["fields"]


def test_pages_share_one_ranking(client):
    whole = plan(client, "gpus=8&page_size=200")["results"]
    first = plan(client, "gpus=8&page_size=3")
    second = client.get(first["next"]).json()
    assert first["results"] + second["results"] == whole[:6]
    assert first["count"] == len(whole)


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_page_lists_shapes_in_both_languages(client, prefix):
    response = client.get(f"{prefix}/plan/?gpus=16&gpu=h100-sxm")
    assert response.status_code == 200
    html = response.content.decode()
    assert "ib.8x" in html
    assert "/instances/aws/ib-8x/" in html
    if prefix:
        assert 'lang="zh-hans"' in html
    blank = client.get(f"{prefix}/plan/")
    assert blank.status_code == 200
    assert b'name="gpus"' in blank.content


def test_each_shape_says_how_the_type_can_be_bought(client):
    shapes = by_name(plan(client, "gpus=8&gpu=h100-sxm"))
    kinds = {mode["kind"] for mode in shapes["ib.8x"][0]["purchase_modes"]}
    assert kinds == {"on-demand", "spot"}  # the kinds its stored prices show
    assert shapes["mystery.8x"][0]["purchase_modes"] == []
    html = client.get("/plan/?gpus=8&gpu=h100-sxm").content.decode()
    assert "Ways to buy it:" in html


def test_a_training_job_that_does_not_fit_says_so_and_ranks_after_the_costed(client):
    # 70B with plain data parallelism: every GPU holds all 70e9 x 16 bytes of states.
    body = plan(client, "gpus=16&gpu=h100-sxm&params_b=70&mode=train-ddp")
    assert body["results"]
    assert all(item["fits"] is False for item in body["results"])
    assert all(item["cost_per_billion_tokens_usd"] is None for item in body["results"])
    assert all("GiB per GPU" in item["job_reason"] for item in body["results"])
    html = client.get("/plan/?gpus=16&gpu=h100-sxm&params_b=70&mode=train-ddp").content.decode()
    results = html.split('id="results"', 1)[1]
    assert results.count('class="job-reason"') == len(body["results"])
    assert "GiB per GPU" in results
    chinese = client.get("/zh-hans/plan/?gpus=16&gpu=h100-sxm&params_b=70&mode=train-ddp")
    assert "GiB per GPU" not in chinese.content.decode()
    # 7B sharded fits: costed shapes come before the shapes it does not fit.
    mixed = plan(client, "gpus=16&gpu=h100-sxm&params_b=7&mode=train-fsdp")["results"]
    feasible = [item for item in mixed if item["feasible"]]
    costed = [item["cost_per_billion_tokens_usd"] is not None for item in feasible]
    assert costed == sorted(costed, reverse=True)


def test_inference_ranks_the_shapes_the_model_fits_by_their_price_per_hour(client):
    body = plan(client, "gpus=16&gpu=h100-sxm&params_b=7&mode=inference")
    assert body["assumptions"]["ranking"] == "cost_per_hour_usd"
    fitting = [i for i in body["results"] if i["feasible"] and i["fits"]]
    assert fitting
    assert all(
        i["cost_per_hour_usd"] == i["price_per_hour_usd"]
        for i in fitting
        if i["price_per_hour_usd"]
    )
    costs = [
        i["cost_per_hour_usd"] for i in body["results"] if i["feasible"] and i["cost_per_hour_usd"]
    ]
    assert costs == sorted(costs)
    html = client.get("/plan/?gpus=16&gpu=h100-sxm&params_b=7&mode=inference").content.decode()
    assert "fit one NVLink domain of this shape" in html
    assert "cannot cost" not in html


def test_the_pages_no_job_choice_ignores_a_model_size_left_in_the_form(client):
    response = client.get("/zh-hans/plan/?gpus=16&gpu=h100-sxm&params_b=70&mode=")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="alert"' not in html
    assert "ib.8x" in html
    # The API still says what is missing, and the page says it in Chinese.
    assert "mode" in client.get("/api/plan?gpus=16&params_b=70").json()["fields"]
    bad = client.get("/zh-hans/plan/?gpus=16&params_b=-1&mode=train-fsdp").content.decode()
    assert "Must be greater than 0" not in bad


def test_a_providers_stated_self_serve_limit_binds_and_silences_the_warning(client, catalog):
    from datetime import date

    from offerings.models import ProviderReadiness

    aws = catalog["ib"].provider
    ProviderReadiness.objects.create(
        provider=aws,
        fact="max_self_serve_gpus",
        gpus=16,
        basis="provider",
        source_url="https://docs.example.com/quotas",
        verified_at=date(2026, 12, 1),
    )
    within = by_name(plan(client, "gpus=16&provider=aws&gpu=h100-sxm"))["efa.8x"][0]
    assert within["feasible"] is True
    assert not any("not stated" in warning for warning in within["warnings"])
    beyond = by_name(plan(client, "gpus=24&provider=aws&gpu=h100-sxm"))["efa.8x"][0]
    assert beyond["feasible"] is False
    assert "at most 16" in beyond["reason"]


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_a_plan_with_no_matching_shape_says_so(client, prefix):
    response = client.get(f"{prefix}/plan/?gpus=64&gpu=h100-sxm&price_kind=capacity-block")
    html = response.content.decode()
    assert 'class="plan-empty"' in html
    if prefix:
        assert "No instance type and price match" not in html


def test_the_page_marks_a_stale_price_and_not_a_fresh_one(client, catalog):
    from django.utils import timezone

    from offerings.models import Offer

    html = client.get("/plan/?gpus=8&gpu=h100-sxm&price_kind=spot").content.decode()
    assert 'class="stale"' in html  # the fixtures' prices were read on 2026-11-01
    Offer.objects.update(observed_at=timezone.now())
    fresh = client.get("/plan/?gpus=8&gpu=h100-sxm&price_kind=spot").content.decode()
    assert 'class="stale"' not in fresh
    chinese = client.get("/zh-hans/plan/?gpus=8&gpu=h100-sxm&price_kind=spot").content.decode()
    assert "ib.8x" in chinese


def test_without_a_job_the_ranking_reads_fields_and_only_the_page_builds_types(client, monkeypatch):
    from offerings.models import InstanceType

    built = []
    real = InstanceType.from_db.__func__

    def counting(cls, db, field_names, values, *args, **kwargs):
        built.append(values[0])
        return real(cls, db, field_names, values, *args, **kwargs)

    whole = plan(client, "gpus=8&page_size=200")
    monkeypatch.setattr(InstanceType, "from_db", classmethod(counting))
    first = plan(client, "gpus=8&page_size=2")
    assert whole["count"] > 4
    assert first["results"] == whole["results"][:2]  # the same ranking as in full
    shown = {item["instance"]["id"] for item in first["results"]}
    assert set(built) == shown  # no other type was built as a model


def test_a_type_deleted_after_it_was_ranked_is_left_out_of_the_page():
    from offerings.planner import core
    from offerings.planner.views import with_page_rows

    gone = core.PlanRow(10**9, 8, 1, core.PlanFabric(None, None, None, None, None))
    shapes = [core.Shape(gone, 1, 8, None, None, None)]
    with_page_rows(shapes)
    assert shapes == []


def test_a_dated_price_stands_over_a_cheaper_undated_one_of_the_same_kind(client, catalog):
    """As the row's headline: an undated reading never beats a dated one of its kind."""
    from offerings.models import Region
    from tests.conftest import make_offer

    ib = catalog["ib"]
    elsewhere = Region.objects.create(provider=ib.provider, code="xx-undated-1", geo="eu")
    make_offer(ib, elsewhere, price="16.00", observed_at=None)
    shapes = by_name(plan(client, "gpus=16&gpu=h100-sxm"))
    on_demand = next(s for s in shapes["ib.8x"] if s["price_kind"] == "on-demand")
    assert on_demand["price_per_hour_usd"] == 2 * 24.00
    assert on_demand["region"] != "xx-undated-1"


def test_cannot_be_booked_self_serve_and_does_not_fit_are_separate_answers(client):
    # 1,024 GPUs of ib.8x take 128 nodes, beyond its stated 64: not bookable self-serve. A 7B
    # model still fits it, so the job's figures stand, and the reason is the booking's alone.
    body = plan(client, "gpus=1024&gpu=h100-sxm&provider=aws&params_b=7&mode=train-fsdp")
    (ib,) = [i for i in body["results"] if i["instance"]["name"] == "ib.8x"]
    assert ib["feasible"] is False
    assert "largest self-serve cluster is 64" in ib["reason"]
    assert ib["fits"] is True
    assert ib["job_reason"] is None
    assert ib["step_s"] > 0
    assert ib["cost_per_billion_tokens_usd"] > 0
    # A model that does not fit in memory says so in job_reason, never with a booking reason.
    big = plan(client, "gpus=1024&gpu=h100-sxm&provider=aws&params_b=70&mode=train-ddp")
    (ib,) = [i for i in big["results"] if i["instance"]["name"] == "ib.8x"]
    assert ib["fits"] is False
    assert "GiB per GPU" in ib["job_reason"]
    assert "self-serve" not in ib["job_reason"]
    assert "nodes" not in ib["job_reason"]
    html = client.get(
        "/plan/?gpus=1024&gpu=h100-sxm&provider=aws&params_b=7&mode=train-fsdp"
    ).content.decode()
    row = html.split("<code>ib.8x</code>", 1)[1].split("</tr>", 1)[0]
    assert 'class="plan-reason">needs 128 nodes' in row
    assert 'class="job-reason"' not in row


def test_tokens_total_gives_each_training_shape_its_run_time_and_cost(client):
    body = plan(
        client,
        "gpus=16&gpu=h100-sxm&params_b=7&mode=train-fsdp&tokens_per_step=4194304"
        "&tokens_total=1000000000000",
    )
    assert body["assumptions"]["tokens_total"] == 10**12
    (ib,) = [
        i
        for i in body["results"]
        if i["instance"]["name"] == "ib.8x" and i["price_kind"] == "on-demand"
    ]
    steps = -(-(10**12) // 4194304)  # whole steps
    assert ib["run_hours"] == pytest.approx(steps * ib["step_s"] / 3600, rel=1e-5)
    assert ib["run_cost_usd"] == pytest.approx(ib["run_hours"] * ib["price_per_hour_usd"], rel=1e-5)
    # The run costs what a billion tokens costs, a thousand times over (up to the last step).
    assert ib["run_cost_usd"] == pytest.approx(ib["cost_per_billion_tokens_usd"] * 1000, rel=1e-3)
    (mystery,) = [i for i in body["results"] if i["instance"]["name"] == "mystery.8x"]
    assert mystery["run_cost_usd"] is None  # no price on record
    # Without tokens_total the fields are absent; the page shows the run in both languages.
    plain = plan(client, "gpus=16&gpu=h100-sxm&params_b=7&mode=train-fsdp")
    assert "run_hours" not in plain["results"][0]
    for prefix in ("", "/zh-hans"):
        html = client.get(
            f"{prefix}/plan/?gpus=16&gpu=h100-sxm&params_b=7&mode=train-fsdp"
            "&tokens_total=1000000000000&currency=USD"
        ).content.decode()
        assert 'data-label="' in html
        assert '<table class="plan-table">' in html
        cost = f"${ib['run_cost_usd']:,.2f}"
        assert cost in html


@pytest.mark.parametrize(
    "query",
    [
        "gpus=8&tokens_total=1000",  # no job
        "gpus=8&params_b=7&mode=inference&tokens_total=1000",  # not training
        "gpus=8&params_b=7&mode=train-fsdp&tokens_total=0",
        "gpus=8&params_b=7&mode=train-fsdp&tokens_total=1e12",
        "gpus=8&params_b=7&mode=train-fsdp&tokens_total=" + "9" * 5000,
    ],
)
def test_a_bad_run_length_is_a_400_naming_it(client, query):
    response = client.get(f"/api/plan?{query}")
    assert response.status_code == 400
    assert "tokens_total" in response.json()["fields"]
    if "mode=" in query:  # the page reads a run length only with a job chosen
        assert client.get(f"/plan/?{query}").status_code == 400


def test_the_planner_results_are_a_table_with_the_totals_in_the_pages_currency(client, cny_rate):
    html = client.get("/zh-hans/plan/?gpus=16&gpu=h100-sxm").content.decode()
    table = html.split('<table class="plan-table">', 1)[1].split("</table>", 1)[0]
    headers = table.split("</thead>", 1)[0]
    for heading in ("GPUs", "Region"):
        assert heading not in headers  # said in Chinese
    assert table.count("<tr") == 1 + len(plan(client, "gpus=16&gpu=h100-sxm")["results"])
    assert "¥384.00" in table  # CNY by default on the Chinese site: 2 x 24.00 / 0.125
    usd = client.get("/zh-hans/plan/?gpus=16&gpu=h100-sxm&currency=USD").content.decode()
    assert "$48.00" in usd  # 2 nodes x 24.00
    assert 'name="currency" value="USD"' in usd  # the form keeps the choice
    assert "/instances/aws/ib-8x/?currency=USD" in usd


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_navigations_link_with_a_currency_opens_the_empty_form(client, prefix):
    # Every link of the navigation carries the reader's currency: that alone asks for nothing.
    response = client.get(f"{prefix}/plan/?currency=USD")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="alert"' not in html
    assert 'name="currency" value="USD"' in html
    assert client.get(f"{prefix}/plan/?currency=USD&gpus=").status_code == 400


def test_what_no_source_says_is_unknown_not_no(client):
    # mystery.8x: nothing is known of its network, so 16 GPUs (2 nodes) are not known to be
    # bookable: not feasible, and said as unknown; pcie.4x is known not to grow past one node.
    body = plan(client, "gpus=16")
    shapes = by_name(body)
    (mystery,) = shapes["mystery.8x"]
    assert mystery["feasible"] is False
    assert mystery["bookable"] is None
    assert all(item["bookable"] is False for item in shapes["pcie.4x"])
    assert all(item["bookable"] is True for item in shapes["ib.8x"])
    html = client.get("/plan/?gpus=16").content.decode()
    row = html.split("<code>mystery.8x</code>", 1)[1].split("</tr>", 1)[0]
    assert '<span class="unknown">unknown</span>' in row
    # A job whose step cannot be timed (the L40S's TFLOPS are not on record here) fits
    # "unknown", not "no".
    html = client.get("/plan/?gpus=4&params_b=1&mode=train-fsdp").content.decode()
    row = html.split("<code>pcie.4x</code>", 1)[1].split("</tr>", 1)[0]
    job = row.split('class="plan-job"', 1)[1]
    assert job.split("</td>", 1)[0].count('<span class="unknown">unknown</span>') == 1


def test_the_run_cost_is_money_in_cents_not_six_significant_digits(client):
    body = plan(
        client, "gpus=16&gpu=h100-sxm&params_b=7&mode=train-fsdp&tokens_total=1000000000000000"
    )
    costs = [i["run_cost_usd"] for i in body["results"] if i["run_cost_usd"] is not None]
    assert costs
    assert any(cost >= 10**6 for cost in costs)
    assert all(round(cost, 4) == cost for cost in costs)
    # Six significant digits would have cut a seven-figure cost's last digits to zeros.
    assert any(float(f"{cost:.6g}") != cost for cost in costs if cost >= 10**6)


def test_a_fabric_known_to_be_rdma_of_no_stated_kind_is_said_so_as_in_the_table(client):
    # Tencent's HCCPNV6 case: the provider says RDMA, not which kind. The planner's "between
    # nodes" cell names it as the table's badge does, not "Unknown".
    Fabric.objects.filter(instance__name="mystery.8x").update(rdma=True)
    html = client.get("/plan/?gpus=8").content.decode()
    row = html.split("<code>mystery.8x</code>", 1)[1].split("</tr>", 1)[0]
    assert "RDMA (kind not stated)" in row
