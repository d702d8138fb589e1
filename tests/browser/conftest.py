"""Browser tests: Playwright driving Debian's Chromium against the live test server.

The session's Chromium (`browser`) lives in tests/conftest.py, shared with tests/security/:
two session fixtures would start Playwright's sync API twice in one thread, which it refuses.
"""

import pytest


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(
        viewport={"width": 1400, "height": 1000}, base_url=live_server.url
    )
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()


@pytest.fixture
def phone(browser, live_server):
    """A 390 px wide phone, console errors collected as on `page`."""
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, base_url=live_server.url, is_mobile=True
    )
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    yield page
    context.close()


@pytest.fixture
def page_without_js(browser, live_server):
    context = browser.new_context(
        viewport={"width": 1400, "height": 1000},
        base_url=live_server.url,
        java_script_enabled=False,
    )
    yield context.new_page()
    context.close()
