"""The one response cache: its key holds the data version and everything else a body depends on,
so no response is older than the data committed before its request, and no request can put
another host or junk into what others are served."""

import json
import re
import threading
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client, override_settings

from offerings.models import InstanceType, Offer
from offerings.web.caching import time_bucket


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def catalog_version() -> int:
    """The data version's counter (0 while its row is gone)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT counter FROM offerings_catalogversion WHERE id = 1")
        row = cursor.fetchone()
    return row[0] if row else 0


@pytest.fixture(autouse=True)
def one_time_bucket(monkeypatch):
    """Every request of a test falls in one cache period, one that ends long after the test: a
    period that ends between two requests rightly changes the ETag, and once made a test fail by
    chance."""
    bucket = time_bucket() + 1_000
    monkeypatch.setattr("offerings.web.caching.time_bucket", lambda: bucket)


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


def test_a_restored_database_counting_the_same_numbers_again_reads_no_entry_of_its_past(
    client, catalog
):
    """Every database counts versions from 0, and one restored from a backup counts the same
    numbers again over other data: the key holds the moment of the version's write too."""
    from django.db import connection

    from offerings.models import CatalogVersion

    with override_settings(PAGE_CACHE_SECONDS=300):
        backed_up = CatalogVersion.objects.get(pk=1)
        InstanceType.objects.filter(slug="ib-8x").update(is_hidden=True)
        assert b'"ib-8x"' not in client.get("/api/instances").content  # kept at N + 1
        # The backup comes back: its data and its version row.
        InstanceType.objects.filter(slug="ib-8x").update(is_hidden=False)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE offerings_catalogversion SET counter = %s, changed_at = %s",
                [backed_up.counter, backed_up.changed_at],
            )
        # Another write reaches N + 1 again, at a later moment (the test's transaction has one
        # now(): the hour is added by hand).
        InstanceType.objects.filter(slug="ib-8x").update(vcpus=97)
        with connection.cursor() as cursor:
            cursor.execute("UPDATE offerings_catalogversion SET changed_at = changed_at + '1 hour'")
        assert catalog_version() == backed_up.counter + 1
        assert b'"ib-8x"' in client.get("/api/instances").content


# -- conditional requests (RFC 9110, 13.1.2) ----------------------------------------------------


def test_a_weak_tag_or_a_list_holding_the_tag_matches_it(client, catalog):
    etag = client.get("/api/instances")["ETag"]
    assert client.get("/api/instances", headers={"If-None-Match": f"W/{etag}"}).status_code == 304
    listed = f'"other", W/{etag}'
    assert client.get("/api/instances", headers={"If-None-Match": listed}).status_code == 304


def test_a_star_matches_any_page_that_exists_but_never_an_error(client, catalog):
    for url in ("/", "/api/instances?nvlink=true", "/providers/"):
        response = client.get(url, headers={"If-None-Match": "*"})
        assert response.status_code == 304, url
        assert response.content == b""
    assert client.get("/?nvlink=maybe", headers={"If-None-Match": "*"}).status_code == 400
    assert client.get("/api/instances?page=9", headers={"If-None-Match": "*"}).status_code == 400


def test_a_star_is_answered_from_a_cached_page_too(client, catalog):
    with override_settings(PAGE_CACHE_SECONDS=300):
        client.get("/api/instances")
        assert client.get("/api/instances", headers={"If-None-Match": "*"}).status_code == 304


# -- what the key holds, and what it leaves out ------------------------------------------------


def test_unknown_parameters_change_neither_the_key_nor_any_link_the_page_echoes(client, catalog):
    plain = client.get("/?nvlink=true")
    junk = client.get("/?utm_source=mail&nvlink=true&u1=" + "x" * 60_000)
    assert junk["ETag"] == plain["ETag"]
    body = junk.content.decode()
    assert "utm_source" not in body
    assert "u1=" not in body
    assert len(junk.content) < len(plain.content) + 1_000  # nothing of the junk is echoed


def test_the_order_of_the_names_does_not_matter_but_their_values_do(client, catalog):
    one = client.get("/api/instances?nvlink=true&sort=gpu_count")["ETag"]
    two = client.get("/api/instances?sort=gpu_count&nvlink=true")["ETag"]
    other = client.get("/api/instances?sort=-gpu_count&nvlink=true")["ETag"]
    assert one == two != other


def test_names_the_interface_refuses_still_answer_400(client, catalog):
    assert client.get("/api/instances?gpu__slug=h100-sxm").status_code == 400
    assert client.get("/?_secret=1").status_code == 400


ABSOLUTE = re.compile(r"https?://[^\s\"'<>]+")


def absolute_urls(response) -> set[str]:
    """Every absolute URL of the site itself in a body (sources on other sites left out)."""
    return {
        url
        for url in ABSOLUTE.findall(response.content.decode())
        if url.startswith(("http://testserver", "https://gpucatalog.example", "http://localhost"))
    }


POISONED = [
    "/api/providers",
    "/api/instances?page_size=1",
    "/",
    "/providers/",
    "/nvlink-infiniband/",
    "/zh-hans/",
    "/faq/",
    "/feeds/price-changes/",
]


@pytest.mark.parametrize("path", POISONED)
def test_another_host_header_never_reaches_what_others_are_served(client, catalog, path):
    """Host-header poisoning: a request naming another host, then a plain one."""
    with override_settings(PAGE_CACHE_SECONDS=300, ALLOWED_HOSTS=["testserver", "localhost"]):
        evil = client.get(path, headers={"Host": "localhost:31337"})
        plain = client.get(path)
    assert evil.status_code == plain.status_code == 200
    assert any("localhost:31337" in url for url in absolute_urls(evil))  # development: its host
    urls = absolute_urls(plain)
    assert urls, "the page has absolute links of its own"
    assert all(url.startswith("http://testserver/") for url in urls), urls


@pytest.mark.parametrize("path", POISONED)
def test_with_site_url_set_every_absolute_link_is_on_it(client, catalog, path):
    with override_settings(
        PAGE_CACHE_SECONDS=300,
        SITE_URL="https://gpucatalog.example",
        ALLOWED_HOSTS=["testserver", "localhost"],
    ):
        for response in (client.get(path, headers={"Host": "localhost:31337"}), client.get(path)):
            urls = absolute_urls(response)
            assert urls, path
            assert all(url.startswith("https://gpucatalog.example/") for url in urls), urls


def test_the_api_next_link_carries_only_known_parameters_on_site_url(client, catalog):
    with override_settings(SITE_URL="https://gpucatalog.example"):
        body = client.get("/api/instances?page_size=1&utm_medium=x").json()
    assert body["next"] == "https://gpucatalog.example/api/instances?page_size=1&page=2"


# -- threads: no response older than the data committed before its request began ----------------

READERS = 8
STEPS = 30
ROW_PRICE = re.compile(
    r">ib\.8x<.*?<td class=\"price\">.*?<strong>\$([0-9.,]+)</strong>", re.DOTALL
)


def api_price(response) -> float:
    row = next(r for r in response.json()["results"] if r["slug"] == "ib-8x")
    return next(p["price_per_gpu_hour"] for p in row["prices"] if p["kind"] == "on-demand")


def page_price(response) -> float:
    assert response.status_code == 200, response.status_code
    return float(ROW_PRICE.search(response.content.decode())[1].replace(",", ""))


@pytest.mark.django_db(transaction=True)
def test_no_response_is_older_than_the_data_committed_before_its_request_began(catalog, settings):
    """gthread-style: reader threads share one process's cache while a writer commits prices.

    The writer sets the price of one offer to its step number (per GPU-hour) and, once that has
    committed, publishes the step; a reader notes the published step before each request and
    must find at least that price in the answer, cached or not: half of them read the API, half
    the filter page (whose choice lists and rows are rendered from the same data).
    """
    settings.PAGE_CACHE_SECONDS = 300
    offer = Offer.objects.get(instance=catalog["ib"], kind="on-demand")
    Offer.objects.filter(pk=offer.pk).update(price_per_hour=0, price_per_gpu_hour_usd=0)
    committed = [0]
    failures: list[str] = []
    done = threading.Event()

    def read(url: str, price_of) -> None:
        reader = Client()
        try:
            while not done.is_set():
                before = committed[0]
                try:
                    seen = price_of(reader.get(url))
                except Exception as error:  # a 500 or a page without the row
                    failures.append(f"{url}: {error!r}")
                    return
                if seen < before:
                    failures.append(f"{url}: price {seen} served after step {before} committed")
        finally:
            connection.close()

    def write() -> None:
        try:
            for step in range(1, STEPS + 1):
                Offer.objects.filter(pk=offer.pk).update(
                    price_per_hour=Decimal(8 * step), price_per_gpu_hour_usd=Decimal(step)
                )
                committed[0] = step
                done.wait(0.02)
        finally:
            done.set()
            connection.close()

    readers = [("/api/instances?provider=aws", api_price), ("/?provider=aws", page_price)]
    threads = [threading.Thread(target=read, args=readers[i % 2]) for i in range(READERS)]
    threads.append(threading.Thread(target=write))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures[:5]
    assert page_price(Client().get("/?provider=aws")) == STEPS


@pytest.mark.django_db(transaction=True)
def test_a_new_region_shows_in_the_choices_as_soon_as_it_commits(client, catalog, settings):
    """The choice lists are read with the page: no list kept from an earlier version."""
    from offerings.models import Provider, Region

    settings.PAGE_CACHE_SECONDS = 300
    assert "aws:ap-south-1" not in client.get("/").content.decode()
    Region.objects.create(
        provider=Provider.objects.get(slug="aws"), code="ap-south-1", name="Mumbai", geo="asia"
    )
    assert 'value="aws:ap-south-1"' in client.get("/").content.decode()


def test_a_version_seen_once_is_never_served_again_after_a_newer_one(client, catalog, settings):
    settings.PAGE_CACHE_SECONDS = 300
    old = client.get("/?provider=aws").content
    assert b"ib.8x" in old
    InstanceType.objects.filter(slug="ib-8x").update(is_hidden=True)
    assert b"ib.8x" not in client.get("/?provider=aws").content
    assert b"ib.8x" not in client.get("/?provider=aws").content


def test_the_json_export_is_cached_under_its_own_key(client, catalog):
    page = client.get("/?nvlink=true")
    export = client.get("/?nvlink=true&format=json")
    assert export["ETag"] != page["ETag"]
    assert json.loads(export.content)["count"] >= 1


def test_the_redis_backend_keeps_one_client_per_pool_and_still_round_trips():
    """Django's backend built a `redis.Redis` per operation; ours keeps one per pool."""
    import os

    from offerings.web.cache_backend import PooledClientRedisCache

    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL is not set: no Redis to talk to")
    backend = PooledClientRedisCache(url, {"KEY_PREFIX": "test-pooled"})
    client = backend._cache.get_client()
    assert backend._cache.get_client() is client
    assert backend._cache.get_client(write=True) is client  # one server: one pool
    backend.set("k", {"content": b"x" * 100_000}, 30)
    assert backend.get("k") == {"content": b"x" * 100_000}
    backend.delete("k")
    assert backend.get("k") is None


def test_the_benchmarks_recognise_a_hit_by_the_statement_the_site_sends(
    client, catalog, django_assert_num_queries
):
    """bench/inprocess.py and bench/floor_wsgi.py tell a cache hit by its one statement."""
    from pathlib import Path

    from bench.inprocess import VERSION_SQL as bench_sql
    from offerings.web.caching import VERSION_SQL

    assert bench_sql == VERSION_SQL
    assert VERSION_SQL in (Path(__file__).parent.parent / "bench" / "floor_wsgi.py").read_text()
    with override_settings(PAGE_CACHE_SECONDS=300):
        client.get("/api/instances")
        with django_assert_num_queries(1) as captured:
            client.get("/api/instances")
    assert captured.captured_queries[0]["sql"] == VERSION_SQL


def test_each_bump_moves_the_moment_forward_in_the_counters_order(catalog):
    """The moment is the clock at the bump, strictly increasing: a transaction that started
    earlier but bumps later still gets the later moment (the dumps are ordered by it)."""
    from offerings.models import CatalogVersion

    first = CatalogVersion.objects.get(pk=1)
    InstanceType.objects.filter(slug="ib-8x").update(vcpus=95)
    second = CatalogVersion.objects.get(pk=1)
    InstanceType.objects.filter(slug="ib-8x").update(vcpus=96)
    third = CatalogVersion.objects.get(pk=1)
    assert first.counter < second.counter < third.counter
    assert first.changed_at < second.changed_at < third.changed_at  # one transaction: now() was one
