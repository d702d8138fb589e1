"""Bad input answers 4xx, cheaply, in development and production alike (issue 27, item 5).

- A query string with more fields than DATA_UPLOAD_MAX_NUMBER_FIELDS: 400 from a middleware that
  counts them on the raw string before anything parses request.GET: the contract's JSON error on
  the API and the feeds, the site's 400 page elsewhere, without a query to the database. Parsing
  it would raise TooManyFieldsSent, which with DEBUG ended on the technical page, which parsed
  it again: a 500 after 17-25 s of CPU.
- `/plan/` answers 400 for a bad parameter, as `/` and `/estimate/` do, with the page.
- The admin's "refresh now" for an id that is not one (`abc`) or is no provider's: 404, not 500.
"""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

LIMIT = 1000  # Django's default DATA_UPLOAD_MAX_NUMBER_FIELDS
JSON_PATHS = ["/api/instances", "/feeds/price-changes/"]
PAGE_PATHS = ["/", "/zh-hans/", "/plan/", "/estimate/"]


def fields(n: int, separator: str = "&") -> str:
    return separator.join(f"f{i}=1" for i in range(n))


@pytest.fixture(params=[False, True], ids=["production", "debug"])
def debug(request, settings):
    """Both: with DEBUG the technical error page re-read request.GET and failed again."""
    settings.DEBUG = request.param
    return request.param


@pytest.fixture
def web():
    """A client that re-raises whatever the server raised, so a 500 shows as its exception."""
    return Client(raise_request_exception=True)


# -- Too many query fields --------------------------------------------------------------------


@pytest.mark.parametrize("path", JSON_PATHS)
def test_too_many_query_fields_is_a_json_400_on_the_api_and_feeds(
    web, debug, path, django_assert_num_queries
):
    with django_assert_num_queries(0):  # answered before any view or query: cheap
        response = web.get(path, QUERY_STRING=fields(LIMIT + 1))
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "fields"}
    assert body["error"] == "invalid_parameters"
    assert body["fields"] == {
        "query_string": ["Too many parameters: 1,001 given, at most 1,000 are accepted."]
    }


@pytest.mark.parametrize("path", PAGE_PATHS)
def test_too_many_query_fields_is_the_sites_400_page_elsewhere(
    web, debug, path, django_assert_num_queries
):
    with django_assert_num_queries(0):
        response = web.get(path, QUERY_STRING=fields(LIMIT + 1))
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert "This request could not be read" in body  # templates/400.html, in both languages
    assert 'lang="zh-hans"' in body
    assert "Traceback" not in body
    assert "TooManyFieldsSent" not in body  # not Django's technical page
    # The middleware sits after the security headers' own: the 400 carries them.
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"


def test_the_limit_is_counted_as_django_parses_the_query_string(web, debug, catalog):
    """One more field than `&`s, empty ones included (Django's parse counts them and fails on
    them too); `;` separates nothing, so many `;` are one field and no reason to refuse."""
    assert web.get("/api/instances", QUERY_STRING=fields(LIMIT)).status_code == 200
    assert web.get("/api/instances", QUERY_STRING="&" * LIMIT).status_code == 400
    assert web.get("/api/instances", QUERY_STRING=fields(LIMIT + 1, ";")).status_code == 200
    assert web.get("/", QUERY_STRING=fields(LIMIT)).status_code == 200


def test_the_limit_is_the_setting(web, settings, catalog):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    assert web.get("/api/instances", QUERY_STRING=fields(3)).status_code == 200
    response = web.get("/api/instances", QUERY_STRING=fields(4))
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "query_string": ["Too many parameters: 4 given, at most 3 are accepted."]
    }
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = None  # Django's "no limit"
    assert web.get("/api/instances", QUERY_STRING=fields(LIMIT + 1)).status_code == 200


def test_too_many_query_fields_is_logged_as_django_logs_it(web, caplog):
    with caplog.at_level("WARNING", logger="django.security.TooManyFieldsSent"):
        web.get("/api/instances", QUERY_STRING=fields(LIMIT + 1))
    records = [r for r in caplog.records if r.name == "django.security.TooManyFieldsSent"]
    assert [r.status_code for r in records] == [400]


# -- The planner's page -----------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("gpus=1000000000", "gpus"),
        ("gpus=64&page=999", "page"),
        ("gpus=64&page_size=0", "page_size"),
    ],
)
def test_the_plan_page_answers_400_for_a_bad_parameter_and_shows_it(
    client, catalog, prefix, query, field
):
    response = client.get(f"{prefix}/plan/?{query}")
    assert response.status_code == 400
    html = response.content.decode()
    assert 'role="alert"' in html
    assert f"<li><code>{field}</code>: " in html
    assert 'name="gpus"' in html  # the page and its form, not an error page
    if field == "gpus":  # at the field itself
        assert 'aria-invalid="true" aria-describedby="err-gpus"' in html
        assert '<span id="err-gpus" class="field-error"></span>' not in html
    if prefix:
        assert 'lang="zh-hans"' in html


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_plan_page_stays_200_for_good_parameters_and_ignored_names(client, catalog, prefix):
    assert client.get(f"{prefix}/plan/?gpus=64&page=1&page_size=10").status_code == 200
    for query in ("", "?utm_source=newsletter"):  # the empty form
        response = client.get(f"{prefix}/plan/{query}")
        assert response.status_code == 200
        assert 'role="alert"' not in response.content.decode()
    # The no-JS form sends every field: an empty `gpus` is a request without the number.
    assert client.get(f"{prefix}/plan/?gpus=&mode=").status_code == 400


# -- The admin's "refresh now" ----------------------------------------------------------------


@pytest.mark.parametrize("object_id", ["abc", "999999", "99999999999999999999", "1.5"])
def test_refreshing_a_provider_that_is_not_there_is_a_404(admin_client, catalog, object_id):
    response = admin_client.post(f"/admin/offerings/provider/{object_id}/refresh/")
    assert response.status_code == 404


def test_refreshing_a_provider_that_is_there_still_redirects_to_it(admin_client, catalog):
    provider = catalog["ib"].provider
    response = admin_client.post(f"/admin/offerings/provider/{provider.pk}/refresh/")
    assert response.status_code == 302
    assert response["Location"] == f"/admin/offerings/provider/{provider.pk}/change/"


# -- a search of many words ------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_a_search_of_many_words_answers_400_naming_the_limit(client, prefix):
    words = " ".join(chr(97 + n % 26) for n in range(90))  # 179 characters, under the 200
    response = client.get(f"{prefix}/", {"q": words, "nvlink": "true", "fabric": "infiniband"})
    assert response.status_code == 400
    text = "搜索词最多 12 个。" if prefix else "Search for at most 12 words."
    assert text in response.content.decode()
    api = client.get("/api/instances", {"q": words})
    assert api.status_code == 400
    assert api.json()["fields"]["q"] == ["Search for at most 12 words."]


def test_a_search_of_a_dozen_words_is_answered(client):
    assert client.get("/api/instances", {"q": " ".join(["h100"] * 12)}).status_code == 200


@pytest.mark.parametrize("value", ["\u00a0", "\u2003", " \u00a0 "])
def test_a_value_of_other_white_space_is_an_error_not_an_absent_filter(client, value):
    """Found by the schema fuzzer: `multi_node=%C2%A0` was stripped to nothing and accepted."""
    response = client.get("/api/instances", {"multi_node": value})
    assert response.status_code == 400
    assert response.json()["fields"]["multi_node"] == ["Enter a value, or leave the field empty."]
    assert client.get("/api/instances", {"multi_node": " "}).status_code == 200  # absent
