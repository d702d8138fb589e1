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
    shapes = page.locator(".plan-shape")
    assert shapes.count() >= 4
    first = shapes.first
    assert "ib.8x" in first.inner_text()
    assert "2 nodes of 8" in first.inner_text()
    # The single-node PCIe type cannot reach 16 GPUs self-serve, and says why.
    infeasible = page.locator(".plan-shape.infeasible", has_text="pcie.4x")
    assert "no self-serve multi-node booking" in infeasible.inner_text()
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
    assert page.locator(".plan-shape", has_text="per billion tokens").count() >= 1


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
    shape = phone.locator(".plan-shape").first
    box = shape.bounding_box()
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= 390
    if prefix:
        assert "规划集群" in phone.content()
        assert "个节点" in shape.inner_text()
    assert errors == []
    context.close()
