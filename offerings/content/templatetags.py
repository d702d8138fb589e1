"""Template tags for the content pages and the site frame (base.html).

- `{% capture as name %}...{% endcapture %}` renders its body once into a variable (base.html
  uses it to show the title block in `<title>` and in Open Graph).
- `{% tablelink "slug" %}text{% endtablelink %}`: text linked to the pre-filtered table, with the
  live count; `{% fig "nvlink4" %}`: a figure from `offerings.content.facts`, linked to its source
  (`{% figtext "nvlink4" %}` without the link, for use inside another link).
- `{% translated_path "zh-hans" %}`: the current page (query included) in another language;
  `{% alternate_links %}`: canonical URL plus hreflang alternates.
- `{{ data|ld_json }}`: JSON for a `<script type="application/ld+json">` block, escaped like
  Django's `json_script`.
- `{{ origins|price_origins }}`: where the data page says a provider's prices come from.
"""

from __future__ import annotations

import json

from django import template
from django.conf import settings
from django.template.base import Node, NodeList, Parser, Token
from django.urls import translate_url
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy as _

from offerings.agents import twins
from offerings.content.facts import stated_figures
from offerings.content.markup import figure_html, format_figure, table_link_html
from offerings.models import OfferOrigin
from offerings.web.caching import absolute_url

register = template.Library()

HREFLANG = {"en": "en", "zh-hans": "zh-Hans"}
OG_LOCALE = {"en": "en_US", "zh-hans": "zh_CN"}
JSON_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}
# `Offer.origin:Offer.source` in the data page's words; the curated catalog is the one other.
# Keyed `origin:source:basis` (offerings.content.views, `price_origins`).
PRICE_ORIGINS = {
    f"{OfferOrigin.SCRAPER}::provider": _("provider API"),
    f"{OfferOrigin.CURATOR}::provider": _("a curator"),
    f"{OfferOrigin.CURATOR}::third-party": _("a curator, from a third party"),
    f"{OfferOrigin.CATALOG}::third-party": _(
        "curated from a third party (SkyPilot's catalog or a post quoting the provider)"
    ),
    f"{OfferOrigin.SCRAPER}:skypilot:third-party": _(
        "SkyPilot's public catalog (third party), files read at their commits"
    ),
}
CURATED_ORIGIN = _("curated from documentation")
NO_PRICES = _("no prices yet")


class CaptureNode(Node):
    child_nodelists = ("nodelist",)

    def __init__(self, nodelist: NodeList, name: str) -> None:
        self.nodelist = nodelist
        self.name = name

    def render(self, context) -> str:
        context[self.name] = mark_safe(" ".join(self.nodelist.render(context).split()))
        return ""


@register.tag
def capture(parser: Parser, token: Token) -> CaptureNode:
    bits = token.split_contents()
    if len(bits) != 3 or bits[1] != "as":
        raise template.TemplateSyntaxError("Use {% capture as name %}...{% endcapture %}")
    nodelist = parser.parse(("endcapture",))
    parser.delete_first_token()
    return CaptureNode(nodelist, bits[2])


@register.simple_block_tag(takes_context=True)
def tablelink(context, content: str, slug: str) -> SafeString:
    """Its content linked to the table link `slug`, with the count the page's view read."""
    return table_link_html(slug, content, context["table_link_counts"])


@register.simple_tag
def fig(name: str) -> SafeString:
    return figure_html(name)


@register.simple_tag
def figtext(name: str) -> str:
    """A figure without its link, for use inside another link."""
    return format_figure(stated_figures()[name])


@register.filter
def price_origins(origins: list[str]) -> str:
    """Where a provider's prices come from (each `origin:source:basis`), in words, or that it
    has none yet."""
    if not origins:
        return str(NO_PRICES)
    return ", ".join(str(PRICE_ORIGINS.get(origin, CURATED_ORIGIN)) for origin in sorted(origins))


@register.filter
def ld_json(value) -> SafeString:
    text = json.dumps(value, ensure_ascii=False, sort_keys=False).translate(JSON_ESCAPES)
    return mark_safe(text)  # <, > and & are escaped above, as json_script does


def _path_in(request, language: str, *, with_query: bool) -> str:
    path = request.get_full_path() if with_query else request.path
    translated = translate_url(path, language)
    if translated == path and language != _language_of(request):
        # Not a translatable page (e.g. a 404): offer the home page in that language.
        return translate_url("/", language)
    return translated


def _language_of(request) -> str:
    return getattr(request, "LANGUAGE_CODE", settings.LANGUAGE_CODE)


@register.simple_tag(takes_context=True)
def translated_path(context, language: str) -> str:
    request = context.get("request")
    if request is None:
        return translate_url("/", language)
    return _path_in(request, language, with_query=True)


@register.simple_tag(takes_context=True)
def canonical_url(context) -> str:
    request = context.get("request")
    if request is None:
        return ""
    return absolute_url(request, request.path)


@register.simple_tag(takes_context=True)
def alternate_links(context) -> SafeString:
    """`<link rel="alternate" hreflang=...>` for every language plus x-default (English)."""
    request = context.get("request")
    if request is None:
        return mark_safe("")
    links = [
        (HREFLANG.get(code, code), absolute_url(request, _path_in(request, code, with_query=False)))
        for code, _name in settings.LANGUAGES
    ]
    default = absolute_url(request, _path_in(request, settings.LANGUAGE_CODE, with_query=False))
    links.append(("x-default", default))
    return format_html_join(
        "\n  ",
        '<link rel="alternate" hreflang="{}" href="{}">',
        ((lang, url) for lang, url in links),
    )


@register.simple_tag(takes_context=True)
def markdown_twin_link(context) -> SafeString:
    """`<link rel="alternate" type="text/markdown">` to the page's Markdown twin (`/<path>.md`,
    offerings/agents), on a page that has one, with the page's query."""
    request = context.get("request")
    match = getattr(request, "resolver_match", None)
    if match is None or match.namespace != "offerings" or match.url_name in twins.NOT_PAGES:
        return mark_safe("")
    query = request.GET.urlencode()
    path = twins.twin_path(request.path) + (f"?{query}" if query else "")
    return format_html(
        '<link rel="alternate" type="text/markdown" href="{}">', absolute_url(request, path)
    )


@register.simple_tag
def og_locale(language: str) -> str:
    return OG_LOCALE.get(language, language)


@register.simple_tag
def og_locale_alternates(language: str) -> SafeString:
    return format_html_join(
        "\n  ",
        '<meta property="og:locale:alternate" content="{}">',
        ((OG_LOCALE.get(code, code),) for code, _name in settings.LANGUAGES if code != language),
    )


@register.simple_tag
def hreflang(language: str) -> str:
    return HREFLANG.get(language, language)
