"""The placeholder list page, the language prefix and the health check."""

import pytest
from django.test import override_settings

from tests.conftest import make_instance, make_offer


@pytest.fixture
def listed(provider, region, gpu, instance):
    make_offer(instance, region, price="24.00")
    make_offer(instance, region, price="8.00", kind="spot")
    pcie = make_instance(provider, gpu, name="pcie.4x", gpu_count=4, link={"technology": "none"})
    hidden = make_instance(provider, gpu, name="secret.8x", is_hidden=True)
    retired = make_instance(provider, gpu, name="old.8x", is_active=False)
    return instance, pcie, hidden, retired


def test_the_list_shows_visible_instances_with_their_interconnects(client, listed):
    response = client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "hgx.8x" in body
    assert "pcie.4x" in body
    assert "NVLink / NVSwitch" in body
    assert "PCIe only" in body
    assert "InfiniBand" in body


def test_hidden_and_retired_instances_are_not_listed(client, listed):
    body = client.get("/").content.decode()
    assert "secret.8x" not in body
    assert "old.8x" not in body


def test_the_row_price_prefers_on_demand_over_a_cheaper_spot_price(client, listed):
    body = client.get("/").content.decode()
    assert "$3.00" in body  # 24.00 / 8 GPUs on demand, not the 1.00 spot price
    assert "no price" in body  # the PCIe instance has none


def test_the_list_query_count_does_not_grow_with_rows(
    client, provider, region, gpu, django_assert_max_num_queries
):
    for n in range(30):
        make_offer(make_instance(provider, gpu, name=f"n{n}.8x"), region)
    with django_assert_max_num_queries(14):
        assert client.get("/").status_code == 200


def test_simplified_chinese_lives_under_its_prefix(client, listed):
    response = client.get("/zh-hans/")
    assert response.status_code == 200
    assert response.headers["Content-Language"] == "zh-hans"
    body = response.content.decode()
    assert '<html lang="zh-hans">' in body
    assert "按互联方式比较多 GPU 云实例" in body  # compiled translations are in use
    assert client.get("/en/").status_code == 404  # English is unprefixed


def test_the_admin_and_health_check_are_not_language_prefixed(client, db):
    assert client.get("/zh-hans/admin/").status_code == 404
    assert client.get("/admin/").status_code == 302


def test_the_health_check_reports_the_database_and_an_unconfigured_broker(client, db):
    with override_settings(CELERY_BROKER_URL=None):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "broker": "not configured"},
    }
    assert "no-cache" in response.headers["Cache-Control"]


def test_the_list_refuses_unsafe_methods(client, db):
    assert client.post("/").status_code == 405


def test_templates_have_no_comment_spanning_lines():
    """Django's `{# #}` ends on its own line; over several lines it is printed as text."""
    from pathlib import Path

    from django.conf import settings

    found = []
    for path in sorted(Path(settings.BASE_DIR, "templates").rglob("*.html")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.count("{#") != line.count("#}"):
                found.append(f"{path.name}:{number}")
    assert not found, found


@pytest.mark.parametrize(
    ("path", "lang", "heading", "home"),
    [
        ("/no-such-page/", "en", "Page not found", 'href="/"'),
        ("/instances/aws/no-such-type/", "en", "Page not found", 'href="/"'),
        ("/zh-hans/no-such-page/", "zh-hans", "找不到该页面", 'href="/zh-hans/"'),
    ],
)
def test_a_missing_page_is_the_sites_own_404_in_its_language(client, db, path, lang, heading, home):
    response = client.get(path)
    assert response.status_code == 404
    body = response.content.decode()
    assert f'<html lang="{lang}">' in body
    assert f"<h1>{heading}</h1>" in body
    assert f"<code>{path}</code>" in body
    assert home in body  # the site's header and a way back
    assert 'name="q"' in body  # and a search
    assert '<meta name="robots" content="noindex">' in body
    assert 'rel="canonical"' not in body  # no canonical URL for a page that does not exist
    assert "hreflang=" not in body.split("</head>")[0]


def test_the_404_escapes_the_path_it_shows(client, db):
    body = client.get("/%3Cscript%3Ealert(1)%3C/script%3E/").content.decode()
    assert "<script>alert(1)" not in body
    assert "<code>/%3Cscript%3Ealert%281%29%3C/script%3E/</code>" in body  # Django quotes it


def test_server_and_bad_request_errors_have_plain_pages_in_both_languages(rf):
    """They render without the database, the request's context or the static manifest."""
    from django.core.exceptions import SuspiciousOperation
    from django.views.defaults import bad_request, server_error

    for response in (server_error(rf.get("/")), bad_request(rf.get("/"), SuspiciousOperation())):
        body = response.content.decode()
        assert response.status_code in (400, 500)
        assert "gpucatalog" in body
        assert 'lang="zh-hans"' in body
        assert 'href="/zh-hans/"' in body
        assert "<style" not in body
        assert "<script" not in body
