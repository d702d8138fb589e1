"""A person using the filter page in real Chromium: filters, URL, back button, sort, exports."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.waiting import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def row_names(page) -> list[str]:
    return page.locator("#results tbody tr td:nth-child(3) code").all_inner_texts()


def test_choosing_filters_updates_the_table_and_the_url_without_a_reload(page, catalog):
    page.goto("/")
    assert len(row_names(page)) == 6
    page.evaluate("window.__marker = 'same document'")
    page.select_option("#id_nvlink", "true")
    page.wait_for_url(re.compile(r"nvlink=true"))
    wait_until(page, "document.querySelectorAll('#results tbody tr').length === 4")
    page.check("input[name=fabric][value=infiniband]")
    page.wait_for_url(re.compile(r"fabric=infiniband"))
    wait_until(page, "document.querySelectorAll('#results tbody tr').length === 1")
    assert row_names(page) == ["ib.8x"]
    assert page.evaluate("window.__marker") == "same document"  # htmx swapped, no reload
    assert "q=" not in page.url  # empty fields stay out of the shared link
    assert not page.console_errors


def test_the_back_button_restores_the_previous_filters(page, catalog):
    page.goto("/")
    page.select_option("#id_nvlink", "false")
    page.wait_for_url(re.compile(r"nvlink=false"))
    wait_until(page, "document.querySelectorAll('#results tbody tr').length === 1")
    page.go_back()
    page.wait_for_url(re.compile(r"/$"))
    wait_until(page, "document.querySelectorAll('#results tbody tr').length === 6")
    expect(page.locator("#id_nvlink")).to_have_value("")


def test_sorting_by_a_column_header_flips_the_order(page, catalog):
    page.goto("/")
    page.click("th:has-text('GPUs') a")
    page.wait_for_url(re.compile(r"sort=gpu_count"))
    wait_until(page, "document.querySelector('th[aria-sort=ascending]') !== null")
    assert row_names(page)[0] == "2A6000.20V"
    page.click("th:has-text('GPUs') a")
    page.wait_for_url(re.compile(r"sort=-gpu_count"))
    wait_until(page, "document.querySelector('th[aria-sort=descending]') !== null")
    assert row_names(page)[0] == "ib.8x"


def test_a_preset_opens_the_matching_rows_and_the_export_carries_the_filters(page, catalog):
    page.goto("/")
    page.click("a[data-preset=pcie-only]")
    page.wait_for_url(re.compile(r"nvlink=false"))
    assert row_names(page) == ["pcie.4x"]
    href = page.get_attribute("a:has-text('CSV')", "href")
    assert "nvlink=false" in href
    assert "format=csv" in href
    with page.expect_download() as download:
        page.click("a:has-text('CSV')")
    text = Path(download.value.path()).read_text()
    assert text.splitlines()[1].split(",")[2] == "pcie.4x"


def test_a_bad_value_shows_its_message_next_to_the_field(page, catalog):
    page.goto("/")
    page.fill("#id_max_gpu_hour", "2000000")  # the browser allows it; the server's bound doesn't
    page.press("#id_max_gpu_hour", "Enter")
    page.wait_for_selector("#err-max_gpu_hour:not(:empty)")
    assert "less than or equal to 1000000" in page.inner_text("#err-max_gpu_hour")
    assert page.is_visible(".errors")


def test_without_javascript_the_form_still_filters_as_a_plain_get(page_without_js, catalog):
    page = page_without_js
    page.goto("/")
    page.select_option("#id_nvswitch", "true")
    page.click("button:has-text('Apply filters')")
    page.wait_for_url(re.compile(r"nvswitch=true"))
    assert set(row_names(page)) == {"ib.8x", "efa.8x", "tcpx-8g"}


# -- issue 20: the buyer's path through the filter page ------------------------------------------


def wait_for_rows(page, n: int) -> None:
    wait_until(page, f"() => document.querySelectorAll('#results tbody tr').length === {n}")


def test_the_language_switch_and_every_link_built_from_the_query_follow_later_filters(
    page, catalog
):
    page.goto("/")
    page.select_option("#id_geo", "eu")
    page.wait_for_url(re.compile(r"geo=eu"))
    wait_for_rows(page, 2)
    for name in ("CSV", "JSON", "API"):
        assert "geo=eu" in page.get_attribute(f".exports a:has-text('{name}')", "href")
    assert page.get_attribute("#feed-link", "href") == "/feeds/price-changes/?geo=eu"
    assert page.get_attribute("link#feed-alternate", "href") == "/feeds/price-changes/?geo=eu"
    page.check("#results input[name=compare] >> nth=0")
    page.wait_for_selector("text=Select one more row to compare.")
    page.check("#results input[name=compare] >> nth=1")
    page.wait_for_selector(".compare-bar a.button")
    assert "geo%3Deu" in page.get_attribute(".compare-bar a.button", "href")
    switch = page.locator(".language-switch a")
    assert "geo=eu" in switch.get_attribute("href")
    switch.click()
    page.wait_for_url(re.compile(r"/zh-hans/\?.*geo=eu"))
    assert page.input_value("#id_geo") == "eu"
    assert len(row_names(page)) == 2


def test_a_column_sort_is_shown_in_the_sort_menu_and_kept_by_the_next_filter(page, catalog):
    page.goto("/")
    page.click("th:has-text('GPUs') a")
    page.wait_for_url(re.compile(r"sort=gpu_count"))
    wait_until(page, "() => document.querySelector('th[aria-sort=ascending]') !== null")
    expect(page.locator("#id_sort")).to_have_value("gpu_count")  # synced once htmx settles
    page.select_option("#id_nvlink", "true")
    page.wait_for_url(re.compile(r"nvlink=true"))
    wait_for_rows(page, 4)
    assert "sort=gpu_count" in page.url
    assert row_names(page)[0] == "2A6000.20V"  # the two-GPU row still leads


def test_next_page_takes_focus_and_the_view_to_the_results(page, catalog):
    page.set_viewport_size({"width": 1400, "height": 500})
    page.goto("/?page_size=2")
    page.locator(".pager a[rel=next]").scroll_into_view_if_needed()
    assert page.evaluate("window.scrollY") > 0
    page.click(".pager a[rel=next]")
    page.wait_for_selector(".pager :text('Page 2 of 3')")
    wait_until(page, "() => document.activeElement && document.activeElement.id === 'results'")
    top = page.evaluate("document.getElementById('results').getBoundingClientRect().top")
    assert 0 <= top < 50


def test_the_keyboard_reaches_the_filters_at_once_and_keeps_its_place_on_a_compare_box(
    page, catalog
):
    page.goto("/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "#filters"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "id_q"  # the skip link lands there
    page.keyboard.press("Tab")  # and from the first filter, a link past the long lists
    assert page.evaluate("document.activeElement.getAttribute('href')") == "#results"
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('#results') !== null")

    page.goto("/")
    presses = 0
    while page.evaluate("document.activeElement.id") != "id_q":
        presses += 1
        # The skip links, the brand, the seven links of the navigation and the language switch.
        assert presses <= 11, "the first filter is more than 11 Tab presses from the top"
        page.keyboard.press("Tab")

    box = page.locator("#results input[name=compare] >> nth=2")
    value = box.get_attribute("value")
    box.focus()
    page.keyboard.press("Space")
    page.wait_for_selector("text=Select one more row to compare.")
    assert page.evaluate("document.activeElement.name") == "compare"
    assert page.evaluate("document.activeElement.value") == value
    assert page.evaluate("document.activeElement.checked")


def test_gpu_provider_and_region_are_checkbox_lists_with_a_filter_box(page, catalog):
    page.goto("/")
    assert page.locator("select[multiple]").count() == 0
    page.focus("#find-gpu")
    page.keyboard.type("h100")
    visible = page.locator("#list-gpu label:visible").all_inner_texts()
    assert [text.strip() for text in visible] == ["H100 SXM"]
    page.keyboard.press("Enter")  # narrows the list, never submits the form
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.value") == "h100-sxm"
    page.keyboard.press("Space")
    page.wait_for_url(re.compile(r"gpu=h100-sxm"))
    assert "find" not in page.url
    wait_for_rows(page, 4)
    page.click("details.checklist-group:has(#list-region) > summary")  # the list is folded
    page.fill("#find-region", "europe")
    page.check("#list-region input[value='gcp:europe-west4']")
    page.wait_for_url(re.compile(r"region=gcp%3Aeurope-west4"))
    wait_for_rows(page, 1)
    assert row_names(page) == ["tcpx-8g"]
    page.fill("#find-provider", "zzz")
    assert page.is_visible("#list-provider ~ .checklist-none")
    page.keyboard.press("Escape")
    assert page.locator("#list-provider label:visible").count() == 3


def test_the_feed_of_the_current_filters_is_linked_in_the_page_and_its_head(page, catalog):
    page.goto("/?nvlink=true&sort=gpu_count&page_size=10")
    alternate = page.locator("link[rel=alternate][type='application/atom+xml']")
    assert alternate.get_attribute("href") == "/feeds/price-changes/?nvlink=true"
    assert page.get_attribute("#feed-link", "href") == "/feeds/price-changes/?nvlink=true"
    response = page.request.get(page.get_attribute("#feed-link", "href"))
    assert response.ok
    assert "<feed" in response.text()


def test_the_available_control_says_for_how_many_rows_availability_is_known(page, catalog):
    page.goto("/")
    assert page.inner_text("#available-known") == (
        "Availability is known for 3 of the 6 matching types: AWS, Verda."
    )
    page.select_option("#id_nvlink", "false")
    wait_for_rows(page, 1)
    page.wait_for_selector("#available-known:has-text('No provider reports availability')")
    page.goto("/zh-hans/")
    assert "AWS" in page.inner_text("#available-known")


def test_an_empty_result_names_the_filters_that_emptied_it_and_drops_one(page, catalog):
    page.goto("/")
    page.select_option("#id_nvlink", "false")
    wait_for_rows(page, 1)
    page.select_option("#id_geo", "eu")
    page.wait_for_selector(".empty-causes")
    causes = page.locator(".empty-causes li").all_inner_texts()
    assert len(causes) == 2
    assert "NVLink or Infinity Fabric" in causes[0]
    assert "2 types match" in causes[0]
    assert "Continent" in causes[1]
    assert "Europe" in causes[1]
    assert "1 type matches" in causes[1]
    page.click("a[data-drop=geo]")
    page.wait_for_url(re.compile(r"/\?nvlink=false$"))
    wait_for_rows(page, 1)
    assert row_names(page) == ["pcie.4x"]
    # The form forgets it too, once htmx has settled the swap (it syncs the form then).
    expect(page.locator("#id_geo")).to_have_value("")
    page.select_option("#id_nvswitch", "false")
    page.wait_for_url(re.compile(r"nvswitch=false"))
    assert "geo=" not in page.url


def test_the_region_list_is_one_tab_stop_until_opened_and_opens_with_a_tick(page, catalog):
    page.goto("/")
    group = page.locator("details.checklist-group:has(#list-region)")
    assert not group.evaluate("d => d.open")
    assert not page.locator("#list-region input").first.is_visible()
    # From the summary, one Tab leaves the region list for the next control.
    page.focus("details.checklist-group:has(#list-region) > summary")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('#list-region') === null")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    assert group.evaluate("d => d.open")
    assert page.locator("#list-region input").first.is_visible()
    page.goto("/?region=aws:us-east-1")
    assert page.locator("details.checklist-group:has(#list-region)").evaluate("d => d.open")


def test_sorting_keeps_the_keyboard_on_the_header_that_was_used(page, catalog):
    page.goto("/")
    page.evaluate("window.scrollTo(0, 400)")
    header = page.locator("#results th[data-sort-key=gpu_count] a")
    header.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"sort=gpu_count"))
    wait_until(
        page,
        "document.activeElement.closest('th') && "
        "document.activeElement.closest('th').dataset.sortKey === 'gpu_count'",
    )
    assert page.evaluate("window.scrollY") > 0  # not thrown back to the top
