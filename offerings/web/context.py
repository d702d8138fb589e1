"""The reader's currency, and the template context every page gets."""

from __future__ import annotations

from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest
from django.utils.translation import get_language

from offerings.money import DISPLAY_CURRENCIES, display_currency


def request_currency(request: HttpRequest) -> str:
    """The currency a page shows its prices in (`currency`, else the language's default)."""
    return display_currency(request.GET.get("currency"), get_language())


def currency(request: HttpRequest) -> dict:
    """`currency_suffix`: `?currency=CNY` (or USD) when the page's query names a currency, so the
    links to the pages that show prices carry the reader's choice, and `currency_param` the
    same without the `?` (for a link that has a query of its own, and a form's hidden field);
    both empty otherwise (and on the 400 page of a query too long to read)."""
    try:
        asked = request.GET.get("currency")
    except TooManyFieldsSent:
        asked = None
    if asked not in DISPLAY_CURRENCIES:
        return {"currency_suffix": "", "currency_param": ""}
    return {"currency_suffix": f"?currency={asked}", "currency_param": f"currency={asked}"}
