"""A type's published collective benchmarks on its detail page, on a phone, in both languages."""

from datetime import date
from decimal import Decimal

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def benchmarked(catalog):
    from offerings.models import CollectiveResult

    for nodes, size, busbw in (
        (1, 2**30, "466.35"),
        (2, 2**30, "435.14"),
        (16, 8 * 2**30, "356.27"),
    ):
        CollectiveResult.objects.create(
            instance=catalog["ib"],
            collective="all_reduce",
            nodes=nodes,
            gpus=8 * nodes,
            message_bytes=size,
            busbw_gbytes_per_s=Decimal(busbw),
            basis="third-party",
            source_url="https://github.com/NVIDIA/nccl-tests/issues/999",
            verified_at=date(2026, 11, 30),
        )
    return catalog


@pytest.mark.parametrize(("prefix", "heading"), [("", "Bus bandwidth"), ("/zh-hans", "总线带宽")])
def test_a_phone_reads_every_result_without_sideways_scrolling(phone, benchmarked, prefix, heading):
    phone.goto(f"{prefix}/instances/aws/ib-8x/")
    table = phone.locator("#collectives table")
    assert table.locator("tbody tr").count() == 3
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    cells = table.locator("tbody td")
    for index in range(cells.count()):
        box = cells.nth(index).bounding_box()
        assert box["x"] >= 0, (index, box)
        assert box["x"] + box["width"] <= 390, (index, box)
    first = table.locator("tbody tr").first.inner_text()
    # Each figure says what it is, the column heads being hidden on a phone.
    label = table.locator("tbody tr td:nth-child(5)").first.evaluate(
        "td => getComputedStyle(td, '::before').content"
    )
    assert heading in label
    assert "466.35" in first
    assert "1 GiB" in first
    assert table.locator("tbody tr a").first.is_visible()
    assert not phone.console_errors
