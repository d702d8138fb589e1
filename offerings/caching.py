"""ETags and a rendered-response cache keyed on the catalog's data version.

`offerings_catalogversion.counter` moves inside every transaction that writes a table the public
pages show (PostgreSQL statement triggers, migration 0005), and the new value becomes visible
exactly when the data does. A response's ETag is a digest of that counter, the full request path,
the language, whether htmx asked for a fragment, and a time bucket (prices turn stale with time
alone). A request whose If-None-Match carries the current ETag gets a 304 after one indexed
query; a repeated request is answered from the cache (Redis with REDIS_URL) without rendering.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.translation import get_language

CACHED_HEADERS = ("Content-Type", "Content-Disposition", "Vary", "Content-Language")


def catalog_version() -> int:
    """The current data version (0 before the first migration's row exists)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT counter FROM offerings_catalogversion WHERE id = 1")
        row = cursor.fetchone()
    return row[0] if row else 0


def etag_for(request: HttpRequest, version: int) -> str:
    bucket = int(time.time() // max(settings.PAGE_CACHE_SECONDS, 60))
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
        etag = etag_for(request, catalog_version())
        if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
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
        return response

    return wrapper
