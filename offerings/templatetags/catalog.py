"""Template helpers for showing catalog figures: money in the display currency, unknowns."""

import json
from decimal import Decimal

from django import template
from django.utils.formats import number_format
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from offerings import platform
from offerings.money import shown_gpu_hour_price, shown_price, shown_usd_as
from offerings.table.reference import CHOICE_FIELDS, listing_reference
from offerings.web import relative_time
from offerings.web.caching import versioned_value

register = template.Library()


@register.filter
def price(value: Decimal | None, currency: str = "USD") -> str:
    """Money on a page, rounded to cents (`money.shown_price`)."""
    return shown_price(value, currency)


@register.filter
def gpu_hour_price(value: Decimal | None, currency: str = "USD") -> str:
    """A price per GPU-hour on a page (`money.shown_gpu_hour_price`)."""
    return shown_gpu_hour_price(value, currency)


@register.simple_tag(takes_context=True)
def usd_as(context, value, per_gpu_hour: bool = False) -> str:
    """A USD figure in the page's `currency`, at the newest reference rate of the context's
    `rates` (a page that shows another currency passes them)."""
    return shown_usd_as(
        value, context.get("currency", "USD"), context.get("rates"), small=per_gpu_hour
    )


@register.filter
def plain_number(value) -> str:
    """A decimal without the column's trailing zeros or an exponent: 0.1404760000 -> 0.140476."""
    if not isinstance(value, Decimal | int | float):
        return "—"
    return format(Decimal(str(value)).normalize(), "f")


@register.filter
def message_size(size_bytes: int | None) -> str:
    """A message size in the binary units nccl-tests prints: 1073741824 -> 1 GiB."""
    if not isinstance(size_bytes, int) or size_bytes <= 0:
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale:
            return f"{plain_number(Decimal(size_bytes) / scale)} {unit}"
    return f"{size_bytes} B"


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
def run_time(hours: float | None) -> str:
    """A run's length: hours below two days, else days with the hours beside them."""
    if not isinstance(hours, int | float):
        return "—"
    if hours < 48:
        return _("%(hours)s h") % {"hours": number_format(round(hours, 1), 1)}
    return _("%(days)s days (%(hours)s h)") % {  # two days or more: always plural
        "days": number_format(round(hours / 24, 1), 1, force_grouping=True),
        "hours": number_format(round(hours), 0, force_grouping=True),
    }


@register.filter
def age(value):
    """How long ago `value` was, in the active language (offerings.web.relative_time)."""
    return relative_time.age(value) if value else ""


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


# htmx's settings, read from base.html's <meta name="htmx-config">: no eval, no injected styles, no
# history snapshots (going back reloads the page); a 400 is the filter page saying which filters it
# could not use, so it is swapped in like a 200, while other 4xx and 5xx answers are not.
HTMX_CONFIG = json.dumps(
    {
        "allowEval": False,
        "includeIndicatorStyles": False,
        "historyCacheSize": 0,
        "refreshOnHistoryMiss": True,
        "responseHandling": [
            {"code": "204", "swap": False},
            {"code": "[23]..", "swap": True},
            {"code": "400", "swap": True, "error": False},
            {"code": "[45]..", "swap": False, "error": True},
        ],
    },
    separators=(",", ":"),
)


@register.simple_tag
def htmx_config() -> SafeString:
    """The htmx settings as JSON, for a single-quoted attribute (the JSON has no single quote)."""
    return mark_safe(HTMX_CONFIG)


# -- interconnect badges: Python, not included templates, as the filter page shows 50-200 rows
# of them and an include costs as much as the rest of a row.


BASIS_CLASS = {"platform": " basis-platform", "third-party": " basis-third-party"}


def _basis_note(basis: str | None) -> str:
    """Hidden words saying a badge's fact is not the provider's own statement."""
    if basis == "platform":
        return format_html('<span class="visually-hidden"> ({})</span>', _("from the platform"))
    if basis == "third-party":
        return format_html('<span class="visually-hidden"> ({})</span>', _("third party"))
    return ""


def _badge(kind: str, text: str, basis: str | None) -> SafeString:
    # A platform or third-party fact is drawn differently from a stated one (see the legend).
    return format_html(
        '<span class="badge {}{}">{}{}</span>',
        kind,
        BASIS_CLASS.get(basis or "", ""),
        text,
        _basis_note(basis),
    )


@register.simple_tag
def fact_basis(row, name: str, provider: str = "") -> SafeString:
    """Beside a fact on the detail page: who states it, or which vendor platform forces it."""
    if row is None or name not in (row.basis or {}):
        return ""
    basis = row.basis[name]
    if basis == "provider":
        text = _("stated by %(provider)s") % {"provider": provider} if provider else _("stated")
    elif basis == "platform":
        rule = platform.RULES_BY_SLUG.get(getattr(row, "platform_rules", {}).get(name, ""))
        text = (
            _("follows from the %(system)s specification") % {"system": rule.system}
            if rule
            else _("follows from the vendor's platform")
        )
    else:
        text = _("third party")
    return format_html(' <small class="basis basis-{}">{}</small>', basis, text)


@register.simple_tag
def link_badge(link) -> SafeString:
    """The GPU-to-GPU link of an instance: PCIe only, unknown, or NVLink/Infinity Fabric."""
    if not link or link.technology == "unknown":
        return format_html('<span class="badge unknown">{}</span>', _("unknown"))
    basis = (link.basis or {}).get("technology")
    if link.technology == "none":
        return _badge("pcie", _("PCIe only"), basis)
    name = "Infinity Fabric" if link.technology == "infinity-fabric" else "NVLink"
    if link.topology == "nvswitch":
        name += " / NVSwitch"
    elif link.topology == "bridge":
        name += " " + _("bridge")
    html = _badge("link", name, basis)
    if link.domain_size:
        domain = _("%(n)s-GPU domain") % {"n": link.domain_size}
        html += format_html(" <small>{}</small>", domain)
    if link.bandwidth_gbytes_per_s:
        html += format_html(" <small>{} GB/s</small>", link.bandwidth_gbytes_per_s)
    return mark_safe(html)


@register.simple_tag
def fabric_badge(fabric, link=None) -> SafeString:
    """The fabric between nodes: an RDMA technology, TCP-only kinds, or unknown.

    Given the row's GPU link, an NVLink row whose fabric is unknown also says that how it
    performs across nodes is unknown: fast inside the node says nothing about between nodes.
    """
    basis = (fabric.basis or {}).get("technology") if fabric else None
    if fabric and fabric.rdma_kind_unstated:  # say what is known: RDMA, of no named kind
        html = _badge("rdma", fabric.technology_label, (fabric.basis or {}).get("rdma"))
    elif not fabric or fabric.technology == "unknown":
        html = format_html('<span class="badge unknown">{}</span>', _("unknown"))
        if getattr(link, "technology", None) in ("nvlink", "infinity-fabric"):
            html += format_html(
                ' <small class="multi-node-unknown">{}</small>',
                _("multi-node performance unknown"),
            )
    elif fabric.technology == "tcpx" and fabric.generation == "tcpxo":
        html = _badge("tcp", _("TCPXO (not RDMA)"), basis)
    elif fabric.technology == "tcpx":
        html = _badge("tcp", _("TCPX (not RDMA)"), basis)
    elif fabric.technology == "ethernet":
        html = _badge("tcp", _("Ethernet only"), basis)
    else:
        html = _badge("rdma", fabric.get_technology_display(), basis)
    if not fabric:
        return mark_safe(html)
    network = fabric.network_gbits_per_s
    if fabric.bandwidth_gbits_per_s:
        if fabric.network_shared:
            html += format_html(
                " <small>{}</small>",
                _("%(n)s Gb/s, shared with the general network")
                % {"n": fabric.bandwidth_gbits_per_s},
            )
        else:
            html += format_html(" <small>{} Gb/s</small>", fabric.bandwidth_gbits_per_s)
    if network and (not fabric.network_shared or network != fabric.bandwidth_gbits_per_s):
        html += format_html(
            '<br><small class="network">{}</small>',
            _("general network %(n)s Gb/s") % {"n": network},
        )
    return mark_safe(html)


def model_choices(field, choices) -> list[tuple[str, str, str]]:
    """A field's non-empty choices as (value, '<option value="…"', '>label</option>')."""
    return [
        (
            str(value),
            format_html('<option value="{}"', str(value)),
            format_html(">{}</option>", str(label)),
        )
        for value, label in choices
        if str(value)
    ]


def kept_choices(context, field, build) -> list[tuple[str, str, str]]:
    """A field's choices, built into markup once per data version and language. The GPU,
    provider and region lists come from the listing's reference data (one statement for the
    three and the rates), the others from the field itself."""
    request = context.get("request")

    def built():
        if field.name in CHOICE_FIELDS:
            return build(field, listing_reference(request).choices[field.name])
        return build(field, field.field.choices)

    name = f"choices:{build.__name__}:{field.name}:{get_language()}"
    return versioned_value(request, name, built) if request else built()


@register.simple_tag(takes_context=True)
def select_options(context, field) -> SafeString:
    """The <option>s of a multiple-choice field with the chosen ones selected (the region list
    alone has hundreds: one join here instead of a template loop over them)."""
    choices = kept_choices(context, field, model_choices)
    chosen = chosen_values(field, [value for value, _s, _e in choices])
    return mark_safe(
        "".join(
            f"{start} selected{end}" if value in chosen else start + end
            for value, start, end in choices
        )
    )


def checkbox_choices(field, choices) -> list[tuple[str, str, str]]:
    """A field's choices as checkboxes: (value, '<label><input … value="…"', '> label</label>')."""
    return [
        (
            str(value),
            format_html(
                '<label><input type="checkbox" name="{}" value="{}"', field.html_name, str(value)
            ),
            format_html("> {}</label>", str(label)),
        )
        for value, label in choices
        if str(value)
    ]


def chosen_values(field, values) -> set[str]:
    """The field's chosen values; a bare region code chooses that code at every provider."""
    chosen = {str(value) for value in (field.value() or [])}
    if field.name == "region":
        chosen |= {value for value in values if value.partition(":")[2] in chosen}
    return chosen


@register.simple_tag(takes_context=True)
def checkbox_options(context, field) -> SafeString:
    """A multiple-choice field as a list of checkboxes, the chosen ones first and ticked (a list
    one can tick without knowing Ctrl-click)."""
    choices = kept_choices(context, field, checkbox_choices)
    chosen = chosen_values(field, [value for value, _s, _e in choices])
    ticked = [f"{start} checked{end}" for value, start, end in choices if value in chosen]
    rest = [start + end for value, start, end in choices if value not in chosen]
    return mark_safe("".join(ticked + rest))
