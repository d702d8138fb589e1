"""A buyer on /nvlink-infiniband/ in real Chromium: the preset table, its filters and quick choices
working like the filter page's, the badges, the text and FAQ below, on a desktop and on a phone,
in both languages, with no CSP violation (issue 20, item 15)."""

import re

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from tests.browser.test_content_pages import RECORD_CSP
from tests.browser.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGE = "/nvlink-infiniband/"


@pytest.fixture(autouse=True)
def _fresh_counts():
    cache.clear()
    yield
    cache.clear()


def names(page) -> list[str]:
    return sorted(page.locator("#results tbody tr code").all_inner_texts())


def badge(page, name: str) -> str:
    row = page.locator("#results tbody tr", has=page.locator(f"code:text-is('{name}')"))
    return row.locator(".badge.has").inner_text()


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_page_loads_with_the_preset_badges_and_faq_and_no_csp_violation(page, catalog, prefix):
    page.add_init_script(RECORD_CSP)
    assert page.goto(prefix + PAGE).status == 200
    page.wait_for_load_state("load")
    assert names(page) == ["2A6000.20V", "efa.8x", "ib.8x", "tcpx-8g"]
    assert badge(page, "ib.8x") == "NVLink + InfiniBand"
    assert badge(page, "efa.8x") == "NVLink + RDMA"
    assert badge(page, "tcpx-8g") == "NVLink"
    assert page.input_value("#id_interconnect") == "nvlink-or-infiniband"
    assert page.locator("#questions .faq-entry").count() == 10
    assert page.locator("#cost time").count() == 2
    assert page.evaluate("window.__csp") == []
    assert not page.console_errors


def test_changing_the_filters_swaps_the_rows_keeps_the_page_and_the_quick_choices(page, catalog):
    page.goto(PAGE)
    page.evaluate("window.__marker = 'same document'")
    page.select_option("#id_interconnect", "both")
    page.wait_for_url(re.compile(r"/nvlink-infiniband/\?.*interconnect=both"))
    wait_until(page, "document.querySelectorAll('#results tbody tr').length === 2")
    assert names(page) == ["efa.8x", "ib.8x"]
    assert page.get_attribute("#interconnect-choice a[aria-current]", "href").count("both") == 1
    page.check("input[name=fabric][value=efa]")
    page.wait_for_url(re.compile(r"fabric=efa"))
    wait_until(page, "document.querySelectorAll('#results tbody tr').length === 1")
    # The quick choices were swapped with the rows: choosing one keeps the fabric just ticked.
    page.click("#interconnect-choice a:text-is('NVLink')")
    page.wait_for_url(re.compile(r"interconnect=nvlink"))
    assert "fabric=efa" in page.url
    assert names(page) == ["efa.8x"]
    assert page.input_value("#id_interconnect") == "nvlink"


def test_one_click_widens_the_list_to_every_rdma_fabric(page, catalog):
    pcie = catalog["pcie"]
    pcie.fabric.technology = "efa"
    pcie.fabric.save()
    page.goto(PAGE)
    assert "pcie.4x" not in names(page)
    page.click("#interconnect-choice a[href*='interconnect=either']")
    page.wait_for_url(re.compile(r"interconnect=either"))
    expect(page.locator("#results tbody tr")).to_have_count(5)
    assert "pcie.4x" in names(page)
    assert badge(page, "pcie.4x") == "RDMA"


def test_the_empty_choice_of_the_menu_is_the_page_s_preset(page, catalog):
    page.goto(f"{PAGE}?interconnect=both")
    assert len(names(page)) == 2
    page.select_option("#id_interconnect", "")
    expect(page.locator("#results tbody tr")).to_have_count(4)
    label = page.locator("#id_interconnect option[value='']").inner_text()
    assert "default" in label


def test_on_a_phone_the_rows_and_the_text_fit_the_screen(browser, live_server, catalog):
    context = browser.new_context(viewport={"width": 390, "height": 844}, base_url=live_server.url)
    page = context.new_page()
    for prefix in ("", "/zh-hans"):
        page.goto(prefix + PAGE)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # The quick choices come before the table, within the first screen.
        box = page.locator("#interconnect-choice").bounding_box()
        assert box["y"] + box["height"] < 844
        # So does a link down to the filters, which sit below the rows on a phone.
        jump = page.locator("p.to-filters a")
        assert jump.is_visible()
        assert jump.bounding_box()["y"] < 844
        jump.click()
        wait_until(page, "document.getElementById('filters').getBoundingClientRect().top < 100")
        for part in ("#what-each-does", "#cost", "#questions"):
            width = page.locator(part).bounding_box()["width"]
            assert width <= 390
    context.close()


def test_a_reader_goes_from_the_navigation_to_the_page_and_on_to_the_explainer(page, catalog):
    page.goto("/faq/")
    page.click("nav.site-nav a[href='/nvlink-infiniband/']")
    page.wait_for_url(re.compile(r"/nvlink-infiniband/$"))
    page.click("#before-renting a[href^='/learn/nvlink-vs-infiniband/']")
    page.wait_for_url(re.compile(r"/learn/nvlink-vs-infiniband/#checklist$"))


def test_the_filter_page_s_preset_opens_the_page(page, catalog):
    page.goto("/zh-hans/")
    page.click("a[data-preset=nvlink-or-infiniband]")
    page.wait_for_url(
        re.compile(r"/zh-hans/nvlink-infiniband/\?interconnect=nvlink-or-infiniband$")
    )
    assert page.locator("h1").inner_text().startswith("提供 NVLink 或 InfiniBand")
    assert len(names(page)) == 4
