"""A Chinese buyer in real Chromium (#29, item 2): CNY and Chinese provider names by default on
/zh-hans/, a search in Chinese, and a switch to USD that every page then keeps: the table, a
detail page, the planner and the estimator, reached through the site's own links."""

import pytest

from offerings.models import GpuModel, Provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def chinese_catalog(catalog, cny_rate):
    Provider.objects.filter(slug="aws").update(name_zh="亚马逊云科技")
    GpuModel.objects.filter(slug="h100-sxm").update(bf16_dense_tflops=989.4)
    return catalog


@pytest.mark.parametrize("width", [1366, 390])
def test_a_chinese_buyer_reads_cny_and_keeps_usd_once_chosen(
    browser, live_server, chinese_catalog, width
):
    context = browser.new_context(
        viewport={"width": width, "height": 900}, base_url=live_server.url, is_mobile=width < 500
    )
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: errors.append(r.url) if r.status >= 400 else None)
    page.goto("/zh-hans/")
    rows = page.locator("table.instances tbody tr")
    ib = rows.filter(has_text="ib.8x")
    assert "亚马逊云科技" in ib.inner_text()
    assert "¥" in ib.locator("td.price").inner_text()  # 24.00 USD / 0.125 = 192 CNY for the node
    # A search in Chinese finds the provider by its Chinese name.
    page.goto("/zh-hans/?q=亚马逊云科技")
    names = page.locator("table.instances tbody tr").all_inner_texts()
    assert names
    assert all("亚马逊云科技" in text for text in names)
    # The switch to USD, then the site's own links: every page keeps USD.
    page.goto("/zh-hans/")
    page.locator(".currency-switch a").click()
    page.wait_for_url("**currency=USD*")
    assert (
        "$"
        in page.locator("table.instances tbody tr", has_text="ib.8x")
        .locator("td.price")
        .inner_text()
    )
    page.locator("table.instances tbody tr", has_text="ib.8x").get_by_role(
        "link", name="ib.8x"
    ).click()
    page.wait_for_url("**/zh-hans/instances/aws/ib-8x/?currency=USD")
    assert "$24.00" in page.locator("#prices").inner_text()
    page.locator('nav.site-nav a[href^="/zh-hans/plan/"]').click()
    page.wait_for_url("**/zh-hans/plan/?currency=USD")
    page.fill("#id_gpus", "16")
    page.locator("form#planner button[type=submit]").click()
    page.wait_for_url("**gpus=16*")
    assert "currency=USD" in page.url
    assert "$48.00" in page.locator("table.plan-table").inner_text()
    page.locator('nav.site-nav a[href^="/zh-hans/estimate/"]').click()
    page.wait_for_url("**/zh-hans/estimate/?currency=USD")
    page.select_option("#id_mode", "train-fsdp")
    page.fill("#id_params_b", "7")
    page.locator("form#estimator button[type=submit]").click()
    page.wait_for_url("**params_b=7*")
    assert "currency=USD" in page.url
    costs = page.locator("table.estimates td.cost").all_inner_texts()
    priced = [text for text in costs if text.strip() not in ("—", "")]
    assert priced
    assert all(text.strip().startswith("$") for text in priced)
    assert page.evaluate("document.documentElement.scrollWidth") <= max(width, 1366)
    assert errors == []
    context.close()
