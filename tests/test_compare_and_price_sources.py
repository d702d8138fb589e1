"""Issue 20: the compare page marks price differences (items 5), a price read from an API links
the provider's price page with the endpoint beside it (10), and a price history of one
observation is stated, not drawn (13)."""

import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from offerings.models import Offer, PriceObservation, Region
from offerings.pages.price_pages import PRICE_PAGES, price_links
from tests.conftest import make_instance, make_offer

pytestmark = pytest.mark.usefixtures("lazy_loads_raise")


def compare_line(body: str, label: str) -> str:
    """The `<tr>` of the compare table whose row header starts with `label`."""
    for row in re.findall(r"<tr[^>]*>.*?</tr>", body, flags=re.S):
        header = re.search(r'<th scope="row">(.*?)</th>', row, flags=re.S)
        if header and header.group(1).strip().startswith(label):
            return row
    raise AssertionError(f"no line {label!r}")


def test_compare_marks_a_price_difference_with_the_lowest_and_how_much_more(client, catalog):
    body = client.get("/compare/?ids=aws/ib-8x,aws/efa-8x").content.decode()  # $3.00 vs $5.00
    line = compare_line(body, "Price per GPU-hour (USD)")
    assert line.startswith('<tr class="differs">')
    assert "differs</span>" in line  # said in words, not only by colour
    cells = re.findall(r"<td[^>]*>.*?</td>", line, flags=re.S)
    assert "lowest" in cells[0]
    assert "$3.00" in cells[0]
    assert "+$2.00 (+67%) above the lowest" in " ".join(cells[1].split())
    assert compare_line(body, "Price per hour (USD)").startswith('<tr class="differs">')


def test_compare_marks_a_price_against_no_price(client, catalog):
    body = client.get("/compare/?ids=aws/ib-8x,datacrunch/mystery-8x").content.decode()
    line = compare_line(body, "Price per GPU-hour (USD)")
    assert line.startswith('<tr class="differs">')
    assert "no price" in line


def test_compare_leaves_equal_prices_and_equal_amounts_unmarked(client, catalog):
    twin = make_instance(
        catalog["ib"].provider, catalog["ib"].gpu, name="ib-twin.8x", ram_gib=Decimal("2048.0")
    )
    catalog["ib"].ram_gib = Decimal("2048")
    catalog["ib"].save()
    make_offer(twin, Region.objects.get(code="us-east-1"), price="24.00")
    body = client.get("/compare/?ids=aws/ib-8x,aws/ib-twin-8x").content.decode()
    assert compare_line(body, "Price per GPU-hour (USD)").startswith('<tr class="">')
    assert compare_line(body, "RAM (GiB)").startswith('<tr class="">')
    assert "lowest</span>" not in body


def test_compare_marks_other_differing_facts_of_the_price(client, catalog):
    body = client.get("/compare/?ids=aws/ib-8x,gcp/tcpx-8g").content.decode()
    assert compare_line(body, "Price kind and region").startswith('<tr class="differs">')
    assert compare_line(body, "Inter-node fabric").startswith('<tr class="differs">')
    assert compare_line(body, "GPUs per NVLink domain").startswith('<tr class="">')


AWS_ENDPOINT = (
    "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.json"
)


def test_a_price_read_from_an_api_links_the_price_page_with_the_endpoint_beside_it(client, catalog):
    Offer.objects.filter(instance=catalog["ib"]).update(source_url=AWS_ENDPOINT)
    body = client.get("/instances/aws/ib-8x/").content.decode()
    prices = body.index('<section id="prices">')  # (purchase modes above link their sources too)
    page = body.index('href="https://aws.amazon.com/ec2/pricing/on-demand/"', prices)
    endpoint = body.index(f'href="{AWS_ENDPOINT}"', prices)
    assert page < endpoint < body.index("</tr>", page)  # in the same cell, after the page
    assert "read from its API" in body


def test_a_price_from_a_human_page_links_only_that_page(client, catalog):
    body = client.get("/instances/aws/ib-8x/").content.decode()
    assert 'href="https://docs.example.com/spec"' in body
    assert "read from its API" not in body


def test_price_links_turn_a_raw_github_file_into_its_page():
    offer = Offer(source_url="https://raw.githubusercontent.com/o/r/abc123/catalogs/v8/aws/vms.csv")
    links = price_links(offer, "aws")
    assert links.page == "https://github.com/o/r/blob/abc123/catalogs/v8/aws/vms.csv"
    assert links.endpoint == offer.source_url
    assert price_links(Offer(source_url="https://x.example/p"), "nope").endpoint is None


def test_every_price_page_covers_the_endpoint_its_scraper_reads():
    from providers.scrapers import aws, azure, datacrunch, lambda_, nebius, oci

    endpoints = {
        "aws": f"{aws.BASE_URL}/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.json",
        "azure": azure.source_url_for("eastus", "Standard_ND96isr_H100_v5"),
        "datacrunch": datacrunch.SOURCE_URL,
        "lambda": lambda_.SOURCE_URL,
        "nebius": nebius.SOURCE_URL,
        "oci": f"{oci.API_URL}?currencyCode=USD&partNumber=B93544",
    }
    assert set(endpoints) == set(PRICE_PAGES)
    for slug, url in endpoints.items():
        assert price_links(Offer(source_url=url), slug).endpoint == url, slug
        assert PRICE_PAGES[slug].url.startswith("https://")


def test_one_observation_is_stated_with_its_date_and_not_drawn(client, catalog):
    offer = catalog["tcpx"].offers.get()
    PriceObservation.objects.create(
        offer=offer, price_per_hour=Decimal("32"), currency="USD", observed_at=offer.observed_at
    )
    body = client.get("/instances/gcp/tcpx-8g/").content.decode()
    assert 'class="price-chart"' not in body
    text = " ".join(body.split())
    assert (
        "one price on record for On-demand in europe-west4, $32.00 per hour, observed 2026-11-01"
        in text
    )


def test_one_undated_observation_says_its_date_is_unknown(client, catalog):
    offer = catalog["tcpx"].offers.get()
    PriceObservation.objects.create(
        offer=offer, price_per_hour=Decimal("32"), currency="USD", observed_at=None
    )
    body = " ".join(client.get("/instances/gcp/tcpx-8g/").content.decode().split())
    assert 'class="price-chart"' not in body
    assert "$32.00 per hour; its source shows no date" in body


def test_two_observations_still_draw_the_chart(client, catalog):
    offer = catalog["tcpx"].offers.get()
    for day, price in ((1, "32"), (20, "28")):
        PriceObservation.objects.create(
            offer=offer,
            price_per_hour=Decimal(price),
            currency="USD",
            observed_at=datetime(2026, 11, day, tzinfo=UTC),
        )
    body = client.get("/instances/gcp/tcpx-8g/").content.decode()
    assert 'class="price-chart"' in body
    assert "one price on record" not in body
