"""The providers' readiness comparison in real Chromium: both languages, a phone at 390 px."""

from datetime import date

import pytest

from offerings.models import Fabric, Provider, ProviderReadiness
from tests.conftest import SOURCE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def ready(catalog):
    aws = Provider.objects.get(slug="aws")
    for fact, value in [
        ("fabrics", {"fabrics": ["efa"]}),
        ("gpudirect_rdma", {"flag": True}),
        ("egress_usd_per_gb", {"usd_per_gb": "0.09"}),
    ]:
        ProviderReadiness.objects.create(
            provider=aws,
            fact=fact,
            basis="provider",
            source_url=SOURCE,
            verified_at=date(2026, 11, 1),
            **value,
        )


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_a_phone_reads_every_providers_readiness_without_sideways_scrolling(phone, ready, prefix):
    phone.goto(f"{prefix}/providers/")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    cells = phone.locator("table.readiness-table td")
    assert cells.count() == 3 * 9  # three providers, nine facts each
    for index in range(cells.count()):
        box = cells.nth(index).bounding_box()
        assert box["x"] + box["width"] <= 390, index
    label = phone.evaluate(
        "getComputedStyle(document.querySelector('table.readiness-table td'), '::before').content"
    )
    assert label not in ("", "none", "normal")  # each cell names its fact on a phone
    assert not phone.console_errors


def test_a_reader_goes_from_the_comparison_to_a_providers_card(phone, ready):
    phone.goto("/providers/")
    phone.click("table.readiness-table a:has-text('AWS')")
    phone.wait_for_selector("#readiness")
    assert "AWS EFA" in phone.text_content("#readiness")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize(
    ("prefix", "varies", "width"),
    [("", "varies by type", 1366), ("/zh-hans", "因类型而异", 1366), ("", "varies by type", 390)],
)
def test_the_providers_card_is_its_types_facts_and_keeps_its_own_statement(
    browser, live_server, ready, prefix, varies, width
):
    # efa.8x has no GPUDirect RDMA, ib.8x has it: AWS's summary cannot be a plain "yes".
    Fabric.objects.filter(instance__name="efa.8x").update(gpudirect_rdma=False)
    context = browser.new_context(
        viewport={"width": width, "height": 900}, base_url=live_server.url, is_mobile=width < 500
    )
    page = context.new_page()
    page.goto(f"{prefix}/providers/aws/")
    gpudirect = page.locator('#readiness dd[data-fact="gpudirect_rdma"]')
    assert varies in gpudirect.inner_text()
    assert "AWS" in gpudirect.locator(".stated").inner_text()  # the curated "yes", beside it
    fabrics = page.locator('#readiness dd[data-fact="fabrics"]').inner_text()
    assert "InfiniBand" in fabrics  # ib.8x's fabric, though AWS's own row names EFA only
    # The summary links to the types it was computed from, where each shows its own value.
    gpudirect.locator(".from-types a").click()
    page.wait_for_url("**provider=aws*")
    assert page.locator("table.instances tbody tr").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    context.close()
