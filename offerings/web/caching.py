"""The one response cache: whole responses in Django's cache framework, and their ETags.

`offerings_catalogversion.counter` moves inside every transaction that writes a table the public
pages show (PostgreSQL statement triggers, migration 0005), and the new value becomes visible
exactly when the data does. A cached view's key holds everything its body depends on:

- the data version, read once at the start of the request: its counter and the moment of the
  write that moved it (`version_key`), since counters repeat across databases and restores;
- the path, and the request's parameters that the view knows, in a canonical order; unknown
  names (`utm_*`, junk) are dropped from the request itself, so they reach neither the key nor
  any link the page echoes;
- the language, `HX-Request`, and the cache period (prices turn stale with time alone);
- the scheme and host when `SITE_URL` is unset (development), since absolute links then come
  from the request.

The ETag is a digest of that key, so a request whose `If-None-Match` matches gets a 304 after one
indexed query. A response is rendered from data read after its version, so an entry can only be
newer than its key, never older; and a write moves the version, so no entry outlives it.
Renders that miss the cache are counted per client (`RENDER_RATE`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from datetime import UTC
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.cache import get_conditional_response, patch_vary_headers
from django.utils.translation import get_language

from offerings.money import DISPLAY_CURRENCIES
from offerings.web.middleware import rate_limited, retry_after

CACHED_HEADERS = ("Content-Type", "Content-Disposition", "Vary", "Content-Language")
RENDER_GROUP = "gpucatalog:render"


#: The one statement a cache hit sends (the benchmarks recognise a hit by it).
VERSION_SQL = "SELECT counter, changed_at FROM offerings_catalogversion WHERE id = 1"


def version_key() -> str:
    """The current data version as keys hold it: the counter and the moment of the write that
    moved it. The counter alone repeats: every database's starts at 0, and a database restored
    from a backup counts the same numbers again over other data. With the moment, a key names
    one state of one database's history, so two databases sharing a Redis, or one restored,
    never read each other's entries."""
    with connection.cursor() as cursor:
        cursor.execute(VERSION_SQL)
        row = cursor.fetchone()
    if row is None:
        return "0"
    counter, changed_at = row
    return f"{counter}@{changed_at.astimezone(UTC):%Y%m%dT%H%M%S.%fZ}"


def site_url(path: str) -> str:
    """`path` on SITE_URL, or the path alone where it is unset: for what has no request whose
    host could be trusted (the data dumps, the MCP tools, the Markdown twins)."""
    return (settings.SITE_URL or "").rstrip("/") + path


def absolute_url(request: HttpRequest, path: str) -> str:
    """`path` on SITE_URL; without it (development only) on the scheme and host of the request,
    which cached views then carry in their key."""
    if settings.SITE_URL:
        return site_url(path)
    return request.build_absolute_uri(path)


def cache_period() -> int:
    return max(settings.PAGE_CACHE_SECONDS, 60)


def time_bucket() -> int:
    """Which cache period we are in: part of every key, so prices re-render as they age."""
    return int(time.time() // cache_period())


def refused_name(name: str) -> bool:
    """A parameter name the public interface rejects rather than ignores."""
    return name.startswith("_") or "__" in name


def known_query(query: QueryDict, known: Iterable[str]) -> QueryDict:
    """`query` with only the `known` names (and the refused ones, which the view answers with
    a 400), in the order given."""
    kept = QueryDict(mutable=True)
    names = set(known)
    for name in query:
        if name in names or refused_name(name):
            kept.setlist(name, query.getlist(name))
    kept._mutable = False
    return kept


def response_key(request: HttpRequest, version: str, bucket: int) -> str:
    """Everything a cached body depends on, as one string (the request's query already known)."""
    parts = [
        str(version),
        str(bucket),
        request.path,
        # Names in a canonical order (the order of one name's values can matter: it is kept).
        "&".join(f"{name}={request.GET.getlist(name)!r}" for name in sorted(request.GET)),
        get_language() or "",
        request.headers.get("HX-Request", ""),
    ]
    if not settings.SITE_URL:
        parts += [request.scheme or "", request.get_host()]
    return "\x1f".join(parts)


def digest_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def wants_json(request: HttpRequest) -> bool:
    path = request.path_info
    return path.startswith(("/api/", "/feeds/")) or request.GET.get("format") == "json"


def too_many_renders(request: HttpRequest) -> HttpResponse | None:
    """A 429 when this client has had more renders than RENDER_RATE allows, else None."""
    wait = retry_after(request, RENDER_GROUP, settings.RENDER_RATE, "render")
    if wait is None:
        return None
    if wants_json(request):
        return rate_limited(wait)
    response = render(request, "429.html", {"retry_after": wait}, status=429)
    response["Retry-After"] = str(wait)
    return response


def versioned_value[T](request: HttpRequest, name: str, build: Callable[[], T]) -> T:
    """A value that follows from the catalog's data alone (the rate table, the form's choice
    lists), kept in the response cache's store under the data version the request read: a write
    moves the version, so the value never outlives its data. Outside a cached view, built."""
    version = getattr(request, "version_key", None)
    if version is None or not settings.PAGE_CACHE_SECONDS:
        return build()
    return cache.get_or_set(f"data:{version}:{name}", build, settings.PAGE_CACHE_SECONDS)


def render_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For a page that cannot be cached (it carries a CSRF token): every GET is a render, counted
    per client like the renders that miss the cache."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method in ("GET", "HEAD"):
            limited = too_many_renders(request)
            if limited is not None:
                return limited
        return view(request, *args, **kwargs)

    return wrapper


#: Names that change how a page shows money, not what it is asked: every cached view keeps them,
#: whatever it reads itself (with a value it can show: a junk value is dropped unless the view
#: reads the name and answers it).
DISPLAY_ONLY = frozenset({"currency"})


def cached_response(
    parameters: Callable[[], Iterable[str]] | Iterable[str] = (),
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Serve GETs of a view from the response cache, with ETags and 304s.

    `parameters`: the names the view reads from the query string (or a function giving them);
    every other name is dropped from the request before the view sees it.
    """

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            known = parameters() if callable(parameters) else parameters
            # The reader's currency is kept on every page: its links carry it on (the planner's
            # and the table's in the navigation), whether or not the page shows money itself.
            kept = {name for name in DISPLAY_ONLY if request.GET.get(name) in DISPLAY_CURRENCIES}
            request.GET = known_query(request.GET, {*known, *kept})
            request.META["QUERY_STRING"] = request.GET.urlencode()  # get_full_path() echoes it
            request.version_key = version_key()
            digest = digest_of(response_key(request, request.version_key, time_bucket()))
            key, etag = f"page:{digest}", f'"{digest[:32]}"'
            if_none_match = request.headers.get("If-None-Match", "").strip()
            if if_none_match and if_none_match != "*":
                # A matching tag was handed out with a 200 for this very key; `*` asks whether
                # there is a 200 at all, which only the cache or a render can tell.
                early = get_conditional_response(request, etag=etag)
                if early is not None:
                    return early
            stored = cache.get(key) if settings.PAGE_CACHE_SECONDS else None
            if stored is not None:
                response = HttpResponse(stored["content"], status=200)
                for name, value in stored["headers"].items():
                    response[name] = value
            else:
                limited = too_many_renders(request)
                if limited is not None:
                    return limited
                response = view(request, *args, **kwargs)
                if response.status_code == 200 and settings.PAGE_CACHE_SECONDS:
                    content = response.content  # renders a TemplateResponse if needed
                    headers = {h: response[h] for h in CACHED_HEADERS if response.has_header(h)}
                    cache.set(
                        key, {"content": content, "headers": headers}, settings.PAGE_CACHE_SECONDS
                    )
            if response.status_code != 200:
                return response  # conditions apply to a 2xx answer only (RFC 9110, 13.2.1)
            response["ETag"] = etag
            patch_vary_headers(response, ("HX-Request",))
            return get_conditional_response(request, etag=etag, response=response)

        return wrapper

    return decorate
