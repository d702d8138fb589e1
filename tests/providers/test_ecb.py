"""ECB reference rates: parsing, the EUR cross rates, refresh_rates end to end, hostile answers."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from offerings import writer
from offerings.models import ExchangeRate, Offer
from providers.base import ScrapeError
from providers.ecb import ECB_URL, parse_ecb_xml, refresh_reference_rates, usd_per_unit
from providers.http import make_client
from providers.refresh import describe_http_failure
from tests.providers.conftest import RECORDINGS

RECORDED = (RECORDINGS / "ecb" / "eurofxref-daily.xml").read_bytes()
DAY = date(2025, 10, 21)


def document(*cubes: str, time: str = "2025-10-21") -> bytes:
    body = "".join(f"<Cube currency='{c}' rate='{r}'/>" for c, r in (x.split() for x in cubes))
    return (
        '<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" '
        'xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">'
        f"<Cube><Cube time='{time}'>{body}</Cube></Cube></gesmes:Envelope>"
    ).encode()


def test_the_daily_document_gives_its_date_and_units_per_euro():
    rates = parse_ecb_xml(RECORDED)
    assert rates.rate_date == DAY
    assert len(rates.per_euro) == 30
    assert (rates.per_euro["USD"], rates.per_euro["CNY"]) == (Decimal("1.1607"), Decimal("8.2626"))
    assert rates.refused == []


def test_usd_per_unit_is_derived_from_the_euro_cross_rates_to_six_significant_digits():
    derived = usd_per_unit(parse_ecb_xml(RECORDED))
    assert "USD" not in derived
    assert derived["EUR"] == Decimal("1.16070")  # EUR 1 = USD 1.1607
    assert derived["CNY"] == Decimal("0.140476")  # 1.1607 / 8.2626 = 0.1404763...
    assert derived["JPY"] == Decimal("0.00657807")  # 1.1607 / 176.45 = 0.006578067...
    assert derived["GBP"] == Decimal("1.33752")  # 1.1607 / 0.86780 = 1.3375201...
    assert derived["IDR"] == Decimal("0.0000602252")  # 1.1607 / 19272.67 = 0.0000602252...


@pytest.mark.parametrize(
    ("cubes", "refused"),
    [
        (("USD 1.1607", "XX1 3"), "'XX1': not a three-letter currency code"),
        (("USD 1.1607", "GBP abc"), "GBP: rate 'abc' is not a number"),
        (("USD 1.1607", "GBP -0.8678"), "GBP: rate '-0.8678' is not a positive number"),
        (("USD 1.1607", "GBP 0"), "GBP: rate '0' is not a positive number"),
        (("USD 1.1607", "GBP 0.8678", "GBP 0.9"), "GBP: listed twice with different rates"),
    ],
)
def test_a_bad_currency_is_refused_alone_with_its_reason(cubes, refused):
    rates = parse_ecb_xml(document(*cubes))
    assert "GBP" not in rates.per_euro
    assert refused in " | ".join(rates.refused)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (RECORDED[: len(RECORDED) // 2], "not a readable XML document"),
        (document("GBP 0.8678"), "no usable USD rate"),
        (document("USD zero"), "USD: rate 'zero' is not a number"),
        (document(), "no usable USD rate"),
        (document("USD 1.1", time="21 Oct 2025"), "unreadable date '21 Oct 2025'"),
        (b"<Envelope><Cube/></Envelope>", "expected one dated Cube, found 0"),
        (
            b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]>'
            b"<Envelope>&b;</Envelope>",
            "not a readable XML document (DTDForbidden",
        ),
    ],
)
def test_an_unusable_document_is_refused_whole(content, reason):
    with pytest.raises(ScrapeError) as raised:
        parse_ecb_xml(content)
    assert reason in str(raised.value)


# -- refresh_rates end to end ---------------------------------------------------------------------


@pytest.fixture
def eur_offer(catalog) -> Offer:
    """A price charged in EUR, priced at the older fixture rate (2024-06-28: 1.0705): the
    recording's day and the fixture's newer rates are taken out, so the recording brings news."""
    ExchangeRate.objects.filter(rate_date__gte=DAY).delete()
    offer = Offer.objects.get(instance__slug="bm-gpu4-8", region__code="eu-amsterdam-1")
    Offer.objects.filter(pk=offer.pk).update(currency="EUR", price_per_hour=Decimal("20"))
    writer.reprice_in_usd()
    offer.refresh_from_db()
    # 20 EUR x 1.0705 / 8 GPUs = 2.67625 USD per GPU-hour
    assert (offer.price_per_gpu_hour_usd, offer.exchange_rate_date) == (
        Decimal("2.676250"),
        date(2024, 6, 28),
    )
    return offer


def test_refresh_rates_stores_dated_sourced_rates_and_reprices_other_currencies(eur_offer):
    out = StringIO()
    call_command("refresh_rates", "--replay", str(RECORDINGS / "ecb"), stdout=out)
    assert (
        "ECB reference rates of 2025-10-21 from https://www.ecb.europa.eu/stats/eurofxref/"
        "eurofxref-daily.xml: 30 currencies; created 30, updated 0, unchanged 0; 1 offer(s) "
        "repriced in USD"
    ) in out.getvalue()
    cny = ExchangeRate.objects.get(currency="CNY", rate_date=DAY)
    assert cny.usd_per_unit == Decimal("0.140476")
    assert cny.source_url.startswith("https://www.ecb.europa.eu/stats/policy_and_exchange_rates/")
    eur_offer.refresh_from_db()
    # 20 EUR x 1.1607 / 8 = 2.90175 USD per GPU-hour, at the new date; the charged price stays.
    assert (eur_offer.price_per_gpu_hour_usd, eur_offer.exchange_rate_date) == (
        Decimal("2.901750"),
        DAY,
    )
    assert (eur_offer.price_per_hour, eur_offer.currency) == (Decimal("20"), "EUR")
    assert ExchangeRate.objects.filter(rate_date=date(2024, 6, 28)).count() == 2  # history kept


def test_a_second_refresh_of_the_same_rates_changes_nothing(eur_offer):
    call_command("refresh_rates", "--replay", str(RECORDINGS / "ecb"), stdout=StringIO())
    out = StringIO()
    call_command("refresh_rates", "--replay", str(RECORDINGS / "ecb"), stdout=out)
    assert "created 0, updated 0, unchanged 30; 0 offer(s) repriced" in out.getvalue()


@pytest.mark.usefixtures("catalog")
def test_the_fixture_rates_of_the_same_day_read_unchanged(replay):
    # fixtures/exchange_rates.toml holds EUR 1.1607 and CNY 0.140476 for 2025-10-21: the same
    # figures at 6 significant digits, so the live rates agree with the curated ones.
    summary = refresh_reference_rates(replay("ecb"))
    assert (summary.created, summary.updated, summary.unchanged) == (28, 0, 2)


# -- hostile answers ------------------------------------------------------------------------------

OK = httpx.Response(200, headers={"Content-Type": "text/xml"}, content=RECORDED)


def answers(*responses):
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        assert str(request.url) == ECB_URL
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return handler


def xml(content: bytes) -> httpx.Response:
    return httpx.Response(200, headers={"Content-Type": "text/xml"}, content=content)


HOSTILE = [
    ("truncated-xml", [xml(RECORDED[:700])], "not a readable XML document"),
    (
        "html-200",
        [
            httpx.Response(
                200, headers={"Content-Type": "text/html"}, content=b"<h1>Maintenance</h1>"
            )
        ],
        "expected XML from https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml",
    ),
    ("renamed-field", [xml(RECORDED.replace(b"rate=", b"value="))], "no usable USD rate"),
    ("empty", [xml(document())], "no usable USD rate"),
    ("500-until-give-up", [httpx.Response(500)] * 4, "HTTP 500 Internal Server Error"),
    ("timeout", [httpx.ReadTimeout("slow")] * 4, "timed out waiting for"),
]


@pytest.mark.usefixtures("catalog")
@pytest.mark.parametrize(("variant", "responses", "reason"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_an_unusable_answer_fails_refresh_rates_with_its_reason_and_changes_nothing(
    variant, responses, reason, sleeps
):
    before = list(ExchangeRate.objects.values_list("currency", "rate_date", "usd_per_unit"))
    prices = list(Offer.objects.values_list("pk", "price_per_gpu_hour_usd", "exchange_rate_date"))
    client = make_client(httpx.MockTransport(answers(*responses)), sleep=sleeps, rng=lambda: 0.5)
    with client, pytest.raises((ScrapeError, httpx.HTTPError)) as raised:
        refresh_reference_rates(client)
    message = (
        describe_http_failure(raised.value)
        if isinstance(raised.value, httpx.HTTPError)
        else str(raised.value)
    )
    assert reason in message
    assert list(ExchangeRate.objects.values_list("currency", "rate_date", "usd_per_unit")) == before
    assert (
        list(Offer.objects.values_list("pk", "price_per_gpu_hour_usd", "exchange_rate_date"))
        == prices
    )


@pytest.mark.usefixtures("catalog")
def test_429_then_success_waits_retry_after_and_stores_the_rates(sleeps):
    limited = httpx.Response(429, headers={"Retry-After": "2"})
    with make_client(httpx.MockTransport(answers(limited, OK)), sleep=sleeps) as client:
        summary = refresh_reference_rates(client)
    assert sleeps == [2.0]
    assert summary.created == 28


@pytest.mark.usefixtures("catalog")
def test_bad_currencies_are_refused_alone_and_keep_their_stored_rates(sleeps):
    # CNY absurd (a thousandth of its rate), GBP duplicated with two rates, JPY negative,
    # XX1 not a currency; the other 26 currencies are stored.
    content = (
        RECORDED.replace(b"'CNY' rate='8.2626'", b"'CNY' rate='8262.6'")
        .replace(b"'JPY' rate='176.45'", b"'JPY' rate='-176.45'")
        .replace(
            b"<Cube currency='GBP' rate='0.86780'/>",
            b"<Cube currency='GBP' rate='0.86780'/><Cube currency='GBP' rate='0.9'/><Cube currency='XX1' rate='1'/>",
        )
    )
    with make_client(httpx.MockTransport(answers(xml(content))), sleep=sleeps) as client:
        summary = refresh_reference_rates(client)
    refused = " | ".join(summary.refused)
    assert "JPY: rate '-176.45' is not a positive number" in refused
    assert "GBP: listed twice with different rates; stored rate kept" in refused
    assert "'XX1': not a three-letter currency code" in refused
    assert (
        # Against the newest stored rate: the fixture's (2026-06-01, 0.147584).
        "CNY: 0.000140476 USD differs from the stored 0.1475840000 by more than a factor of 2"
        in refused
    )
    assert (summary.created, summary.unchanged) == (
        26,
        1,
    )  # EUR unchanged; CNY, GBP, JPY not stored
    assert ExchangeRate.objects.get(currency="CNY", rate_date=DAY).usd_per_unit == Decimal(
        "0.140476"
    )
    assert not ExchangeRate.objects.filter(currency__in=["GBP", "JPY"]).exists()


@pytest.mark.usefixtures("catalog")
def test_refresh_rates_exits_1_with_the_reason_when_the_answer_is_unusable(tmp_path):
    (tmp_path / "page.html").write_text("<h1>Maintenance</h1>")
    (tmp_path / "manifest.json").write_text(
        f'[{{"method": "GET", "url": "{ECB_URL}", "status": 200, '
        '"content_type": "text/html", "body": "page.html"}]'
    )
    with pytest.raises(
        CommandError, match="refresh_rates failed, nothing changed: ecb rates: expected XML"
    ):
        call_command("refresh_rates", "--replay", str(tmp_path), stdout=StringIO())
