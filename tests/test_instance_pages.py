"""Detail, compare, GPU and provider pages, corrections and the price-change feed."""

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core import mail
from django.test import Client, override_settings

from offerings.models import CorrectionReport, PriceObservation, ScrapeRun
from offerings.table.parameters import parse_id
from tests.conftest import make_offer

# Every view here runs with lazy loads raising (Django 6.1 fetch modes): no N+1 can hide.
pytestmark = pytest.mark.usefixtures("lazy_loads_raise")

SVG = "{http://www.w3.org/2000/svg}"
ATOM = "{http://www.w3.org/2005/Atom}"


def svg_from(html: str, css_class: str) -> ET.Element:
    start = html.index(f'class="{css_class}"')
    start = html.rindex("<svg", 0, start)
    end = html.index("</svg>", start) + len("</svg>")
    return ET.fromstring(html[start:end])  # raises on malformed SVG


def texts(svg: ET.Element) -> list[str]:
    return [t.text for t in svg.iter(f"{SVG}text")]


def test_the_detail_page_shows_every_fact_with_its_source(client, catalog):
    link = catalog["ib"].gpu_link
    link.source_url, link.verified_at = "https://nvidia.example/hgx", datetime(2026, 11, 2).date()
    link.save()
    body = client.get("/instances/aws/ib-8x/").content.decode()
    assert "3200" in body
    assert 'href="https://nvidia.example/hgx"' in body
    assert "checked 2026-11-02" in body
    assert 'href="https://docs.example.com/spec"' in body  # the price's source
    assert "no source recorded" in body  # the fabric row carries none here
    assert 'id="report"' in body


def test_the_topology_svg_is_valid_and_names_every_gpu_and_nic(client, catalog):
    catalog["ib"].fabric.nics = 8
    catalog["ib"].fabric.save()
    svg = svg_from(client.get("/instances/aws/ib-8x/").content.decode(), "topology")
    labels = texts(svg)
    assert [f"GPU {n}" for n in range(8)] == [t for t in labels if t.startswith("GPU ")]
    assert [f"NIC {n}" for n in range(8)] == [t for t in labels if t.startswith("NIC ")]
    assert any("NVSwitch" in t for t in labels)
    assert svg.find(f"{SVG}title") is not None


def test_a_pcie_only_node_is_drawn_without_nvlink_and_unknowns_are_labelled(client, catalog):
    svg = svg_from(client.get("/instances/aws/pcie-4x/").content.decode(), "topology")
    labels = " ".join(texts(svg))
    assert "PCIe only" in labels
    assert "NVSwitch" not in labels
    assert "NICs: number unknown" in labels
    unknown = svg_from(client.get("/instances/datacrunch/mystery-8x/").content.decode(), "topology")
    assert "unknown" in " ".join(texts(unknown))


def test_a_bridge_pair_is_drawn_as_a_pair(client, catalog):
    svg = svg_from(client.get("/instances/datacrunch/2a6000-20v/").content.decode(), "topology")
    assert any("pairs" in t for t in texts(svg))
    assert len(svg.findall(f".//{SVG}line[@class='nvlink bridge']")) == 1


def test_the_detail_page_renders_without_prices_and_with_unknowns(client, catalog):
    body = client.get("/instances/datacrunch/mystery-8x/").content.decode()
    assert "No price on record." in body
    assert body.count("unknown") >= 5
    assert 'class="price-chart"' not in body


def test_the_price_history_chart_steps_through_each_change(client, catalog):
    offer = catalog["tcpx"].offers.get()
    PriceObservation.objects.create(
        offer=offer, price_per_hour=Decimal("32"), currency="USD", observed_at=offer.observed_at
    )
    PriceObservation.objects.create(
        offer=offer,
        price_per_hour=Decimal("28"),
        currency="USD",
        observed_at=datetime(2026, 11, 20, tzinfo=UTC),
    )
    svg = svg_from(client.get("/instances/gcp/tcpx-8g/").content.decode(), "price-chart")
    assert len(svg.findall(f"{SVG}circle")) == 2
    assert svg.find(f"{SVG}path").get("d").count("V") == 1


def test_the_detail_page_query_count_is_bounded(client, catalog, django_assert_max_num_queries):
    with django_assert_max_num_queries(14):
        assert client.get("/instances/aws/ib-8x/").status_code == 200


def test_compare_shows_two_to_four_side_by_side_with_differences_marked(client, catalog):
    ib, efa = catalog["ib"], catalog["efa"]
    response = client.get(f"/compare/?ids={ib.pk},aws/efa-8x")
    assert response.status_code == 200
    body = response.content.decode()
    assert "ib.8x" in body
    assert "efa.8x" in body
    assert body.count('class="differs"') >= 1  # the fabric differs
    assert efa.pk != ib.pk


@pytest.mark.parametrize(
    "ids",
    ["", "1", "aws/ib-8x", "aws/ib-8x,aws/ib-8x", "aws/ib-8x,aws/nope", "a,b,c,d,e", "x" * 3000],
)
def test_compare_refuses_fewer_more_repeated_or_unknown_ids(client, catalog, ids):
    assert client.get(f"/compare/?ids={ids}").status_code == 400


def test_compare_refuses_more_than_four(client, catalog):
    ids = ",".join(f"{r.provider.slug}/{r.slug}" for r in list(catalog.values())[:5])
    assert client.get(f"/compare/?ids={ids}").status_code == 400


def test_compare_refuses_ids_given_twice_and_orm_shaped_names(client, catalog):
    assert client.get("/compare/?ids=aws/ib-8x,aws/efa-8x&ids=aws/pcie-4x").status_code == 400
    assert client.get("/compare/?ids=aws/ib-8x,aws/efa-8x&_x=1").status_code == 400


def test_compare_links_back_to_the_filtered_list(client, catalog):
    body = client.get("/compare/?ids=aws/ib-8x,aws/efa-8x&from=nvlink%3Dtrue").content.decode()
    assert 'href="/?nvlink=true"' in body


def test_ticked_rows_in_the_table_lead_to_compare_keeping_the_filters(client, catalog):
    ib, efa = catalog["ib"], catalog["efa"]
    body = client.get(f"/?nvlink=true&compare={ib.pk}&compare={efa.pk}").content.decode()
    assert f"/compare/?ids={ib.pk}%2C{efa.pk}&amp;from=nvlink%3Dtrue" in body


ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@pytest.mark.parametrize(
    ("token", "pk"),
    [
        ("12", 12),
        ("0", 0),
        ("9" * 18, 10**18 - 1),
        ("9" * 19, None),  # a bigint holds 19 digits, not all of them: no 19-digit id
        ("12345678901234567890", None),
        ("١٢", None),  # Arabic-Indic digits: str.isdigit() and int() accept them
        ("²", None),
        ("+12", None),
        ("-1", None),
        (" 12", None),
        ("1.0", None),
        ("", None),
    ],
)
def test_an_id_is_ascii_digits_that_fit_a_bigint(token, pk):
    assert parse_id(token) == pk


def test_ids_and_compare_ticks_take_the_same_ids(client, catalog):
    """`ids` (the compare page, the estimator) and the table's `compare` ticks read a token as an
    id by one rule: an id written in other digits, or too long for the column, is none."""
    ib, efa = catalog["ib"], catalog["efa"]
    foreign = str(ib.pk).translate(ARABIC_INDIC)  # int() reads it as ib's id
    for token in (foreign, "12345678901234567890"):
        response = client.get(f"/compare/?ids={token},{efa.pk}")
        assert response.status_code == 400
        assert token in response.content.decode()  # named as an unknown instance
        estimate = client.get(f"/api/estimate?params_b=7&mode=inference&ids={token}").json()
        assert estimate["fields"]["ids"] == [f"Unknown instance: {token}."]
        body = client.get(f"/?compare={token}&compare={efa.pk}").content.decode()
        assert f'value="{efa.pk}" form="filters" checked' in body
        assert f'value="{ib.pk}" form="filters"' in body
        assert f'value="{ib.pk}" form="filters" checked' not in body
        assert "Select one more row to compare." in body
    assert client.get(f"/compare/?ids={ib.pk},{efa.pk}").status_code == 200


def test_the_gpu_page_groups_instances_by_interconnect_cheapest_first(client, catalog):
    body = client.get("/gpus/h100-sxm/").content.decode()
    assert "All GPUs on one NVSwitch" in body
    assert "GPU-to-GPU link unknown" in body
    assert body.index("ib.8x") < body.index("tcpx-8g") < body.index("efa.8x")
    assert client.get("/gpus/nope/").status_code == 404


def test_the_provider_page_tells_its_interconnects_and_freshness(client, catalog, provider):
    ScrapeRun.objects.create(
        provider=catalog["ib"].provider,
        status="succeeded",
        finished_at=datetime(2026, 11, 28, tzinfo=UTC),
        started_at=datetime(2026, 11, 28, tzinfo=UTC),
    )
    body = client.get("/providers/aws/").content.decode()
    assert "InfiniBand: 1" in body
    assert "AWS EFA: 1" in body
    assert "2026-11-28" in body
    response = client.get("/providers/verda/")
    assert response.status_code == 301
    assert response["Location"] == "/providers/datacrunch/"


# -- corrections --------------------------------------------------------------------------------

GOOD_REPORT = {
    "topic": "fabric",
    "message": "The fabric is 8 x 400 Gb/s NDR, not 3,200 total.",
    "source_url": "https://docs.example.com/network",
    "website": "",
}


def test_a_valid_correction_lands_in_the_review_queue_and_emails_nobody(client, catalog):
    response = client.post("/instances/aws/ib-8x/report/", GOOD_REPORT)
    assert response.status_code == 302
    assert response["Location"].endswith("?reported=1#report")
    report = CorrectionReport.objects.select_related("instance").get()
    assert (report.instance, report.status) == (catalog["ib"], "new")
    assert mail.outbox == []
    assert "A curator will check" in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("topic", "everything"),
        ("message", ""),
        ("message", "wrong"),
        ("message", "x" * 2001),
        ("source_url", "javascript:alert(1)"),
        ("source_url", "not a url"),
        ("source_url", ""),
        ("website", "https://spam.example"),
    ],
)
def test_a_bad_correction_is_refused_and_nothing_is_saved(client, catalog, field, value):
    response = client.post("/instances/aws/ib-8x/report/", GOOD_REPORT | {field: value})
    assert response.status_code == 400
    assert b"field-error" in response.content
    assert not CorrectionReport.objects.exists()


def test_the_correction_form_needs_its_csrf_token(catalog):
    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/instances/aws/ib-8x/report/", GOOD_REPORT)
    assert response.status_code == 403
    assert not CorrectionReport.objects.exists()
    # The site's own page, saying what to do, in the page's language.
    assert "<h1>The form could not be sent</h1>" in response.content.decode()
    chinese = strict.post("/zh-hans/instances/aws/ib-8x/report/", GOOD_REPORT)
    assert chinese.status_code == 403
    assert "<h1>表单未能提交</h1>" in chinese.content.decode()


def test_corrections_are_rate_limited_with_a_429(client, catalog):
    # A private local-memory cache: in CI the default cache is Redis, whose hourly counter
    # would outlive this run and refuse a rerun's first report.
    private = {
        alias: {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"correction-limit-test-{alias}",
        }
        for alias in ("default", "ratelimit")
    }
    with override_settings(RATELIMIT_ENABLE=True, CORRECTION_RATE="2/h", CACHES=private):
        codes = [
            client.post("/instances/aws/ib-8x/report/", GOOD_REPORT).status_code for _ in range(3)
        ]
    assert codes == [302, 302, 429]
    assert CorrectionReport.objects.count() == 2


def test_reports_only_go_to_visible_instances(client, catalog):
    assert client.post("/instances/aws/nope/report/", GOOD_REPORT).status_code == 404
    assert client.get("/instances/aws/ib-8x/report/").status_code == 405


# -- the feed ------------------------------------------------------------------------------------


def feed_entries(client, query: str = "") -> list[ET.Element]:
    response = client.get(f"/feeds/price-changes/?{query}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    root = ET.fromstring(response.content)
    assert root.tag == f"{ATOM}feed"
    for required in ("title", "id", "updated"):
        assert root.find(f"{ATOM}{required}") is not None
    return root.findall(f"{ATOM}entry")


def observe(offer, price: str, when: datetime) -> None:
    PriceObservation.objects.create(
        offer=offer, price_per_hour=Decimal(price), currency="USD", observed_at=when
    )


def test_the_feed_is_atom_and_shows_each_change_from_old_to_new(client, catalog):
    offer = catalog["ib"].offers.get(kind="on-demand")
    observe(offer, "24", datetime(2026, 11, 1, tzinfo=UTC))
    observe(offer, "20", datetime(2026, 11, 15, tzinfo=UTC))
    entries = feed_entries(client)
    titles = [e.find(f"{ATOM}title").text for e in entries]
    assert titles[0] == "AWS ib.8x, us-east-1 on-demand: $24.00 → $20.00 per hour"
    assert "first seen at $24.00" in titles[1]
    for entry in entries:
        for required in ("id", "title", "updated", "link"):
            assert entry.find(f"{ATOM}{required}") is not None


def test_the_feed_honours_the_filters(client, catalog):
    observe(catalog["ib"].offers.get(kind="on-demand"), "24", datetime(2026, 11, 1, tzinfo=UTC))
    observe(catalog["efa"].offers.get(), "40", datetime(2026, 11, 2, tzinfo=UTC))
    observe(catalog["ib"].offers.get(kind="spot"), "8", datetime(2026, 11, 3, tzinfo=UTC))
    titles = [e.find(f"{ATOM}title").text for e in feed_entries(client, "fabric=infiniband")]
    assert titles
    assert all("ib.8x" in t for t in titles)
    spot = [e.find(f"{ATOM}title").text for e in feed_entries(client, "price_kind=spot")]
    assert len(spot) == 1
    assert "spot" in spot[0]


def test_the_feed_answers_bad_filters_with_400(client, catalog):
    response = client.get("/feeds/price-changes/?nvlink=maybe&gpu__slug=x")
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"nvlink", "gpu__slug"}


def test_a_new_offer_makes_a_first_seen_entry(client, catalog, region):
    make_offer(catalog["pcie"], region, price="7", kind="spot")
    assert feed_entries(client) == []  # no observations recorded by make_offer


def test_the_detail_page_shows_money_as_money_in_one_currency(client, catalog):
    """$101.70125 and ¥156.186301 were shown; a page shows cents, per GPU-hour three
    significant figures below a dollar, in USD with the amount charged as a note."""
    from offerings.models import Region
    from tests.conftest import make_offer

    make_offer(
        catalog["ib"],
        Region.objects.get(code="us-east-1"),
        price="27.1970",
        kind="reserved",
        term_months=12,
    )
    body = client.get("/instances/aws/ib-8x/").content.decode()
    assert "<td>$24.00</td>" in body  # stored as 24.0000
    assert "$27.20" in body  # rounded to cents
    assert "27.197" not in body
    assert "24.0000" not in body


@pytest.mark.parametrize(
    ("value", "currency", "shown", "per_gpu_hour"),
    [
        ("98.3200", "USD", "$98.32", "$98.32"),
        ("101.70125", "USD", "$101.70", "$101.70"),
        ("156.186301", "CNY", "¥156.19", "¥156.19"),
        ("1234.5", "CNY", "¥1,234.50", "¥1,234.50"),
        ("0.853", "USD", "$0.85", "$0.853"),
        ("0.0123456", "USD", "$0.01", "$0.0123"),
        ("0.5", "USD", "$0.50", "$0.500"),
        ("1", "USD", "$1.00", "$1.00"),
        ("12.00", "EUR", "EUR 12.00", "EUR 12.00"),
        (None, "USD", "—", "—"),
    ],
)
def test_money_is_shown_in_cents_and_a_gpu_hour_to_three_figures(
    value, currency, shown, per_gpu_hour
):
    from decimal import Decimal

    from offerings.money import shown_gpu_hour_price, shown_price

    amount = None if value is None else Decimal(value)
    assert shown_price(amount, currency) == shown
    assert shown_gpu_hour_price(amount, currency) == per_gpu_hour


def test_the_gpu_page_shows_each_groups_cheapest_and_links_to_them_all(
    client, catalog, monkeypatch
):
    from offerings.pages import views

    full = client.get("/gpus/h100-sxm/").content.decode()
    assert "all of them in the table" not in full  # a small catalog fits
    monkeypatch.setattr(views, "GPU_PAGE_GROUP_ROWS", 1)
    body = client.get("/gpus/h100-sxm/").content.decode()
    nvswitch = body.split("All GPUs on one NVSwitch", 1)[1].split("</section>", 1)[0]
    assert nvswitch.count("<tr") - nvswitch.count("<thead") <= 2  # the header row and one type
    assert "ib.8x" in nvswitch  # the cheapest of them
    assert "The cheapest 1 of " in nvswitch
    assert 'href="/?gpu=h100-sxm"' in nvswitch
    zh = client.get("/zh-hans/gpus/h100-sxm/").content.decode()
    assert "最便宜的 1 个" in zh
