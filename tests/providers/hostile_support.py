"""What the hostile-variant tests share: the catalog loaded once per module, and what a buyer sees."""

import pytest
from django.core.management import call_command

from offerings.models import Offer
from tests.providers.conftest import load_scraped_providers


@pytest.fixture(scope="module", name="catalog")
def scraped_catalog(django_db_setup, django_db_blocker):
    """The curated catalog, loaded once for a module (each test still rolls back its own)."""
    with django_db_blocker.unblock():
        load_scraped_providers()
    yield
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


def snapshot(provider: str) -> dict:
    """Every offer of the provider with the values a buyer sees."""
    return {
        (o.instance.slug, o.region.code, o.kind, o.term_months): (
            o.price_per_hour,
            o.currency,
            o.price_per_gpu_hour_usd,
            o.is_active,
            o.available,
        )
        for o in Offer.objects.filter(instance__provider__slug=provider).select_related(
            "instance", "region"
        )
    }
