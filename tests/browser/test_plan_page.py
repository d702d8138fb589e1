"""The cluster planner's page in real Chromium: the form, both languages, a phone at 390 px."""

import pytest

from offerings.models import GpuModel

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def planned(catalog):
    GpuModel.objects.filter(slug="h100-sxm").update(bf16_dense_tflops=989.4)
    return catalog


def test_a_buyer_asks_for_16_gpus_and_sees_feasible_shapes_first(page, planned):
    page.goto("/plan/")
    page.fill("#id_gpus", "16")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url("**/plan/?*gpus=16*")
    shapes = page.locator("table.plan-table tbody tr.plan-shape")
    assert shapes.count() >= 4
    first = shapes.first
    assert "ib.8x" in first.inner_text()
    cells = first.locator("td")
    # #, nodes, GPUs, price kind and region, price per hour of the shape, ...
    assert cells.nth(1).inner_text() == "2"
    assert cells.nth(2).inner_text() == "16"
    assert "$48.00" in cells.nth(4).inner_text()
    # The single-node PCIe type cannot reach 16 GPUs self-serve, and says why in its own cell.
    infeasible = page.locator("tr.plan-shape.infeasible", has_text="pcie.4x")
    assert "no self-serve multi-node booking" in infeasible.locator("td.booking").inner_text()
    # The table fits the window: no sideways scrolling at 1,400 px.
    assert page.evaluate("document.querySelector('.plan-table').scrollWidth") <= 1400
    # A shape links to its detail page.
    first.get_by_role("link", name="ib.8x").click()
    page.wait_for_url("**/instances/aws/ib-8x/")
    assert page.console_errors == []


def test_with_a_job_the_shapes_are_ranked_by_cost_per_billion_tokens(page, planned):
    page.goto("/plan/?gpus=16&gpu=h100-sxm")
    page.fill("#id_params_b", "7")
    page.select_option("#id_mode", "train-fsdp")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url("**mode=train-fsdp*")
    assert "Ranked by the estimated cost per billion tokens;" in page.content()
    costed = page.locator("tr.plan-shape td.cost").first.inner_text()
    assert costed.startswith("$")
    # The tokens of the whole run add its time and cost, as columns of their own.
    page.fill("#id_tokens_total", "1000000000000")
    page.get_by_role("button", name="Plan").click()
    page.wait_for_url("**tokens_total=1000000000000*")
    headers = page.locator("table.plan-table thead th").all_inner_texts()
    assert "Run time" in headers
    assert "Run cost" in headers
    assert page.evaluate("document.querySelector('.plan-table').scrollWidth") <= 1400


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_page_fits_a_phone_in_both_languages(browser, live_server, planned, prefix):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, base_url=live_server.url, is_mobile=True
    )
    phone = context.new_page()
    errors = []
    phone.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    phone.goto(f"{prefix}/plan/?gpus=16&gpu=h100-sxm")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    shape = phone.locator("tr.plan-shape").first
    box = shape.bounding_box()
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= 390
    # Stacked on a phone, every value keeps its column's name.
    labels = shape.locator("td[data-label]")
    for index in range(labels.count()):
        cell = labels.nth(index)
        if cell.is_visible():
            label = cell.get_attribute("data-label")
            assert cell.evaluate("c => getComputedStyle(c, '::before').content") == f'"{label}"'
    if prefix:
        assert "规划集群" in phone.content()
        assert "按需" in shape.inner_text()
    assert errors == []
    context.close()


@pytest.mark.parametrize("path", ["/plan/", "/estimate/", "/zh-hans/plan/", "/zh-hans/estimate/"])
def test_planner_and_estimator_ask_for_gpus_with_the_same_pickers(page, planned, path):
    page.goto(path)
    form = page.locator("form.estimator-form")
    # The number of GPUs wanted, on both pages.
    gpus = form.locator('input[name="gpus"]')
    assert gpus.count() >= 1
    # GPU and provider: checklists with a filter box, no Ctrl-click multi-select.
    assert form.locator("select[multiple]").count() == 0
    for name in ("gpu", "provider"):
        box = page.locator(f"#find-{name}")
        assert box.is_visible()
        options = page.locator(f"#list-{name} label")
        total = options.count()
        assert total >= 2
        first = options.first.inner_text().strip()
        box.fill(first)
        visible = [options.nth(i).is_visible() for i in range(total)]
        assert visible[0]
        assert sum(visible) < total
        box.fill("")
    assert page.console_errors == []
