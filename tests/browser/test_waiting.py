"""The browser tests wait without `page.wait_for_function` (see tests/browser/waiting.py).

Its polls are refused by the site's script policy, so a test using it passes only when the
condition already holds on the first try, and fails at random otherwise (CI run of 2026-12-03).
"""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_browser_test_waits_with_wait_for_function():
    calls = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "wait_for_function":
                calls.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert calls == [], "use tests.browser.waiting.wait_until: " + ", ".join(calls)
