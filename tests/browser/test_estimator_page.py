"""A person using the estimator in real Chromium: the form, the shareable URL, errors, no JS."""

import re

import pytest

from tests.estimator.test_views import make_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cluster(transactional_db):
    return make_cluster()


def result_keys(page) -> list[str]:
    return page.eval_on_selector_all(
        "#results tr[data-key]", "rows => rows.map(r => r.dataset.key)"
    )


def test_the_form_estimates_and_the_url_holds_every_choice(page, cluster):
    page.goto("/estimate/")
    assert page.locator("tr[data-key]").count() == 0
    page.select_option("#id_mode", "train-fsdp")
    page.fill("#id_params_b", "7")
    page.fill("#id_mfu", "0.5")
    # The page asks for GPUs, as the planner does.
    page.uncheck("input[name=gpus][value='128']")
    page.check("input[name=gpus][value='256']")
    page.click("button:has-text('Estimate')")
    page.wait_for_url(re.compile(r"params_b=7"))
    for part in ("mode=train-fsdp", "mfu=0.5", "gpus=256"):
        assert part in page.url
    assert "gpus=128" not in page.url
    assert "nodes=" not in page.url
    keys = result_keys(page)
    assert keys
    assert page.is_visible("svg[aria-labelledby='chart-title chart-desc']")
    assert "efficiency" in page.text_content("#chart-title").lower()
    assert not page.console_errors  # a CSP violation (inline style) would show here

    shared = page.context.new_page()  # the link alone reproduces the result
    shared.goto(page.url)
    assert result_keys(shared) == keys
    assert shared.input_value("#id_params_b") == "7"
    assert shared.is_checked("input[name=gpus][value='256']")
    assert not shared.is_checked("input[name=gpus][value='128']")
    assert "GPUs (log scale)" in shared.text_content(
        "svg[aria-labelledby='chart-title chart-desc']"
    )


def test_a_bad_value_shows_its_message_next_to_the_field(page, cluster):
    page.goto("/estimate/")
    page.select_option("#id_mode", "train-ddp")
    page.fill("#id_params_b", "0")  # the browser's min=0 allows it; the model does not
    page.click("button:has-text('Estimate')")
    page.wait_for_selector("#err-params_b:not(:empty)")
    assert "greater than 0" in page.inner_text("#err-params_b")
    assert page.get_attribute("#id_params_b", "aria-invalid") == "true"
    assert page.is_visible(".errors")
    page.goto("/estimate/?params_b=1&mode=train-ddp&ids=acme/nope")
    assert "Unknown instance: acme/nope" in page.inner_text("#err-ids")


def test_the_interconnect_explains_itself_in_the_table(page, cluster):
    page.goto("/estimate/?params_b=7&mode=train-fsdp&nodes=1&nodes=4&nodes=16")
    summary = page.inner_text("section.why")
    assert "InfiniBand" in summary
    assert "PCIe / TCP over the general network" in summary
    first = page.locator("#results tr[data-key]").first
    assert first.locator("a code").inner_text() in {"ib.8x", "efa.8x", "single.8x"}
    assert first.locator("svg.bar rect.bar-compute").count() == 1
    assert page.is_visible("tbody[data-tier='3'] th[scope=rowgroup]")


def test_without_javascript_a_worked_example_and_the_form_still_work(page_without_js, cluster):
    page = page_without_js
    page.goto("/estimate/")
    page.click("a:has-text('70B inference')")
    page.wait_for_url(re.compile(r"mode=inference"))
    holders = page.inner_text("section.holders")
    assert "ib.8x" in holders
    assert "pcie.8x" not in holders
    page.fill("#id_params_b", "1")
    page.select_option("#id_mode", "train-ddp")
    page.click("button:has-text('Estimate')")
    page.wait_for_url(re.compile(r"mode=train-ddp"))
    assert page.locator("tr[data-key]").count() > 0
