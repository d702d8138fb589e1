"""Every route, requested over HTTPS with the production security settings, earns the Mozilla
Observatory's A+ headers; public pages carry no inline script, handler or style attribute."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from django.apps import apps
from django.contrib.admin.sites import site as admin_site
from django.contrib.contenttypes.models import ContentType
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import translation

from offerings.models import InstanceType
from tests.security.headers import header_problems, markup_problems

pytestmark = pytest.mark.django_db

LANGUAGES = ("en", "zh-hans")


def public_route_kwargs(site: dict) -> dict[str, Callable[[], dict]]:
    """Path parameters of every parameterised non-admin route, from the loaded catalog."""
    instance: InstanceType = site["ib"]
    return {
        "offerings:instance-detail": lambda: {
            "provider": instance.provider.slug,
            "slug": instance.slug,
        },
        "offerings:instance-report": lambda: {
            "provider": instance.provider.slug,
            "slug": instance.slug,
        },
        "offerings:gpu-detail": lambda: {"slug": instance.gpu.slug},
        "offerings:provider-detail": lambda: {"slug": instance.provider.slug},
        # A snapshot file of /data/ (none is written here: the 404 carries the headers too).
        "data-file": lambda: {"filename": "gpucatalog-2026-12-04-v1.json.gz.sha256"},
        # The Markdown twin of the instance page (text/markdown, with the same headers).
        "offerings:markdown-twin": lambda: {
            "path": f"instances/{instance.provider.slug}/{instance.slug}"
        },
    }


def iter_patterns(
    patterns, prefix: str = "", namespace: str | None = None
) -> Iterator[tuple[str, str | None, URLPattern]]:
    """(route text, qualified name, pattern) of every URL pattern, resolvers flattened."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = ":".join(n for n in (namespace, pattern.namespace) if n) or None
            yield from iter_patterns(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        else:
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
            yield prefix + str(pattern.pattern), name, pattern


def model_in_route(route: str):
    """The model of an admin route `admin/<app_label>/<model_name>/...`."""
    _, app_label, model_name, *_ = route.split("/")
    return apps.get_model(app_label, model_name)


def admin_kwargs(route: str, pattern: URLPattern, site: dict) -> dict:
    params = set(pattern.pattern.regex.groupindex)
    model_admin = getattr(pattern.callback, "model_admin", None)
    kwargs: dict = {}
    if "content_type_id" in params:  # view on site
        kwargs["content_type_id"] = str(ContentType.objects.get_for_model(InstanceType).pk)
        kwargs["object_id"] = str(site["ib"].pk)
    elif "object_id" in params:
        # A ModelAdmin's own URLs carry it; extra admin URLs name the model in their route.
        model = model_admin.model if model_admin else model_in_route(route)
        first = model._default_manager.order_by("pk").first()
        kwargs["object_id"] = str(first.pk) if first else "999999"
    if "app_label" in params:
        kwargs["app_label"] = "offerings"
    if "id" in params:  # the user password form
        from django.contrib.auth import get_user_model

        kwargs["id"] = str(get_user_model().objects.order_by("pk").first().pk)
    if "url" in params:
        kwargs["url"] = "no-such-admin-page/"
    return kwargs


def fill_route(route: str, kwargs: dict) -> str:
    """Substitute parameters in a route with no name to reverse (`<conv:name>` or regex)."""
    route = route.replace("^", "").replace("$", "")
    route = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: kwargs[m.group(1)], route)
    return "/" + re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: kwargs[m.group(1)], route)


def every_path(site: dict) -> list[tuple[str, bool]]:
    """(path, is_admin) for every pattern of the URLconf, in every language it is served in."""
    public = public_route_kwargs(site)
    paths: list[tuple[str, bool]] = []
    for route, name, pattern in iter_patterns(get_resolver().url_patterns):
        params = set(pattern.pattern.regex.groupindex)
        is_admin = route.startswith("admin/")
        if is_admin:
            kwargs = admin_kwargs(route, pattern, site)
        elif params:
            assert name in public, f"add path parameters for the new route {name!r} ({route})"
            kwargs = public[name]()
        else:
            kwargs = {}
        for language in LANGUAGES:
            with translation.override(language):
                path = reverse(name, kwargs=kwargs) if name else fill_route(route, kwargs)
            paths.append((path, is_admin))
    paths += [("/no-such-page/", False), ("/api/no-such-endpoint", False)]
    return sorted(set(paths))


@pytest.fixture
def secure_settings(production_security_settings):
    with override_settings(**production_security_settings, DEBUG=False):
        yield production_security_settings


def test_the_production_settings_are_the_ones_under_test(secure_settings):
    assert secure_settings["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert secure_settings["SESSION_COOKIE_SECURE"] is True
    assert secure_settings["CSRF_COOKIE_SECURE"] is True
    assert secure_settings["SECURE_SSL_REDIRECT"] is True


def test_every_route_answers_with_observatory_a_plus_headers(site, secure_settings, curator):
    anonymous = Client()
    staff = Client()
    staff.force_login(curator)
    paths = every_path(site)
    assert len(paths) > 100, "the walk should cover pages, API, feed, sitemap and the admin"
    seen_statuses: set[int] = set()
    failures: dict[str, list[str]] = {}
    for path, is_admin in paths:
        clients = (("anonymous", anonymous), ("staff", staff)) if is_admin else (("", anonymous),)
        for who, client in clients:
            response = client.get(path, secure=True)
            seen_statuses.add(response.status_code)
            problems = header_problems(response)
            if response.status_code >= 500:
                problems.append(f"server error {response.status_code}")
            content_type = response.get("Content-Type", "")
            if not is_admin and content_type.startswith("text/html"):
                problems += markup_problems(response.content.decode())
            if problems:
                failures[f"{who} {path} ({response.status_code})".strip()] = problems
    assert not failures, "\n".join(f"{path}: {'; '.join(p)}" for path, p in failures.items())
    assert {200, 302, 404} <= seen_statuses


def test_the_404_page_and_the_admin_login_are_covered(site, secure_settings):
    client = Client()
    for path in ("/no-such-page/", "/zh-hans/no-such-page/", "/admin/login/"):
        response = client.get(path, secure=True)
        assert response.status_code in (200, 404)
        assert header_problems(response) == []


def test_plain_http_is_redirected_to_https(site, secure_settings):
    response = Client().get("/", secure=False)
    assert response.status_code == 301
    assert response["Location"].startswith("https://")


def test_the_session_and_csrf_cookies_are_secure_and_http_only(site, secure_settings, curator):
    client = Client(enforce_csrf_checks=True)
    login = client.get("/admin/login/", secure=True)
    token = login.cookies["csrftoken"]
    assert (token["secure"], token["httponly"], token["samesite"]) == (True, True, "Lax")
    response = client.post(
        "/admin/login/?next=/admin/",
        {
            "username": "curator",
            "password": "a-long-curator-passphrase",
            "csrfmiddlewaretoken": login.context["csrf_token"],
        },
        secure=True,
        headers={"referer": "https://testserver/admin/login/"},
    )
    assert response.status_code == 302, response.content[:500]
    session = response.cookies["sessionid"]
    assert (session["secure"], session["httponly"], session["samesite"]) == (True, True, "Lax")
    assert header_problems(response) == []


def test_the_audit_catches_what_it_looks_for():
    """The checks themselves: each bad construct is reported."""
    bad = (
        '<script>alert(1)</script><style>p{}</style><p style="x" onclick="y">'
        '<button hx-on:click="z"></button><a href="javascript:alert(1)">x</a>'
        '<script src="https://cdn.example/x.js"></script>'
    )
    problems = markup_problems(bad)
    for expected in ("inline <script>", "<style>", "style attribute", "onclick", "hx-on:click"):
        assert any(expected in p for p in problems), (expected, problems)
    assert any("javascript:" in p for p in problems)
    assert any("another origin" in p for p in problems)
    fine = '<script src="/static/x.js"></script><script type="application/ld+json">{}</script>'
    assert markup_problems(fine + '<a href="https://x.example/">x</a><a href="/a?b=c:d">') == []


def test_admin_site_is_the_one_walked():
    assert admin_site.name == "admin"
