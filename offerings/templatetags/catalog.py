"""Template helpers for showing catalog figures: money in the display currency, unknowns."""

from decimal import ROUND_HALF_EVEN, Decimal

from django import template
from django.utils.translation import gettext as _

register = template.Library()

SYMBOLS = {"USD": "$", "CNY": "¥"}


@register.filter
def price(value: Decimal | None, currency: str = "USD") -> str:
    """`$12.29` / `¥87.50`; an em dash for no figure."""
    if not isinstance(value, Decimal | int | float):
        return "—"
    value = Decimal(str(value))
    places = Decimal("0.01") if abs(value) >= Decimal("0.1") else Decimal("0.0001")
    amount = value.quantize(places, rounding=ROUND_HALF_EVEN)
    return f"{SYMBOLS.get(currency, currency + ' ')}{amount:,}"


@register.filter
def or_unknown(value) -> str:
    """Show a missing fact as 'unknown', never as blank or zero."""
    return _("unknown") if value in (None, "") else value


@register.filter
def yes_no_unknown(value: bool | None) -> str:
    if value is None:
        return _("unknown")
    return _("yes") if value else _("no")


@register.filter
def facet(counts: dict | None, key: str):
    """Look up facet counts by parameter name, then a count by value (0 for no match)."""
    if not isinstance(counts, dict):
        return None
    value = counts.get(key)
    if value is None and all(isinstance(n, int) for n in counts.values()):
        return 0  # a level of counts where this choice matched nothing
    return value


@register.filter
def field_choices(form, name: str):
    """The (value, label) choices of one form field, for rendering facets out of band."""
    return [(v, t) for v, t in form.fields[name].choices if v]
