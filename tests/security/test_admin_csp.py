"""The admin works under the site's CSP (script-src 'self', no inline style) in real Chromium."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils.csp import CSP

from tests.security.conftest import csp_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, password: str = "a-long-curator-passphrase") -> None:
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", "curator")
    page.fill("#id_password", password)
    page.click("input[type=submit]")


def test_the_admin_login_and_change_pages_raise_no_csp_violation(watched_page, site):
    page = watched_page
    log_in(page)
    page.wait_for_url(re.compile(r"/admin/$"))
    instance = site["ib"]
    for path in (
        "/admin/",
        "/admin/offerings/instancetype/",
        f"/admin/offerings/instancetype/{instance.pk}/change/",
        "/admin/offerings/instancetype/add/",
        "/admin/offerings/offer/",
        "/admin/offerings/correctionreport/",
        "/admin/auth/user/add/",
    ):
        page.goto(path)
        page.wait_for_load_state("load")
        assert page.locator("#content").count() == 1, path
    assert csp_violations(page) == []


def test_a_violation_would_be_seen(watched_page, site):
    """The control: with stylesheets forbidden, the login page reports its blocked CSS."""
    with override_settings(SECURE_CSP=settings.SECURE_CSP | {"style-src": [CSP.NONE]}):
        watched_page.goto("/admin/login/")
        watched_page.wait_for_load_state("load")
        assert any("style-src" in v for v in csp_violations(watched_page))
