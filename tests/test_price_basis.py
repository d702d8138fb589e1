"""Issue 28: every price says who states it, the provider or a third party, like every other fact.

A price the provider's own price data gives is the provider's; a price source's reading
(SkyPilot's catalog) and a curated price copied from such a catalog or a third party's post are a
third party's (the scrapers' side is in tests/providers/test_skypilot.py). The API, the CSV
export and the detail page carry it; the admin refuses a price source's reading relabelled as
the provider's.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from pydantic import ValidationError

from offerings.models import Offer, PriceObservation
from offerings.schemas import PriceIn
from offerings.table.rows import detail_path
from tests.test_admin import assert_rejected, curator, make_world, submit  # noqa: F401
from tests.test_load_catalog import write_fixtures

SKYPILOT_FILE = (
    "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/"
    "22fd1feab9aa97a155f0f5a9d39351d9aa8ae9be/catalogs/v7/nebius/vms.csv"
)


PRICE = {
    "region": "eu-north1",
    "kind": "on-demand",
    "price_per_hour": "23.60",
    "currency": "USD",
    "source_url": SKYPILOT_FILE,
}


def test_a_fixture_price_without_a_basis_is_refused_with_the_field_named():
    with pytest.raises(ValidationError) as error:
        PriceIn(**PRICE)
    assert "basis" in str(error.value)
    with pytest.raises(ValidationError, match="basis"):
        PriceIn(**PRICE, basis="platform")  # no platform rule gives a price
    assert PriceIn(**PRICE, basis="third-party").basis == "third-party"


def test_load_catalog_stores_each_price_with_its_fixtures_basis(db, tmp_path):
    root = write_fixtures(tmp_path)
    path = root / "providers" / "acme.toml"
    # The reserved price was copied from a third party's post.
    text = path.read_text()
    head, reserved = text.split('kind = "reserved"', 1)
    path.write_text(head + 'kind = "reserved"' + reserved.replace("provider", "third-party", 1))
    call_command("load_catalog", fixtures=root, stdout=StringIO())
    assert Offer.objects.get(kind="on-demand").basis == "provider"
    assert Offer.objects.get(kind="reserved").basis == "third-party"


def test_a_fixtures_new_basis_relabels_the_price_without_a_history_row(db, tmp_path):
    root = write_fixtures(tmp_path)
    call_command("load_catalog", fixtures=root, stdout=StringIO())
    offer = Offer.objects.get(kind="on-demand")
    history = PriceObservation.objects.filter(offer=offer).count()
    path = root / "providers" / "acme.toml"
    path.write_text(
        path.read_text().replace('basis = "provider"\n[[', 'basis = "third-party"\n[[', 1)
    )
    call_command("load_catalog", fixtures=root, stdout=StringIO())
    offer.refresh_from_db()
    assert offer.basis == "third-party"
    assert offer.price_per_hour == Decimal("160")
    assert PriceObservation.objects.filter(offer=offer).count() == history
    out = StringIO()
    call_command("load_catalog", fixtures=root, stdout=out)
    assert "no changes" in out.getvalue()


def test_the_api_and_the_csv_carry_each_prices_basis(client, catalog):
    Offer.objects.filter(instance=catalog["ib"]).update(
        basis="third-party", source_url=SKYPILOT_FILE
    )
    row = next(r for r in client.get("/api/instances").json()["results"] if r["name"] == "ib.8x")
    assert {p["basis"] for p in row["prices"]} == {"third-party"}
    assert row["price"]["basis"] == "third-party"
    exported = client.get("/api/instances?format=csv")
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert next(r for r in rows if r["name"] == "ib.8x")["price_basis"] == "third-party"


def test_the_detail_page_marks_a_third_party_price_and_names_skypilots_catalog(client, catalog):
    offer = Offer.objects.filter(instance=catalog["ib"]).first()
    offer.basis = "third-party"
    offer.source_url = SKYPILOT_FILE  # a curated copy: no price source filled it
    offer.save()
    body = client.get(detail_path(catalog["ib"])).content.decode()
    prices = body.split('id="prices"', 1)[1].split("</section>", 1)[0]
    assert prices.count('class="badge basis-third-party"') == 1
    assert "SkyPilot&#x27;s catalog" in prices or "SkyPilot's catalog" in prices
    assert re.search(r'href="https://github.com/skypilot-org/skypilot-catalog/blob/22fd1fe', prices)
    assert "raw file</a>" in prices  # the raw file beside its page, not "read from its API"
    assert "read from its API" not in prices


def test_the_detail_page_gives_a_providers_price_no_third_party_badge(client, catalog):
    body = client.get(detail_path(catalog["ib"])).content.decode()
    prices = body.split('id="prices"', 1)[1].split("</section>", 1)[0]
    assert "basis-third-party" not in prices


def test_the_admin_refuses_a_price_sources_reading_relabelled_as_the_providers(curator):  # noqa: F811
    offer = make_world()[Offer]
    Offer.objects.filter(pk=offer.pk).update(source="skypilot", basis="third-party")
    offer.refresh_from_db()

    response = submit(curator, offer, basis="provider")

    assert_rejected(response, offer, "read from a price source")
    offer.refresh_from_db()
    assert offer.basis == "third-party"


def test_every_shipped_price_from_skypilots_catalog_is_a_third_partys(shipped):
    copied = Offer.objects.filter(source_url__contains="skypilot-org/skypilot-catalog")
    assert copied.exists()
    assert not copied.filter(basis="provider").exists()
    assert Offer.objects.filter(basis="provider").exists()


def test_a_curators_basis_is_locked_and_the_same_writers_next_reading_keeps_it(curator):  # noqa: F811
    offer = make_world()[Offer]
    assert (offer.source, offer.basis) == ("", "provider")

    response = submit(curator, offer, basis="third-party")

    assert response.status_code == 302
    offer.refresh_from_db()
    assert offer.basis == "third-party"
    assert "basis" in offer.locked_fields
