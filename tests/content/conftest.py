"""Fixtures of the content pages' tests."""

import pytest
from django.core.cache import cache
from django.core.management import call_command


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The live counts of the table links are cached; each test has its own catalog."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def shipped(db):
    """The catalog exactly as the repository ships it."""
    call_command("load_catalog", verbosity=0)
