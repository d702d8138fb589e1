"""Reading money: reference rates in one query, USD figures and the display currency."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from decimal import ROUND_HALF_EVEN, Decimal

from offerings.models import ExchangeRate

USD = "USD"
GPU_HOUR_PLACES = Decimal("0.000001")


class UnknownCurrency(ValueError):
    """A price in a currency the reference exchange-rate table does not hold."""


class RateTable:
    """Every reference rate, read in one query: the USD figure of a price charged in another
    currency (at the newest rate, or at a given date) and amounts in the display currency."""

    def __init__(self, rates: Iterable[ExchangeRate] | None = None) -> None:
        if rates is None:
            rates = ExchangeRate.objects.all()
        self._by_date: dict[tuple[str, object], Decimal] = {}
        self._latest: dict[str, ExchangeRate] = {}
        for rate in rates:
            self._by_date[(rate.currency, rate.rate_date)] = rate.usd_per_unit
            latest = self._latest.get(rate.currency)
            if latest is None or rate.rate_date > latest.rate_date:
                self._latest[rate.currency] = rate
        self._dates: dict[str, list] = {}
        for currency, day in sorted(self._by_date):
            self._dates.setdefault(currency, []).append(day)

    def to_usd(self, amount: Decimal, currency: str) -> tuple[Decimal, ExchangeRate | None]:
        """Convert an amount at the newest rate; the rate used is returned so its date can show."""
        if currency == USD:
            return amount, None
        rate = self._latest.get(currency)
        if rate is None:
            raise UnknownCurrency(f"no reference exchange rate for {currency}")
        return amount * rate.usd_per_unit, rate

    def usd_per_unit(self, currency: str, on=None) -> Decimal | None:
        """USD per unit at the rate of `on` when there is one, else the newest; None if unknown."""
        if currency == USD:
            return Decimal(1)
        if on is not None and (currency, on) in self._by_date:
            return self._by_date[(currency, on)]
        latest = self._latest.get(currency)
        return latest.usd_per_unit if latest else None

    def usd_per_unit_as_of(self, currency: str, day) -> Decimal | None:
        """USD per unit at the newest reference rate published on or before `day` (the earliest
        when `day` precedes them all); None if the currency is unknown. For a price read on a
        past day, whose stored offer no longer says which rate it was converted at."""
        if currency == USD:
            return Decimal(1)
        dates = self._dates.get(currency)
        if not dates:
            return None
        index = bisect.bisect_right(dates, day)
        return self._by_date[(currency, dates[index - 1] if index else dates[0])]

    def usd(self, amount: Decimal, currency: str, on=None) -> Decimal | None:
        """The USD figure of an amount charged in `currency`: at the rate of `on` (an offer's
        `exchange_rate_date`) when there is one, else at the newest; None if the currency is
        unknown. Exact (Decimal, unrounded): each caller rounds as it shows.

        The one conversion of an offer's price: the API's rows and exports
        (`offerings.table.rows.offer_usd`), the estimator (`offerings.estimator.ranking`) and the
        planner (`offerings.planner.core.shapes_for`) all call it."""
        rate = self.usd_per_unit(currency, on)
        return None if rate is None else amount * rate

    def display(self, usd: Decimal | None, currency: str) -> Decimal | None:
        """Convert a USD amount to the display currency at the newest reference rate."""
        if usd is None or currency == USD:
            return usd
        rate = self.usd_per_unit(currency)
        return None if rate is None else usd / rate

    def display_rate(self, currency: str) -> ExchangeRate | None:
        return None if currency == USD else self._latest.get(currency)


def gpu_hour_usd(
    price_per_hour: Decimal, currency: str, gpu_count: int, rates: RateTable
) -> tuple[Decimal, ExchangeRate | None]:
    """Price per GPU-hour in USD, kept to 6 places; the API rounds half-even to 4 once."""
    usd, rate = rates.to_usd(price_per_hour, currency)
    per_gpu = (usd / gpu_count).quantize(GPU_HOUR_PLACES, rounding=ROUND_HALF_EVEN)
    return per_gpu, rate


# -- money as pages show it ---------------------------------------------------------------------

SYMBOLS = {"USD": "$", "CNY": "¥"}
CENTS = Decimal("0.01")


# The currencies a page can show its prices in (`currency`).
DISPLAY_CURRENCIES = ("USD", "CNY")


def display_currency(asked: str | None, language: str) -> str:
    """The currency a page shows: the one its query asks for, else the page's default."""
    return asked if asked in DISPLAY_CURRENCIES else page_currency(language)


def page_currency(language: str) -> str:
    """The currency a page shows when its query names none: CNY on the Chinese pages (the
    currency most of their readers are charged in), USD elsewhere; the API always answers USD."""
    return "CNY" if language == "zh-hans" else USD


def currency_prefix(currency: str) -> str:
    """What goes before an amount: `$`, `¥`, or the code and a space (`EUR `)."""
    return SYMBOLS.get(currency, currency + " ")


def _text(amount: Decimal, currency: str) -> str:
    return f"{currency_prefix(currency)}{amount:,f}"


def shown_price(value: Decimal | float | None, currency: str = USD) -> str:
    """An amount of money as a page shows it: rounded half-even to cents (`$12.29`, `¥156.19`,
    `$0.05`); an em dash for no figure. The exact figure stays in the API and the exports."""
    if not isinstance(value, Decimal | int | float):
        return "—"
    return _text(Decimal(str(value)).quantize(CENTS, rounding=ROUND_HALF_EVEN), currency)


def shown_usd_as(
    value: Decimal | float | None, currency: str, rates: RateTable, small: bool = False
) -> str:
    """A USD figure as a page shows it in `currency`, at that currency's newest reference rate:
    `shown_price`, or `shown_gpu_hour_price` for a `small` unit cost."""
    if currency != USD and value is not None:
        value = rates.display(Decimal(str(value)), currency)
    return (shown_gpu_hour_price if small else shown_price)(value, currency)


def shown_gpu_hour_price(value: Decimal | float | None, currency: str = USD) -> str:
    """A price per GPU-hour (or another small unit cost) as a page shows it: cents from one unit
    up (`$2.99`), three significant figures below it (`$0.853`, `$0.0123`), where cents alone
    would hide a third of the difference between two cheap GPUs."""
    if not isinstance(value, Decimal | int | float):
        return "—"
    value = Decimal(str(value))
    if abs(value) >= 1 or value == 0:
        return shown_price(value, currency)
    places = Decimal(1).scaleb(value.adjusted() - 2)  # three significant figures
    rounded = value.quantize(places, rounding=ROUND_HALF_EVEN)
    if rounded.adjusted() != value.adjusted():  # 0.09996 -> 0.1000, 0.9996 -> 1.000
        if abs(rounded) >= 1:
            return shown_price(rounded, currency)
        rounded = rounded.quantize(Decimal(1).scaleb(rounded.adjusted() - 2))
    return _text(rounded, currency)
