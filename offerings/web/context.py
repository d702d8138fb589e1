"""Template context every page gets."""

from __future__ import annotations

from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest

from offerings.money import DISPLAY_CURRENCIES


def currency(request: HttpRequest) -> dict:
    """`currency_query`: `currency=CNY` (or USD) when the page's query names a currency, so the
    links to the pages that show prices carry the reader's choice; empty otherwise (and on the
    400 page of a query too long to read)."""
    try:
        asked = request.GET.get("currency")
    except TooManyFieldsSent:
        return {"currency_query": ""}
    return {"currency_query": f"currency={asked}" if asked in DISPLAY_CURRENCIES else ""}
