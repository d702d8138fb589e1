"""ECB euro foreign exchange reference rates: the dated rates the catalog converts prices with.

No key. One `GET` of the ECB's daily XML (`eurofxref-daily.xml`): one `<Cube time="YYYY-MM-DD">`
holding `<Cube currency="XXX" rate="..."/>` per currency, each the units of XXX one euro buys.
The catalog stores USD per unit, so every rate is derived from the EUR cross rates:

    USD per EUR = rate(USD)
    USD per XXX = rate(USD) / rate(XXX)      (e.g. CNY: 1.1607 / 8.2626 = 0.140476)

rounded half-even to 6 significant digits (the ECB publishes 5 or 6, so more would be noise).
A currency whose new rate differs from its latest stored rate by more than a factor of
MAX_DAILY_FACTOR is refused as a data error and keeps its stored rate. `refresh_reference_rates`
writes the rates through `offerings.writer.record_reference_rates`, which re-derives the USD
figure of every offer charged in another currency (`reprice_in_usd`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation

import httpx
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException
from pydantic import ValidationError

from offerings import writer
from offerings.models import ExchangeRate
from offerings.schemas import ExchangeRateIn
from providers.base import ScrapeError, retry_note, snippet

ECB_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"
SOURCE_URL = (
    "https://www.ecb.europa.eu/stats/policy_and_exchange_rates/"
    "euro_reference_exchange_rates/html/index.en.html"
)
SIGNIFICANT_DIGITS = 6
# A day's reference rate moving by more than this factor is a data error, not a market move.
MAX_DAILY_FACTOR = Decimal(2)
CURRENCY_CODE = re.compile(r"^[A-Z]{3}$")


@dataclass
class EcbRates:
    """One day of ECB rates: units per euro by currency, and what was refused."""

    rate_date: date
    per_euro: dict[str, Decimal]
    refused: list[str] = field(default_factory=list)


@dataclass
class RatesSummary:
    rate_date: date
    currencies: int
    created: int
    updated: int
    unchanged: int
    repriced: int
    refused: list[str]


def _local(tag: str) -> str:
    """An element's name without its XML namespace."""
    return tag.rsplit("}", 1)[-1]


def parse_ecb_xml(content: bytes) -> EcbRates:
    """The daily XML -> its date and rates; refuses the whole document when it is unusable."""
    try:
        root = ElementTree.fromstring(content, forbid_dtd=True)
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise ScrapeError(
            f"ecb rates: not a readable XML document ({type(exc).__name__}: {exc}); "
            f"{len(content)} bytes, ends with {snippet(content[-80:])}"
        ) from None
    days = [e for e in root.iter() if _local(e.tag) == "Cube" and "time" in e.attrib]
    if len(days) != 1:
        raise ScrapeError(f"ecb rates: expected one dated Cube, found {len(days)}")
    try:
        rate_date = date.fromisoformat(days[0].attrib["time"])
    except ValueError:
        raise ScrapeError(f"ecb rates: unreadable date {days[0].attrib['time']!r}") from None
    per_euro: dict[str, Decimal] = {}
    refused: list[str] = []
    conflicting: set[str] = set()
    for cube in days[0]:
        if _local(cube.tag) != "Cube":
            continue
        code, text = cube.attrib.get("currency", ""), cube.attrib.get("rate", "")
        if not CURRENCY_CODE.match(code):
            refused.append(f"{code!r}: not a three-letter currency code")
            continue
        try:
            rate = Decimal(text)
        except InvalidOperation:
            refused.append(f"{code}: rate {text!r} is not a number")
            continue
        if not rate.is_finite() or rate <= 0:
            refused.append(f"{code}: rate {text!r} is not a positive number")
            continue
        if code in per_euro and per_euro[code] != rate:
            conflicting.add(code)
        per_euro.setdefault(code, rate)
    for code in sorted(conflicting):
        del per_euro[code]
        refused.append(f"{code}: listed twice with different rates; stored rate kept")
    if "USD" not in per_euro:
        reason = "; ".join(refused) or "no USD rate in the document"
        raise ScrapeError(
            f"ecb rates of {rate_date}: no usable USD rate, so no cross rates ({reason})"
        )
    return EcbRates(rate_date, per_euro, refused)


def usd_per_unit(rates: EcbRates) -> dict[str, Decimal]:
    """USD per one unit of each currency, from the euro cross rates, to 6 significant digits."""
    usd = rates.per_euro["USD"]
    context = Context(prec=SIGNIFICANT_DIGITS, rounding=ROUND_HALF_EVEN)
    derived = {"EUR": context.plus(usd)}
    for code, per_euro in rates.per_euro.items():
        if code not in ("USD", "EUR"):
            derived[code] = context.divide(usd, per_euro)
    return derived


def plausible(
    derived: dict[str, Decimal], rate_date: date, refused: list[str]
) -> list[ExchangeRateIn]:
    """The rates to store: those within MAX_DAILY_FACTOR of the currency's latest stored rate."""
    latest = {
        r.currency: r.usd_per_unit
        for r in ExchangeRate.objects.order_by("currency", "-rate_date").distinct("currency")
    }
    accepted = []
    for code, value in sorted(derived.items()):
        previous = latest.get(code)
        if previous and not previous / MAX_DAILY_FACTOR <= value <= previous * MAX_DAILY_FACTOR:
            refused.append(
                f"{code}: {value} USD differs from the stored {previous} by more than a factor "
                f"of {MAX_DAILY_FACTOR}; stored rate kept"
            )
            continue
        accepted.append(
            ExchangeRateIn(
                currency=code, rate_date=rate_date, usd_per_unit=value, source_url=SOURCE_URL
            )
        )
    return accepted


def _get_rates(client: httpx.Client) -> bytes:
    # Reference: https://www.ecb.europa.eu/stats/policy_and_exchange_rates/euro_reference_exchange_rates/html/index.en.html
    response = client.get(ECB_URL, headers={"Accept": "application/xml, text/xml"})
    response.read()
    if response.is_error:
        raise ScrapeError(
            f"ecb rates: HTTP {response.status_code} {response.reason_phrase} from "
            f"{ECB_URL}{retry_note(response)}: {snippet(response.content)}"
        )
    content_type = response.headers.get("Content-Type", "")
    if "xml" not in content_type.lower():
        raise ScrapeError(
            f"ecb rates: expected XML from {ECB_URL} but got {content_type or 'no content type'} "
            f"(HTTP {response.status_code}): {snippet(response.content)}"
        )
    return response.content


def refresh_reference_rates(
    client: httpx.Client, progress: Callable[[str], None] = lambda message: None
) -> RatesSummary:
    """Fetch today's ECB rates, store them dated and sourced, and re-derive USD prices."""
    progress("ecb: daily reference rates")
    rates = parse_ecb_xml(_get_rates(client))
    try:
        accepted = plausible(usd_per_unit(rates), rates.rate_date, rates.refused)
    except ValidationError as exc:  # a derived rate the schema refuses: a bug, say so
        raise ScrapeError(f"ecb rates: {exc}") from None
    if not accepted:
        raise ScrapeError(f"ecb rates of {rates.rate_date}: no rate accepted; nothing changed")
    counts, repriced = writer.record_reference_rates(accepted)
    return RatesSummary(
        rate_date=rates.rate_date,
        currencies=len(accepted),
        created=counts.get("created", 0),
        updated=counts.get("updated", 0),
        unchanged=counts.get("unchanged", 0),
        repriced=repriced,
        refused=rates.refused,
    )
