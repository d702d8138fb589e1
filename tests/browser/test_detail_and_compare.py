"""From the table to a detail page, then two rows side by side, in real Chromium."""

import re

import pytest

from tests.browser.waiting import wait_until

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


# -- Issue 20: the compare button follows the reader; phones (390 px) see every row whole --------


def many_rows(catalog, count=40):
    from offerings.models import Region
    from tests.conftest import NVSWITCH_8, make_instance, make_offer

    ib = catalog["ib"]
    region = Region.objects.get(code="us-east-1")
    for index in range(count):
        row = make_instance(ib.provider, ib.gpu, name=f"filler-{index:02}.8x", link=NVSWITCH_8)
        make_offer(row, region, price=f"{50 + index}.00")


def in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"]


def test_the_compare_button_follows_the_reader_down_a_long_table(page, catalog):
    many_rows(catalog)
    page.goto("/")
    page.check(f"input[name=compare][value='{catalog['ib'].pk}']")
    page.wait_for_selector("text=Select one more row to compare.")
    page.check(f"input[name=compare][value='{catalog['efa'].pk}']")
    page.wait_for_selector("a:has-text('Compare the 2 selected')")
    page.evaluate(
        "window.scrollTo(0, document.querySelector('#results tbody tr:last-child')"
        ".getBoundingClientRect().bottom + window.scrollY - 200)"
    )
    wait_until(page, "window.scrollY > 1000")
    assert in_viewport(page, "a:has-text('Compare the 2 selected')")
    page.click("a:has-text('Compare the 2 selected')")
    page.wait_for_url(re.compile(r"/compare/\?ids="))


def test_a_phone_sees_each_rows_provider_instance_gpus_badges_and_price(phone, catalog):
    phone.goto("/")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    rows = phone.locator("#results tbody tr")
    assert rows.count() == 6
    for index in range(rows.count()):
        row = rows.nth(index)
        for cell in (2, 3, 4, 5, 6, 8):  # provider, instance, GPUs, inside, between, price
            box = row.locator(f"td:nth-child({cell})").bounding_box()
            assert box is not None
            assert box["width"] > 0
            assert box["x"] >= 0, (index, cell, box)
            assert box["x"] + box["width"] <= 390, (index, cell, box)
    price = rows.first.locator("td.price")
    assert "/ GPU-hour" in price.inner_text()
    assert rows.first.locator("td:nth-child(5) .badge").is_visible()
    assert rows.first.locator("td:nth-child(6) .badge").is_visible()


def test_the_similar_rows_on_a_detail_page_fit_a_phone_too(phone, catalog):
    phone.goto("/instances/aws/ib-8x/")
    assert phone.locator("table.instances tbody tr").count() >= 1
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    box = phone.locator("table.instances td.price").first.bounding_box()
    assert box["x"] + box["width"] <= 390


def test_the_compare_page_on_a_phone_shows_every_value_without_sideways_scrolling(phone, catalog):
    phone.goto("/compare/?ids=aws/ib-8x,aws/efa-8x,gcp/tcpx-8g,datacrunch/mystery-8x")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    cells = phone.locator("table.compare tbody td")
    assert cells.count() >= 4 * 10
    for index in range(cells.count()):
        box = cells.nth(index).bounding_box()
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390
        assert box["width"] >= 60  # four columns of readable width, not a squeezed table
    price = phone.locator("table.compare tr.differs", has_text="Price per GPU-hour")
    assert price.locator(".badge.lowest").is_visible()
    # The instance names stay in view while the reader scrolls down the facts.
    phone.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    wait_until(phone, "window.scrollY > 300")
    assert in_viewport(phone, "table.compare thead th:nth-child(2)")


def test_the_topology_diagram_on_a_phone_fits_with_every_label_inside_its_box(phone, catalog):
    for prefix in ("", "/zh-hans"):
        phone.goto(prefix + "/instances/aws/ib-8x/")
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        wide = phone.locator("svg.topology:not(.narrow)")
        assert not wide.is_visible()
        svg = phone.locator("svg.topology.narrow")
        box = svg.bounding_box()
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390
        assert "GPU 7" in svg.text_content()
        # Every GPU label sits inside its GPU box, and every caption inside the drawing.
        outside = svg.evaluate(
            """svg => {
              const boxes = [...svg.querySelectorAll('rect')].map(r => r.getBBox());
              const drawing = svg.viewBox.baseVal;
              return [...svg.querySelectorAll('text')].filter(t => {
                const b = t.getBBox();
                if (b.x < 0 || b.x + b.width > drawing.width) return true;
                const holder = boxes.find(r => b.y >= r.y && b.y + b.height <= r.y + r.height + 1
                  && b.x + b.width / 2 >= r.x && b.x + b.width / 2 <= r.x + r.width);
                return holder && (b.x < holder.x - 0.5 || b.x + b.width > holder.x + holder.width + 0.5);
              }).map(t => t.textContent);
            }"""
        )
        assert outside == []
