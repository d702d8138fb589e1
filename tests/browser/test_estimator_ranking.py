"""The estimator's ranking as a buyer reads it in Chromium: three tiers, a count sentence that
agrees with the rows, pages with one ranking across them, micro-batches in the form, and a way
from a row that cannot be estimated to the form that corrects it."""

import re

import pytest

from tests.estimator.test_views import make_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRAIN = "params_b=1&mode=train-ddp&nodes=1&nodes=2&nodes=4"


@pytest.fixture
def cluster(transactional_db):
    return make_cluster()


def shown(page) -> list[tuple[str, str]]:
    return page.eval_on_selector_all(
        "#results tr[data-key]", "rows => rows.map(r => [r.dataset.key, r.dataset.tier])"
    )


def test_the_pages_hold_one_ranking_and_the_sentence_counts_each_tier(page, cluster):
    page.goto(f"/estimate/?{TRAIN}&page_size=5")
    sentence = page.inner_text("#results p.count")
    assert (
        "10 fit and have a price, ranked by cost per billion tokens; 3 fit but have no price; "
        "5 do not fit or cannot be estimated."
    ) in sentence
    rows = shown(page)
    assert len(rows) == 5
    while page.locator("a[rel=next]").count():
        page.click("a[rel=next]")
        page.wait_for_load_state()
        assert page.url.endswith("#results")
        assert page.inner_text("#results p.count") == sentence  # the same totals on each page
        rows += shown(page)
    assert "Page 4 of 4" in page.inner_text("nav.pager")
    tiers = [int(tier) for _key, tier in rows]
    assert tiers == sorted(tiers)
    assert (tiers.count(1), tiers.count(2), tiers.count(3)) == (10, 3, 5)
    assert len({key for key, _tier in rows}) == 18
    # The headings say which tier a run of rows is in.
    headings = page.locator("#results tbody th[scope=rowgroup]").all_inner_texts()
    assert headings == [
        "Does not fit, or cannot be estimated: the reason or the unknown figure, and where to "
        "correct it"
    ]
    assert not page.console_errors


def test_a_row_that_cannot_be_estimated_leads_to_its_correction_form(page, cluster):
    page.goto(f"/estimate/?{TRAIN}&page_size=200")
    row = page.locator("#results tbody[data-tier='3'] tr[data-key]", has_text="mystery.8x").first
    assert "cannot estimate: unknown GPU-to-GPU link" in row.inner_text()
    row.get_by_role("link", name="Report a correction").click()
    page.wait_for_url(re.compile(r"/instances/acme/mystery-8x/#report$"))
    assert page.locator("#report form").is_visible()


def test_the_micro_batch_size_is_a_form_field_and_each_row_states_its_micro_batches(page, cluster):
    page.goto("/estimate/")
    page.select_option("#id_mode", "train-fsdp")
    page.fill("#id_params_b", "7")
    page.fill("#id_micro_batch_tokens", "65536")
    page.click("button:has-text('Estimate')")
    page.wait_for_url(re.compile(r"micro_batch_tokens=65536"))
    # 4,194,304 tokens / (8 GPUs x 65,536) = 8 micro-batches on one node.
    one_node = page.locator("#results tr[data-key$=':1']").first
    assert "8 micro-batches" in one_node.inner_text()
    formulas = page.inner_text("#formulas")
    assert "micro-batches per step k = max(1, ceil(tokens_per_step / (all GPUs x" in formulas
    assert "every micro-batch all-gathers the parameters" in formulas


def test_inference_shows_one_row_per_instance(page, cluster):
    page.goto("/estimate/?params_b=70&mode=inference&context_tokens=32768&nodes=1&nodes=2")
    keys = [key for key, _tier in shown(page)]
    instances = [key.split(":")[0] for key in keys]
    assert len(instances) == len(set(instances)) == 6
    assert "6 instance types, one row each" in page.inner_text("#results p.count")
