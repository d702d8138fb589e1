"""ETags and a rendered-response cache keyed on the catalog's data version.

`offerings_catalogversion.counter` moves inside every transaction that writes a table the public
pages show (PostgreSQL statement triggers, migration 0005), and the new value becomes visible
exactly when the data does. A response's ETag is a digest of that counter, the full request path,
the language, whether htmx asked for a fragment, and a time bucket (prices turn stale with time
alone). A request whose If-None-Match carries the current ETag gets a 304 after one indexed
query; a repeated request is answered from the cache (Redis with REDIS_URL) without rendering.

In front of Django, `LocalPageCache` (gpucatalog/wsgi.py) keeps each process's most requested
finished pages in memory and answers repeats without entering Django at all: it re-reads the
data version at most every PAGE_CACHE_VERSION_CHECK_SECONDS, so a page is at most that much
behind a write.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from datetime import time as clock_time
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.translation import get_language

CACHED_HEADERS = ("Content-Type", "Content-Disposition", "Vary", "Content-Language")
# Set by `versioned` on HTML pages the process cache may keep: "<data version> <expiry epoch>".
# LocalPageCache always removes it before the response leaves the process.
LOCAL_MARKER = "X-Gpucatalog-Local-Cache"


def catalog_version() -> int:
    """The current data version (0 before the first migration's row exists)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT counter FROM offerings_catalogversion WHERE id = 1")
        row = cursor.fetchone()
    return row[0] if row else 0


def cache_period() -> int:
    return max(settings.PAGE_CACHE_SECONDS, 60)


def time_bucket() -> int:
    """Which cache period we are in: part of every ETag, so prices re-render as they age."""
    return int(time.time() // cache_period())


def etags_in(header: str) -> list[str]:
    """The entity tags of an If-None-Match header."""
    return [tag.strip() for tag in header.split(",")]


def etag_for(request: HttpRequest, version: int, bucket: int) -> str:
    parts = [
        str(version),
        str(bucket),
        request.get_full_path(),
        get_language() or "",
        request.headers.get("HX-Request", ""),
    ]
    return '"' + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32] + '"'


def versioned(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer GETs with an ETag, 304 when it still matches, and a cached body when we have one."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        version = catalog_version()
        request.catalog_version = version  # lets the page reuse what only the data decides
        bucket = time_bucket()
        etag = etag_for(request, version, bucket)
        if etag in etags_in(request.headers.get("If-None-Match", "")):
            response = HttpResponseNotModified()
            response["ETag"] = etag
            return response
        key = f"page:{etag}"
        stored = cache.get(key) if settings.PAGE_CACHE_SECONDS else None
        if stored is not None:
            response = HttpResponse(stored["content"], status=200)
            for name, value in stored["headers"].items():
                response[name] = value
        else:
            response = view(request, *args, **kwargs)
            if settings.PAGE_CACHE_SECONDS and response.status_code == 200:
                headers = {h: response[h] for h in CACHED_HEADERS if response.has_header(h)}
                content = response.content  # renders a TemplateResponse if needed
                cache.set(
                    key, {"content": content, "headers": headers}, settings.PAGE_CACHE_SECONDS
                )
        if response.status_code == 200:
            response["ETag"] = etag
            if settings.PAGE_CACHE_SECONDS and response["Content-Type"].startswith("text/html"):
                # Kept until the ETag's own time bucket ends, so the two never disagree.
                response[LOCAL_MARKER] = f"{version} {(bucket + 1) * cache_period()}"
        return response

    return wrapper


@dataclass(frozen=True)
class LocalEntry:
    version: int
    expires: float
    etag: str
    headers: list[tuple[str, str]]
    body: bytes


class LocalPageCache:
    """WSGI middleware: repeated GETs of a page `versioned` marked, answered from this process.

    Only whole 200 responses with the marker, no Set-Cookie and no Vary beyond HX-Request and
    Accept-Language (the URL, not the header, picks the language) are kept, keyed on host,
    scheme, path, query string and HX-Request; the least recently used go first beyond
    PAGE_CACHE_LOCAL_ENTRIES. An entry is served while the data version it was rendered at is
    still the current one (read at most every PAGE_CACHE_VERSION_CHECK_SECONDS) and its ETag's
    time bucket has not ended. Rate-limited routes (the API, the feed) are never marked.
    """

    ALLOWED_VARY = frozenset({"hx-request", "accept-language"})

    def __init__(self, app: Callable) -> None:
        self.app = app
        self.entries: OrderedDict[tuple, LocalEntry] = OrderedDict()
        self.lock = threading.Lock()
        self.version: int | None = None
        self.version_read_at = float("-inf")

    def enabled(self) -> bool:
        return bool(settings.PAGE_CACHE_SECONDS) and settings.PAGE_CACHE_LOCAL_ENTRIES > 0

    def current_version(self, now: float) -> int | None:
        if now - self.version_read_at >= settings.PAGE_CACHE_VERSION_CHECK_SECONDS:
            try:
                self.version = catalog_version()
            except Exception:  # the database is away: let Django answer (and report) it
                self.version = None
            self.version_read_at = now
        return self.version

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD")
        if method not in ("GET", "HEAD") or not self.enabled():
            return self.pass_through(environ, start_response)
        key = (
            environ.get("wsgi.url_scheme"),
            environ.get("HTTP_HOST") or environ.get("SERVER_NAME"),
            environ.get("PATH_INFO"),
            environ.get("QUERY_STRING", ""),
            environ.get("HTTP_HX_REQUEST", ""),
        )
        entry = self.entries.get(key)
        now = time.time()
        fresh = entry is not None and now < entry.expires
        if fresh and entry.version == self.current_version(time.monotonic()):
            with self.lock:
                if key in self.entries:
                    self.entries.move_to_end(key)
            return self.serve(entry, environ, start_response, method)
        if method != "GET":
            return self.pass_through(environ, start_response)
        return self.render_and_keep(key, environ, start_response)

    def serve(self, entry: LocalEntry, environ: dict, start_response, method: str):
        if entry.etag in etags_in(environ.get("HTTP_IF_NONE_MATCH", "")):
            kept = ("etag", "vary", "content-language")
            start_response(
                "304 Not Modified", [(k, v) for k, v in entry.headers if k.lower() in kept]
            )
            return []
        start_response("200 OK", entry.headers)
        return [] if method == "HEAD" else [entry.body]

    def pass_through(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        return self.app(environ, self.without_marker(start_response, {}))

    @staticmethod
    def without_marker(start_response: Callable, seen: dict) -> Callable:
        """A start_response that drops the marker, noting the status, headers sent and marker."""

        def forward(status, headers, exc_info=None):
            sent = [(k, v) for k, v in headers if k != LOCAL_MARKER]
            marker = next((v for k, v in headers if k == LOCAL_MARKER), None)
            seen.update(status=status, headers=sent, marker=marker)
            return start_response(status, sent, exc_info)

        return forward

    def render_and_keep(self, key: tuple, environ: dict, start_response: Callable):
        seen: dict = {}
        result = self.app(environ, self.without_marker(start_response, seen))
        marker, sent = seen.get("marker"), seen.get("headers", [])
        if marker is None or not seen["status"].startswith("200") or not self.keepable(sent):
            return result
        body = b"".join(result)
        if hasattr(result, "close"):
            result.close()  # Django's request_finished: connections are returned as usual
        version, expires = marker.split()
        entry = LocalEntry(
            version=int(version),
            expires=float(expires),
            etag=next((v for k, v in sent if k.lower() == "etag"), ""),
            headers=sent,
            body=body,
        )
        with self.lock:
            # Django read the version for this very request: it counts as a fresh reading.
            self.version, self.version_read_at = entry.version, time.monotonic()
            self.entries[key] = entry
            self.entries.move_to_end(key)
            while len(self.entries) > settings.PAGE_CACHE_LOCAL_ENTRIES:
                self.entries.popitem(last=False)
        return [body]

    def keepable(self, headers: list[tuple[str, str]]) -> bool:
        for name, value in headers:
            lowered = name.lower()
            if lowered == "set-cookie":
                return False
            if lowered == "vary":
                varies = {v.strip().lower() for v in value.split(",") if v.strip()}
                if not varies <= self.ALLOWED_VARY:
                    return False
        return True


class RenderedParts:
    """Pieces of a page rendered once per data version and kept in this process: the filter
    table's rows, the API's serialized rows, and the SQL of the filter page's and the
    API's queries (`kept_statement`).

    Every page still runs its own SQL; what is kept is the output of a pure function of what
    that SQL returned (the row, the offer it shows) and of the key's other parts (language,
    currency, the minute that relative ages are computed at, ...). Entries of an older data
    version are dropped as soon as a newer one is seen, so a data change never serves a stale
    part; beyond ROW_CACHE_ENTRIES the least recently used go first. ROW_CACHE_ENTRIES=0 renders
    every part afresh.
    """

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple, Any] = OrderedDict()
        self.version: int | None = None
        self.lock = threading.Lock()

    def _current(self, version: int | None) -> bool:
        """Is keeping on for this version? Entries of any other version are dropped."""
        if version is None or settings.ROW_CACHE_ENTRIES <= 0:
            return False
        if version != self.version:
            with self.lock:
                if version != self.version:
                    self.entries.clear()
                    self.version = version
        return True

    def get_many(self, version: int | None, keys: Iterable[tuple]) -> dict[tuple, str]:
        """The kept parts among `keys`, each marked as just used."""
        if not self._current(version):
            return {}
        found = {}
        for key in keys:
            text = self.entries.get(key)
            if text is not None:
                found[key] = text
                with self.lock:
                    if key in self.entries:
                        self.entries.move_to_end(key)
        return found

    def put(self, version: int | None, key: tuple, text: str) -> None:
        if not self._current(version):
            return
        with self.lock:
            if version == self.version:
                self.entries[key] = text
                while len(self.entries) > settings.ROW_CACHE_ENTRIES:
                    self.entries.popitem(last=False)

    def get(self, version: int | None, key: tuple, render: Callable[[], str]) -> str:
        """The kept part for `key`, or `render()`'s, kept."""
        found = self.get_many(version, (key,))
        if key in found:
            return found[key]
        text = render()
        self.put(version, key, text)
        return text

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.version = None


rendered_parts = RenderedParts()

TIMES = (date, clock_time, timedelta)  # datetime is a date


def kept_statement(
    version: int | None,
    key: tuple,
    build: Callable[[], Any],
    evaluate: Callable[[Any], Any],
    replay: Callable[[Any, Any], Any],
    shape: Callable[[Any], Any] = lambda result: None,
) -> Any:
    """`evaluate(build())`, a query the ORM sends as one statement, with that statement kept for
    this data version under `key` (the request parameters that built it): later calls send the
    kept SQL and read its result with `replay(cursor, shape(first result))`, and build nothing.

    The same parameters build the same SQL, and at catalog scale building and compiling the
    page's querysets costs more Python than anything else on it; every call still runs the
    statement. Only what `evaluate` sends is looked at (a lookup `build` makes on the way, such
    as a continent's regions, is not the query), and the statement is kept only when it is the
    one statement sent and none of its parameters is a date or time (a filter relative to now).
    A write that commits while a request runs may have the request keep SQL built from the
    newer data under the version it read at its start; only requests that started before that
    write can use it, since the first request to read the new version drops every entry.
    """
    kept = rendered_parts.get_many(version, (key,)).get(key)
    if kept is not None:
        sql, params, described = kept
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return replay(cursor, described)
    query = build()
    statements: list[tuple[str, Any]] = []

    def capture(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        result = evaluate(query)
    if len(statements) == 1:
        sql, params = statements[0]
        if not any(isinstance(value, TIMES) for value in params or ()):
            rendered_parts.put(version, key, (sql, params, shape(result)))
    return result


def parameters_key(data, names: Iterable[str]) -> tuple:
    """A request's values (a QueryDict) of the parameters `names`, as part of a key."""
    return tuple((name, tuple(data.getlist(name))) for name in sorted(names) if name in data)


def fetch_all(cursor, _shape=None) -> list[tuple]:
    """A kept `values_list` query's rows (the fields it reads need no converting)."""
    return cursor.fetchall()


def fetch_one(cursor, _shape=None) -> Any:
    """A kept `count()`'s number."""
    return cursor.fetchone()[0]


def fetch_named(cursor, names: list[str]) -> dict:
    """A kept `aggregate()`'s figures, by the names its first result had (`shape=list`): the
    statement's columns come in that order, unnamed when the ORM wraps it in a subquery."""
    return dict(zip(names, cursor.fetchone(), strict=True))


@dataclass(frozen=True)
class KeptRow:
    """A filter-table row the page found kept: its id and markup, no model loaded."""

    pk: int
    html: str


def listing_row_key(
    pk: int,
    offer_pk: int | None,
    offer_stale: bool | None,
    *,
    language: str | None,
    currency: str | None,
    checked: bool,
    badges: str | None,
    minute: int,
) -> tuple:
    """The key of one kept filter-table row: everything its markup reads beyond the row's own
    data, which the data version covers (the `listing_row` tag and the filter page's view build
    it the same way)."""
    return ("listing-row", pk, language, currency, offer_pk, offer_stale, checked, badges, minute)
