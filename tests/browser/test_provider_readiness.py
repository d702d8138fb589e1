"""The providers' readiness comparison in real Chromium: both languages, a phone at 390 px."""

from datetime import date

import pytest

from offerings.models import Provider, ProviderReadiness
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
