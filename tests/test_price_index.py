"""Issue 32, item 5: a price index per GPU model, from dated prices only.

The weekly median on-demand price per GPU-hour of each GPU model (with its count of offers),
shown as a chart on the GPU page and written into the dumps; where dated prices are too few for
a line, the page says so instead of drawing one.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from offerings.dumps import snapshot
from offerings.models import ExchangeRate, Offer, PriceObservation
from offerings.pages.price_index import MIN_OFFERS, price_index

pytestmark = pytest.mark.usefixtures("lazy_loads_raise")


def read(offer: Offer, day: tuple[int, int, int], price: str, currency: str = "USD") -> None:
    PriceObservation.objects.create(
        offer=offer,
        price_per_hour=Decimal(price),
        currency=currency,
        observed_at=datetime(*day, 12, tzinfo=UTC),
    )


def on_demand(instance) -> Offer:
    return Offer.objects.get(instance=instance, kind="on-demand")


@pytest.fixture
def two_weeks(catalog):
    """Three H100 types (8 GPUs each) read on-demand in the weeks of 2 and 9 November 2026."""
    ib, efa, tcpx = (on_demand(catalog[key]) for key in ("ib", "efa", "tcpx"))
    read(ib, (2026, 11, 3), "24")  # 3.00 per GPU-hour
    read(efa, (2026, 11, 4), "40")  # 5.00
    read(tcpx, (2026, 11, 5), "32")  # 4.00 -> median 4.00
    read(ib, (2026, 11, 9), "80")  # superseded by the same offer's later reading that week
    read(ib, (2026, 11, 10), "16")  # 2.00
    read(efa, (2026, 11, 11), "24")  # 3.00
    read(tcpx, (2026, 11, 12), "40")  # 5.00 -> median 3.00
    return catalog


def test_the_index_is_the_weekly_median_of_each_offers_last_dated_reading(two_weeks):
    index = price_index("h100-sxm")
    assert [(w.start, w.median_usd_per_gpu_hour, w.offers) for w in index.weeks] == [
        (date(2026, 11, 2), Decimal("4.0000"), 3),
        (date(2026, 11, 9), Decimal("3.0000"), 3),
    ]
    assert index.drawable
    assert index.dated_prices == 7


def test_a_price_that_did_not_change_still_counts_in_later_weeks(catalog):
    """The history records a price when it changes: an offer read once stands for the weeks
    after, until CARRY_WEEKS have passed or the offer is retired."""
    ib, efa, tcpx = (on_demand(catalog[key]) for key in ("ib", "efa", "tcpx"))
    read(ib, (2026, 8, 4), "24")  # 3.00, and no reading after
    read(efa, (2026, 8, 5), "40")  # 5.00
    read(tcpx, (2026, 8, 6), "32")  # 4.00
    read(efa, (2026, 8, 12), "48")  # 6.00 a week later; ib and tcpx unchanged
    read(efa, (2026, 11, 11), "16")  # 2.00, 14 weeks after ib and tcpx were read
    weeks = {w.start: (w.median_usd_per_gpu_hour, w.offers) for w in price_index("h100-sxm").weeks}
    assert weeks[date(2026, 8, 3)] == (Decimal("4.0000"), 3)
    assert weeks[date(2026, 8, 10)] == (Decimal("4.0000"), 3)  # 3.00, 6.00, 4.00
    assert weeks[date(2026, 10, 26)] == (Decimal("4.0000"), 3)  # the 13th week after
    assert date(2026, 11, 9) not in weeks  # past that, only efa's own reading stands
    efa.is_active = False
    efa.last_seen_at = datetime(2026, 8, 20, tzinfo=UTC)
    efa.save()
    assert date(2026, 8, 24) not in {w.start for w in price_index("h100-sxm").weeks}


def test_undated_spot_and_hidden_readings_do_not_count(two_weeks):
    catalog = two_weeks
    before = price_index("h100-sxm").weeks
    spot = Offer.objects.get(instance=catalog["ib"], kind="spot")
    read(spot, (2026, 11, 4), "0.10")  # a spot price, far below: would move the median
    PriceObservation.objects.create(
        offer=on_demand(catalog["efa"]), price_per_hour=1, currency="USD", observed_at=None
    )
    assert price_index("h100-sxm").weeks == before
    catalog["tcpx"].is_hidden = True
    catalog["tcpx"].save()
    thinned = price_index("h100-sxm")
    assert thinned.weeks == ()  # two offers a week are too few for a median
    assert thinned.thin_weeks == 2
    assert not thinned.drawable


def test_a_price_charged_in_another_currency_counts_at_the_rate_of_its_day(two_weeks):
    ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2026, 10, 30),
        usd_per_unit=Decimal("0.2"),
        source_url="https://rates.example/cny",
    )
    ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2026, 11, 20),
        usd_per_unit=Decimal("0.1"),
        source_url="https://rates.example/cny",
    )
    read(on_demand(two_weeks["ib"]), (2026, 11, 4), "200", "CNY")  # 200 x 0.2 / 8 = 5.00
    first = price_index("h100-sxm").weeks[0]
    assert (first.median_usd_per_gpu_hour, first.offers) == (Decimal("5.0000"), 3)


def test_the_gpu_page_draws_the_index_in_the_pages_currency(client, two_weeks):
    body = client.get("/gpus/h100-sxm/").content.decode()
    section = body.split('id="price-index"', 1)[1].split("</section>", 1)[0]
    assert 'class="price-chart"' in section
    assert "Price index, median USD per GPU-hour by week" in section
    assert "2026-11-02" in section
    assert "$4.00" in section  # the table beside the chart, for readers without it
    chinese = client.get("/zh-hans/gpus/h100-sxm/").content.decode()
    # No CNY reference rate in this catalog: the index stays in USD rather than showing nothing.
    assert "（USD）" in chinese.split('id="price-index"', 1)[1].split("</section>", 1)[0]
    ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2026, 11, 1),
        usd_per_unit=Decimal("0.14"),
        source_url="https://rates.example/cny",
    )
    chinese = client.get("/zh-hans/gpus/h100-sxm/").content.decode()
    assert "（CNY）" in chinese.split('id="price-index"', 1)[1].split("</section>", 1)[0]


def test_the_gpu_page_says_why_there_is_no_line(client, catalog):
    read(on_demand(catalog["ib"]), (2026, 11, 3), "24")
    body = client.get("/gpus/h100-sxm/").content.decode()
    section = body.split('id="price-index"', 1)[1].split("</section>", 1)[0]
    assert 'class="price-chart"' not in section
    assert "1 dated on-demand price" in section
    assert f"at least {MIN_OFFERS} offers" in section


def test_the_dumps_carry_the_index(two_weeks, settings, tmp_path):
    settings.DUMP_DIR = tmp_path
    published, _ = snapshot.publish()
    data = json.loads(gzip.decompress((tmp_path / f"{published.name}.json.gz").read_bytes()))
    assert data["price_index"] == [
        {"gpu": "h100-sxm", "week": "2026-11-02", "median_usd_per_gpu_hour": "4.0000", "offers": 3},
        {"gpu": "h100-sxm", "week": "2026-11-09", "median_usd_per_gpu_hour": "3.0000", "offers": 3},
    ]
