"""A person using the filter page in real Chromium: filters, URL, back button, sort, exports."""

import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def row_names(page) -> list[str]:
    return page.locator("#results tbody tr td:nth-child(3) code").all_inner_texts()


def test_choosing_filters_updates_the_table_and_the_url_without_a_reload(page, catalog):
    page.goto("/")
    assert len(row_names(page)) == 6
    page.evaluate("window.__marker = 'same document'")
    page.select_option("#id_nvlink", "true")
    page.wait_for_url(re.compile(r"nvlink=true"))
    page.wait_for_function("document.querySelectorAll('#results tbody tr').length === 4")
    page.check("input[name=fabric][value=infiniband]")
    page.wait_for_url(re.compile(r"fabric=infiniband"))
    page.wait_for_function("document.querySelectorAll('#results tbody tr').length === 1")
    assert row_names(page) == ["ib.8x"]
    assert page.evaluate("window.__marker") == "same document"  # htmx swapped, no reload
    assert "q=" not in page.url  # empty fields stay out of the shared link
    assert not page.console_errors


def test_the_back_button_restores_the_previous_filters(page, catalog):
    page.goto("/")
    page.select_option("#id_nvlink", "false")
    page.wait_for_url(re.compile(r"nvlink=false"))
    page.wait_for_function("document.querySelectorAll('#results tbody tr').length === 1")
    page.go_back()
    page.wait_for_url(re.compile(r"/$"))
    page.wait_for_function("document.querySelectorAll('#results tbody tr').length === 6")
    assert page.input_value("#id_nvlink") == ""


def test_sorting_by_a_column_header_flips_the_order(page, catalog):
    page.goto("/")
    page.click("th:has-text('GPUs') a")
    page.wait_for_url(re.compile(r"sort=gpu_count"))
    page.wait_for_function("document.querySelector('th[aria-sort=ascending]') !== null")
    assert row_names(page)[0] == "2A6000.20V"
    page.click("th:has-text('GPUs') a")
    page.wait_for_url(re.compile(r"sort=-gpu_count"))
    page.wait_for_function("document.querySelector('th[aria-sort=descending]') !== null")
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
