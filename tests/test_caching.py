"""ETags and the response cache follow the catalog's data version, never serving stale rows."""

from decimal import Decimal

import pytest
from django.core.cache import cache
from django.test import override_settings

from offerings.caching import catalog_version
from offerings.models import InstanceType, Offer


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


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
