"""`/<path>.md`: the Markdown twin of the page at `/<path>/` (offerings/agents/twins.py)."""

from __future__ import annotations

import copy

from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    HttpResponseRedirect,
)
from django.urls import Resolver404, resolve
from django.utils.translation import get_language
from django.views.decorators.http import require_safe

from offerings.agents import twins

MARKDOWN = "text/markdown; charset=utf-8"
# The page is asked afresh: no validator of the twin's client applies to the page's HTML.
CONDITIONAL = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MODIFIED_SINCE", "HTTP_HX_REQUEST")


@require_safe
def markdown_twin(request: HttpRequest, path: str) -> HttpResponse:
    """Ask the page's own view for the page and answer its `<main>` as Markdown. A page that
    redirects (a provider's other name, a renamed type) redirects to its twin; a page that is
    not there is a 404 here too; a page's 400 (bad parameters) and 429 (too many renders, which
    the page's view counts: the twin adds no count of its own) keep their status."""
    if path.endswith("/") or "//" in path or path.startswith("."):
        raise Http404("no such page")
    prefix = request.path_info[: -len(f"{path}{twins.SUFFIX}")]  # `/` or `/zh-hans/`
    target = f"{prefix}{twins.page_path(path)}"
    try:
        match = resolve(target)
    except Resolver404 as exc:
        raise Http404("no such page") from exc
    if match.namespace != "offerings" or match.url_name in twins.NOT_PAGES:
        raise Http404("no such page")
    inner = copy.copy(request)
    inner.__dict__.pop("headers", None)  # read again from the META below
    inner.path_info = target
    inner.path = request.path[: len(request.path) - len(request.path_info)] + target
    inner.META = {k: v for k, v in request.META.items() if k not in CONDITIONAL}
    inner.META["PATH_INFO"] = target
    inner.resolver_match = match  # the page's own route: its head links its twin
    response = match.func(inner, *match.args, **match.kwargs)
    if response.status_code in (301, 302, 307, 308):
        page, _, query = response["Location"].partition("?")
        twin = twins.twin_path(page) + (f"?{query}" if query else "")
        permanent = response.status_code in (301, 308)
        return (HttpResponsePermanentRedirect if permanent else HttpResponseRedirect)(twin)
    html = response.get("Content-Type", "").startswith("text/html")
    if response.status_code not in (200, 400, 429) or not html:  # an export is not a page
        raise Http404("no such page")
    query = request.GET.urlencode()
    page_url = twins.absolute(inner.path + (f"?{query}" if query else ""))
    text = response.content.decode(response.charset or "utf-8")
    twin = HttpResponse(
        twins.to_markdown(text, inner.path, page_url),
        content_type=MARKDOWN,
        status=response.status_code,
    )
    if response.has_header("Retry-After"):
        twin["Retry-After"] = response["Retry-After"]
    twin["Content-Language"] = get_language()
    twin["Link"] = f'<{page_url}>; rel="canonical"'
    return twin
