"""The detail page's purchase modes and the provider pages' network-readiness facts."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from offerings.models import InstanceType, Provider, ProviderReadiness
from offerings.pages.readiness import readiness_facts
from offerings.purchase import has_on_demand_price, purchase_modes_of

register = template.Library()


@register.inclusion_tag("offerings/_purchase_modes.html")
def purchase_modes(instance: InstanceType) -> dict:
    """How the type can be bought, and plainly whether an on-demand price is on record."""
    modes = purchase_modes_of(instance)
    return {
        "modes": modes,
        "on_demand_price": has_on_demand_price(instance),
        "on_demand_mode": any(mode.kind == "on-demand" for mode in modes),
    }


@register.inclusion_tag("offerings/_readiness_card.html")
def readiness_card(provider: Provider) -> dict:
    """The provider page's card of network-readiness facts."""
    return {"provider": provider, "facts": readiness_facts(provider)}


@register.simple_tag
def readiness_basis(row: ProviderReadiness | None, provider: str = "") -> SafeString:
    """Who states a readiness fact: the provider, the vendor's platform, or a third party."""
    if row is None or row.basis is None:
        return ""
    if row.basis == "provider":
        text = _("stated by %(provider)s") % {"provider": provider} if provider else _("stated")
    elif row.basis == "platform":
        text = _("follows from the vendor's platform")
    else:
        text = _("third party")
    return format_html(' <small class="basis basis-{}">{}</small>', row.basis, text)
