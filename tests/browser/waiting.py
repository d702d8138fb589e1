"""Waiting for a condition in the page without `page.wait_for_function`.

Playwright's `wait_for_function` runs its predicate through `eval` in the page. The first
call is made from the driver and passes, but every later poll runs as the page's own script,
and the site's Content-Security-Policy (script-src 'self', no 'unsafe-eval') refuses it: a
condition that is not already true on the first try fails with an EvalError instead of being
waited for. `page.evaluate` is a driver call each time, so polling it from Python waits
properly under the real policy.
"""

import time

from playwright.sync_api import Error


def wait_until(page, expression, timeout=10.0, interval=0.05):
    """Poll `expression` (a JavaScript expression or arrow function) until it is truthy."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            if page.evaluate(expression):
                return
            last_error = None
        except Error as error:  # the page navigated under the call: try again
            last_error = error
        if time.monotonic() > deadline:
            raise AssertionError(
                f"not true after {timeout:g} s: {expression}"
                + (f" (last error: {last_error})" if last_error else "")
            )
        time.sleep(interval)
