"""Fixtures of the content pages' tests."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The live counts of the table links are cached; each test has its own catalog."""
    cache.clear()
    yield
    cache.clear()
