"""From the table to a detail page, then two rows side by side, in real Chromium."""

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_buyer_opens_a_detail_page_then_compares_two_rows(page, catalog):
    page.goto("/?nvlink=true")
    page.click("#results a:has-text('ib.8x')")
    page.wait_for_url(re.compile(r"/instances/aws/ib-8x/$"))
    assert page.is_visible("svg.topology")
    assert "GPU 7" in page.text_content("svg.topology")
    page.go_back()
    page.wait_for_url(re.compile(r"nvlink=true"))
    page.check(f"input[name=compare][value='{catalog['ib'].pk}']")
    page.wait_for_selector("text=Select one more row to compare.")
    page.check(f"input[name=compare][value='{catalog['efa'].pk}']")
    page.wait_for_selector("a:has-text('Compare the 2 selected')")
    assert "compare=" in page.url  # the selection is part of the shareable state
    page.click("a:has-text('Compare the 2 selected')")
    page.wait_for_url(re.compile(r"/compare/\?ids="))
    assert page.locator("table.compare thead th").count() == 3
    assert page.locator("tr.differs").count() >= 1
    page.click("a:has-text('Back to your filtered list')")
    page.wait_for_url(re.compile(r"/\?nvlink=true$"))
    assert not page.console_errors


def test_a_reader_reports_a_correction_from_the_detail_page(page, catalog):
    page.goto("/instances/aws/ib-8x/")
    page.select_option("#id_topic", "fabric")
    page.fill("#id_message", "It is eight 400G ports, per the provider's network page.")
    page.fill("#id_source_url", "https://docs.example.com/network")
    page.click("button:has-text('Send report')")
    page.wait_for_url(re.compile(r"reported=1"))
    assert page.is_visible("text=A curator will check your report")
