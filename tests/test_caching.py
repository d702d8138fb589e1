"""ETags and the response cache follow the catalog's data version, never serving stale rows."""

from decimal import Decimal

import pytest
from django.core.cache import cache
from django.test import override_settings

from offerings.caching import catalog_version, time_bucket
from offerings.models import InstanceType, Offer


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def one_time_bucket(monkeypatch):
    """Every request of a test falls in one cache period, one that ends long after the test: a
    period that ends between two requests rightly changes the ETag (and ends the local cache's
    entries), and once made a test fail by chance."""
    bucket = time_bucket() + 1_000
    monkeypatch.setattr("offerings.caching.time_bucket", lambda: bucket)


def test_every_kind_of_write_moves_the_version_and_a_read_does_not(catalog):
    start = catalog_version()
    list(InstanceType.objects.all())
    assert catalog_version() == start
    InstanceType.objects.filter(slug="ib-8x").update(is_hidden=True)  # bulk, no signals
    after_update = catalog_version()
    assert after_update > start
    offer = Offer.objects.first()
    offer.price_per_hour = Decimal("1.23")
    offer.save()
    assert catalog_version() > after_update


def test_the_page_and_the_api_carry_an_etag_and_answer_304_when_it_matches(client, catalog):
    for url in ("/?nvlink=true", "/api/instances?nvlink=true"):
        first = client.get(url)
        etag = first["ETag"]
        assert etag.startswith('"')
        again = client.get(url, headers={"If-None-Match": etag})
        assert again.status_code == 304
        assert again.content == b""
        assert client.get(url, headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_data_change_changes_the_etag_so_no_stale_304(client, catalog):
    etag = client.get("/api/instances").headers["ETag"]
    Offer.objects.filter(instance=catalog["ib"]).update(price_per_hour=Decimal("1"))
    response = client.get("/api/instances", headers={"If-None-Match": etag})
    assert response.status_code == 200
    assert response["ETag"] != etag


def test_fragments_languages_and_queries_get_their_own_etags(client, catalog):
    tags = {
        client.get("/").headers["ETag"],
        client.get("/", headers={"HX-Request": "true"}).headers["ETag"],
        client.get("/zh-hans/").headers["ETag"],
        client.get("/?nvlink=true").headers["ETag"],
    }
    assert len(tags) == 4


def test_a_repeated_request_is_served_from_the_cache_with_one_query(
    client, catalog, django_assert_max_num_queries
):
    with override_settings(PAGE_CACHE_SECONDS=300):
        first = client.get("/api/instances?nvlink=true")
        with django_assert_max_num_queries(1):  # only the version is read
            second = client.get("/api/instances?nvlink=true")
        assert second.content == first.content
        assert second["Content-Type"] == first["Content-Type"]
        InstanceType.objects.filter(slug="ib-8x").update(is_hidden=True)
        third = client.get("/api/instances?nvlink=true")
        assert b'"ib-8x"' not in third.content  # the write moved the key: no stale rows
        assert b'"ib-8x"' in first.content


def test_errors_are_never_cached(client, catalog):
    with override_settings(PAGE_CACHE_SECONDS=300):
        assert client.get("/api/instances?nvlink=maybe").status_code == 400
        response = client.get("/api/instances?nvlink=maybe")
        assert response.status_code == 400
        assert "ETag" not in response


def test_the_version_comes_back_higher_after_the_row_is_truncated(catalog):
    from django.db import connection

    before = catalog_version()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE offerings_catalogversion")
    assert catalog_version() == 0
    InstanceType.objects.filter(slug="ib-8x").update(is_hidden=True)
    assert catalog_version() > before  # a write recreates it above any earlier counter


# -- the per-process page cache in front of Django (gpucatalog/wsgi.py) -------------------------


class CountingApp:
    """The real Django WSGI application, counting the requests that reach it."""

    def __init__(self):
        from django.core.wsgi import get_wsgi_application

        self.app = get_wsgi_application()
        self.calls = 0

    def __call__(self, environ, start_response):
        self.calls += 1
        return self.app(environ, start_response)


def wsgi_get(app, path, query="", method="GET", **headers):
    """One request through `app`, as a WSGI server would make it: (status, headers, body)."""
    from wsgiref.util import setup_testing_defaults

    environ = {"PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": method}
    environ.update({f"HTTP_{k.upper()}": v for k, v in headers.items()})
    setup_testing_defaults(environ)
    environ["HTTP_HOST"] = "testserver"
    seen = {}

    def start_response(status, response_headers, exc_info=None):
        seen["status"], seen["headers"] = status, dict(response_headers)

    body = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], body


@pytest.fixture
def local_cache(settings):
    from offerings.caching import LocalPageCache

    settings.PAGE_CACHE_SECONDS = 300
    settings.PAGE_CACHE_LOCAL_ENTRIES = 3
    settings.PAGE_CACHE_VERSION_CHECK_SECONDS = 0
    settings.ALLOWED_HOSTS = ["testserver"]
    inner = CountingApp()
    return LocalPageCache(inner), inner


@pytest.mark.django_db(transaction=True)
def test_a_repeated_page_is_answered_without_entering_django(local_cache, catalog):
    app, inner = local_cache
    status, headers, first = wsgi_get(app, "/", "nvlink=true")
    assert status.startswith("200")
    assert inner.calls == 1
    status, again_headers, again = wsgi_get(app, "/", "nvlink=true")
    assert (status[:3], again, inner.calls) == ("200", first, 1)
    assert again_headers == headers
    assert "X-Gpucatalog-Local-Cache" not in headers
    assert headers["Content-Security-Policy"].startswith("default-src 'self'")
    status, _, body = wsgi_get(app, "/", "nvlink=true", method="HEAD")
    assert (status[:3], body, inner.calls) == ("200", b"", 1)
    status, _, body = wsgi_get(app, "/", "nvlink=true", if_none_match=headers["ETag"])
    assert (status[:3], body, inner.calls) == ("304", b"", 1)


@pytest.mark.django_db(transaction=True)
def test_a_catalog_write_makes_the_next_request_render_again(local_cache, catalog):
    app, inner = local_cache
    _, _, before = wsgi_get(app, "/")
    InstanceType.objects.filter(slug="ib-8x").update(is_hidden=True)
    _, _, after = wsgi_get(app, "/")
    assert inner.calls == 2
    assert b"ib-8x" in before
    assert b"ib-8x" not in after


@pytest.mark.django_db(transaction=True)
def test_within_the_check_interval_a_page_may_lag_a_write_by_that_interval_only(
    local_cache, catalog, settings
):
    app, inner = local_cache
    settings.PAGE_CACHE_VERSION_CHECK_SECONDS = 3600
    wsgi_get(app, "/")
    InstanceType.objects.filter(slug="ib-8x").update(is_hidden=True)
    _, _, lagging = wsgi_get(app, "/")
    assert inner.calls == 1
    assert b"ib-8x" in lagging
    app.version_read_at -= 3600  # the interval has passed
    _, _, fresh = wsgi_get(app, "/")
    assert inner.calls == 2
    assert b"ib-8x" not in fresh


@pytest.mark.django_db(transaction=True)
def test_fragments_apis_errors_and_cookie_pages_are_not_kept(local_cache, catalog):
    app, inner = local_cache
    for _ in range(2):
        wsgi_get(app, "/", hx_request="true")
    assert inner.calls == 1  # the fragment has an entry of its own
    for path, query in [
        ("/api/instances", ""),  # rate-limited routes always reach Django
        ("/", "nvlink=maybe"),  # a 400
        ("/instances/aws/ib-8x/", ""),  # sets a CSRF cookie
        ("/feeds/price-changes/", ""),
    ]:
        calls = inner.calls
        wsgi_get(app, path, query)
        wsgi_get(app, path, query)
        assert inner.calls == calls + 2, path


@pytest.mark.django_db(transaction=True)
def test_the_least_recently_used_page_goes_first(local_cache, catalog):
    app, inner = local_cache
    for query in ["a=1", "a=2", "a=3", "a=1", "a=4"]:
        wsgi_get(app, "/", query)
    assert inner.calls == 4
    wsgi_get(app, "/", "a=1")  # kept: it was used again before a=4 came
    assert inner.calls == 4
    wsgi_get(app, "/", "a=2")  # dropped
    assert inner.calls == 5


@pytest.mark.django_db(transaction=True)
def test_nothing_is_kept_when_the_page_cache_is_off(local_cache, catalog, settings):
    app, inner = local_cache
    settings.PAGE_CACHE_SECONDS = 0
    wsgi_get(app, "/")
    wsgi_get(app, "/")
    assert inner.calls == 2
