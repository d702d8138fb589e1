"""A reader of the explainer and the FAQ in real Chromium: no CSP violation, one click to the
matching rows, and a language switch that stays on the page."""

import re

import pytest
from django.core.cache import cache

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_CSP = (
    "window.__csp = [];"
    "document.addEventListener('securitypolicyviolation',"
    " (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
)


@pytest.fixture(autouse=True)
def _fresh_counts():
    cache.clear()  # the live counts are cached; each test has its own catalog
    yield
    cache.clear()


@pytest.mark.parametrize(
    "path",
    [
        "/learn/nvlink-vs-infiniband/",
        "/zh-hans/learn/nvlink-vs-infiniband/",
        "/faq/",
        "/zh-hans/faq/",
        "/about/data/",
        "/zh-hans/about/data/",
    ],
)
def test_content_pages_load_without_a_csp_violation_or_console_error(page, catalog, path):
    page.add_init_script(RECORD_CSP)
    response = page.goto(path)
    assert response.status == 200
    page.wait_for_load_state("load")
    assert page.evaluate("window.__csp") == []
    assert not page.console_errors
    assert page.locator("svg.diagram").count() == (4 if "learn" in path else 0)


def test_a_reader_reaches_the_matching_rows_from_a_faq_answer_in_one_click(page, catalog):
    page.goto("/faq/#every-multi-gpu-nvlink")
    link = page.locator("#every-multi-gpu-nvlink a.table-link", has_text="PCIe only")
    count = link.locator("xpath=following-sibling::span[1]").inner_text()
    assert count == "(1 listed)"
    link.click()
    page.wait_for_url(re.compile(r"/\?nvlink=false&gpu_count_min=2$"))
    assert page.locator("#results tbody tr").count() == 1
    assert page.input_value("#id_nvlink") == "false"


def test_the_language_switch_keeps_the_reader_on_the_same_page(page, catalog):
    page.goto("/learn/nvlink-vs-infiniband/#infiniband")
    page.click("nav.language-switch a")
    page.wait_for_url(re.compile(r"/zh-hans/learn/nvlink-vs-infiniband/$"))
    assert page.get_attribute("html", "lang") == "zh-hans"
    assert page.locator("h1").inner_text().startswith("NVLink 与 InfiniBand")
    page.click("nav.language-switch a")
    page.wait_for_url(re.compile(r"/learn/nvlink-vs-infiniband/$"))
    assert page.get_attribute("html", "lang") == "en"
