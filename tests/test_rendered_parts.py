"""Rows kept per data version (offerings.caching.RenderedParts): the filter table's rows, the
filters form and the API's rows are rendered once and reused, and must never differ from what a
fresh render would give, whatever changed: the data, the language, the currency, the offer the
filters choose, the compare ticks, the time."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from offerings.caching import rendered_parts
from offerings.models import ExchangeRate, InstanceType, Offer, Provider

from .conftest import make_offer


@pytest.fixture
def priced(instance, region):
    on_demand = make_offer(instance, region, price="40.00")
    spot = make_offer(instance, region, price="16.00", kind="spot")
    ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2026, 11, 1),
        usd_per_unit=Decimal("0.14"),
        source_url="https://rates.example/cny",
    )
    return on_demand, spot


def rows_of(body: str) -> str:
    """The table body of the filter page."""
    return body.split("<tbody>", 1)[1].split("</tbody>", 1)[0]


def form_of(body: str) -> str:
    return body.split('<form id="filters"', 1)[1].split("</form>", 1)[0]


def fresh(client, path: str) -> str:
    """The page rendered with nothing kept."""
    with override_settings(ROW_CACHE_ENTRIES=0):
        return client.get(path).content.decode()


PAGES = ["/", "/?price_kind=spot", "/?currency=CNY", "/zh-hans/", "/zh-hans/?currency=CNY"]


@pytest.mark.parametrize("path", PAGES)
def test_a_kept_page_is_byte_for_byte_a_fresh_render(client, priced, path):
    first = client.get(path).content.decode()
    assert rendered_parts.entries, "the rows and the form were kept"
    again = client.get(path).content.decode()
    assert again == first == fresh(client, path)


def test_each_language_currency_and_offer_gets_its_own_row(client, priced):
    pages = {path: rows_of(client.get(path).content.decode()) for path in PAGES}
    assert "$5.00" in pages["/"]
    assert "$2.00" not in pages["/"]
    assert "$2.00" in pages["/?price_kind=spot"]  # the spot offer, 16 / 8
    assert "¥35.71" in pages["/?currency=CNY"]  # 5.00 / 0.14
    assert "按需" in pages["/zh-hans/"]
    assert "On-demand" not in pages["/zh-hans/"]
    assert "¥35.71" in pages["/zh-hans/?currency=CNY"]
    assert len(set(pages.values())) == len(PAGES)


def test_a_data_change_is_never_served_from_a_kept_row(client, priced, instance):
    before = rows_of(client.get("/").content.decode())
    assert "Acme Cloud" in before
    Provider.objects.filter(pk=instance.provider_id).update(name="Acme Renamed")
    Offer.objects.filter(pk=priced[0].pk).update(
        price_per_hour=Decimal("48.00"), price_per_gpu_hour_usd=Decimal("6.00")
    )
    after = rows_of(client.get("/").content.decode())
    assert "Acme Renamed" in after
    assert "Acme Cloud" not in after
    assert "$6.00" in after
    assert "$5.00" not in after


def test_the_compare_tick_is_part_of_the_row(client, priced, instance):
    ticked = rows_of(client.get(f"/?compare={instance.pk}").content.decode())
    plain = rows_of(client.get("/").content.decode())
    assert f'value="{instance.pk}" form="filters" checked' in ticked
    assert f'value="{instance.pk}" form="filters" checked' not in plain


def test_the_age_and_staleness_follow_the_clock(client, priced, monkeypatch):
    observed = priced[0].observed_at
    monkeypatch.setattr(timezone, "now", lambda: observed + timedelta(hours=2))
    young = rows_of(client.get("/").content.decode())
    assert "2\xa0hours old" in young
    assert "stale" not in young
    monkeypatch.setattr(timezone, "now", lambda: observed + timedelta(days=40))
    old = rows_of(client.get("/").content.decode())
    assert "2\xa0hours old" not in old
    assert "stale" in old


def test_the_filters_form_is_kept_by_its_values_not_by_parameters_it_ignores(client, priced):
    first = client.get("/?gpu=h100-sxm&utm_content=a").content.decode()
    kept = len(rendered_parts.entries)
    second = client.get("/?gpu=h100-sxm&utm_content=b").content.decode()
    assert len(rendered_parts.entries) == kept  # nothing new to render
    assert form_of(first) == form_of(second)
    other = client.get("/?gpu=h100-sxm&price_kind=spot").content.decode()
    assert len(rendered_parts.entries) > kept
    assert 'value="spot" checked' in other
    assert 'value="spot" checked' not in first


def test_the_api_keeps_rows_and_loads_offers_only_for_rows_it_has_not_kept(client, priced):
    with CaptureQueriesContext(connection) as cold:
        first = client.get("/api/instances")
    with CaptureQueriesContext(connection) as warm:
        second = client.get("/api/instances")
    assert first.content == second.content
    assert first.json()["results"][0]["price"]["price_per_gpu_hour"] == 5.0
    offers_loaded = [q for q in cold.captured_queries if 'FROM "offerings_offer"' in q["sql"]]
    assert offers_loaded
    assert len(warm.captured_queries) < len(cold.captured_queries)
    assert not [q for q in warm.captured_queries if 'FROM "offerings_purchasemode"' in q["sql"]]


def test_the_api_row_is_a_fresh_serialization_after_a_change(client, priced, instance):
    assert client.get("/api/instances").json()["results"][0]["vcpus"] is None
    InstanceType.objects.filter(pk=instance.pk).update(vcpus=192)
    assert client.get("/api/instances").json()["results"][0]["vcpus"] == 192
    with override_settings(ROW_CACHE_ENTRIES=0):
        assert client.get("/api/instances").content == client.get("/api/instances").content


def test_the_api_marks_staleness_at_the_minute(client, priced, monkeypatch):
    observed = priced[0].observed_at
    monkeypatch.setattr(timezone, "now", lambda: observed + timedelta(hours=1))
    assert client.get("/api/instances").json()["results"][0]["price"]["is_stale"] is False
    monkeypatch.setattr(timezone, "now", lambda: datetime(2027, 1, 1, 0, 0, 30, tzinfo=UTC))
    assert client.get("/api/instances").json()["results"][0]["price"]["is_stale"] is True


def test_the_kept_parts_stay_within_their_limit(client, priced):
    with override_settings(ROW_CACHE_ENTRIES=2):
        for path in PAGES:
            client.get(path)
        assert len(rendered_parts.entries) <= 2
