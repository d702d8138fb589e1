"""The filter page in HTML: full page, htmx fragment, errors at their fields, presets."""

import pytest
from django.http import QueryDict

from offerings.models import FabricTechnology, GpuModel, OfferKind
from offerings.table.parameters import parse_listing_query
from offerings.table.presets import PRESETS

# Every view here runs with lazy loads raising (Django 6.1 fetch modes): no N+1 can hide.
pytestmark = pytest.mark.usefixtures("lazy_loads_raise")


def test_the_page_and_its_fragment_share_one_url_and_vary_on_hx_request(client, catalog):
    full = client.get("/?nvlink=true")
    fragment = client.get("/?nvlink=true", headers={"HX-Request": "true"})
    assert full.status_code == fragment.status_code == 200
    assert "HX-Request" in full["Vary"]
    assert "HX-Request" in fragment["Vary"]
    assert b"<html" in full.content
    assert b"<html" not in fragment.content
    assert b'id="results"' in fragment.content
    assert len(fragment.content) < 0.6 * len(full.content)


def test_the_table_has_sortable_headers_with_aria_sort(client, catalog):
    body = client.get("/?sort=-gpu_count").content.decode()
    assert 'aria-sort="descending"' in body
    assert 'aria-sort="none"' in body
    assert "sort=gpu_count" in body  # clicking again flips the order


def test_badges_cannot_be_misread(client, catalog):
    body = client.get("/").content.decode()
    for badge in ("NVLink / NVSwitch", "NVLink bridge", "PCIe only", "InfiniBand", "AWS EFA"):
        assert badge in body
    assert "TCPX (not RDMA)" in body
    assert "unknown" in body


def test_invalid_filters_answer_400_and_show_the_message_at_the_field(client, catalog):
    response = client.get("/?gpu_count_min=eight&nvlink=maybe")
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="err-gpu_count_min" class="field-error">Enter a number.' in body
    assert "maybe is not one of the available choices" in body
    assert 'aria-invalid="true"' in body


def test_an_invalid_htmx_request_is_swapped_in_with_out_of_band_field_errors(client, catalog):
    response = client.get("/?nvlink=maybe", headers={"HX-Request": "true"})
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="err-nvlink" class="field-error" hx-swap-oob="true">Select a valid choice' in body


def test_orm_shaped_keys_never_reach_the_database(client, catalog):
    response = client.get("/?provider__slug__startswith=a&_connector=OR")
    assert response.status_code == 400
    assert b"This parameter name is not allowed." in response.content


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.slug)
def test_every_preset_is_a_valid_filter_link_on_the_page(client, catalog, preset):
    assert client.get(f"/?{preset.query}").status_code == 200
    assert preset.query.replace("&", "&amp;") in client.get("/").content.decode()


def test_prices_can_be_shown_in_cny(client, catalog, cny_rate):
    body = client.get("/?currency=CNY&provider=gcp").content.decode()
    assert "¥32.00" in body  # 4.00 USD per GPU-hour / 0.125
    assert "2025-10-21" in body or "Oct. 21, 2025" in body
    assert "(1 CNY = 0.125 USD)" in body  # not the column's ten places, 0.1250000000


def test_the_detail_page_of_a_row_opens_and_verda_redirects(client, catalog):
    assert client.get("/instances/aws/ib-8x/").status_code == 200
    response = client.get("/instances/verda/2a6000-20v/")
    assert response.status_code == 301
    assert response["Location"] == "/instances/datacrunch/2a6000-20v/"
    assert client.get("/instances/aws/nope/").status_code == 404


def test_facet_counts_say_how_many_rows_each_choice_would_give(client, catalog):
    from offerings.table.counts import listing_counts

    def counts_for(query: str) -> dict:
        return listing_counts(parse_listing_query(QueryDict(query))).facets

    counts = counts_for("nvlink=true&fabric=infiniband")
    # the fabric facet ignores the fabric choice itself but keeps nvlink=true
    assert counts["fabric"] == {"infiniband": 1, "efa": 1, "tcpx": 1, "unknown": 1}
    # price kinds keep the fabric choice: only ib.8x, with an on-demand and a spot price
    assert counts["price_kind"] == {"on-demand": 1, "spot": 1}
    # without it: ib, efa, tcpx and the bridge pair have on-demand prices, only ib a spot one
    assert counts_for("nvlink=true")["price_kind"] == {"on-demand": 4, "spot": 1}


@pytest.mark.parametrize(
    "query",
    [
        "",
        "nvlink=true",
        "fabric=infiniband&fabric=efa",
        "price_kind=spot",
        "max_gpu_hour=3",
        "price_kind=on-demand&geo=na&nvlink=true",
        "available=true&fabric=tcpx",
        "gpu_count_min=8&max_gpu_hour=100&price_kind=spot&price_kind=on-demand",
    ],
)
def test_every_facet_count_is_the_count_the_page_shows_for_that_choice(catalog, query):
    """Each count equals the row count of the same query with only that choice for its field."""
    from offerings.table.counts import listing_counts

    counts = listing_counts(parse_listing_query(QueryDict(query))).facets
    for name, choices in (("fabric", FabricTechnology.values), ("price_kind", OfferKind.values)):
        for value in choices:
            narrowed = QueryDict(query, mutable=True)
            narrowed.setlist(name, [value])
            expected = parse_listing_query(narrowed).filterset.qs.count()
            assert counts[name].get(value, 0) == expected, (name, value)


def test_facet_counts_are_shown_and_refreshed_out_of_band(client, catalog):
    body = client.get("/?nvlink=true").content.decode()
    assert 'id="facet-fabric-infiniband" class="facet-count">(1)</span>' in body
    assert 'id="facet-price_kind-reserved" class="facet-count">(0)</span>' in body
    fragment = client.get("/?nvlink=false", headers={"HX-Request": "true"}).content.decode()
    assert 'id="facet-fabric-ethernet" class="facet-count" hx-swap-oob="true">(1)' in fragment


def test_multiple_choice_options_mark_the_chosen_escape_and_follow_the_data(client, catalog):
    body = client.get("/?gpu=l40s&region=FIN-01").content.decode()
    assert '<input type="checkbox" name="gpu" value="l40s" checked>' in body
    assert '<input type="checkbox" name="gpu" value="h100-sxm">' in body
    # Regions are per provider (`provider:code`), labelled with the provider's name.
    assert 'name="region" value="datacrunch:FIN-01" checked> Verda: FIN-01</label>' in body
    assert 'name="region" value="aws:us-east-1"> AWS: us-east-1</label>' in body
    # The options are kept per data version: a new GPU shows on the next request, escaped.
    GpuModel.objects.create(
        slug="odd-one", vendor="nvidia", name='A&B <i>"x"</i>', form_factor="pcie", memory_gib=1
    )
    body = client.get("/?gpu=odd-one").content.decode()
    assert 'name="gpu" value="odd-one" checked>' in body
    assert "A&amp;B &lt;i&gt;&quot;x&quot;&lt;/i&gt;" in body
    assert "<i>" not in body.split('value="odd-one"', 1)[1].split("</label>", 1)[0]
    assert 'name="gpu" value="l40s">' in body  # chosen before, not now


def test_the_sort_menu_offers_every_key_both_ways_with_words_not_keys(client, catalog):
    from offerings.table.parameters import SORT_CHOICES, SORT_FIELDS

    assert sorted(key for key, _ in SORT_CHOICES) == sorted(
        [*SORT_FIELDS, *(f"-{key}" for key in SORT_FIELDS)]
    )
    body = client.get("/?sort=-gpu_count").content.decode()
    assert '<option value="-gpu_count" selected>GPUs, most first</option>' in body
    assert '<option value="price_gpu_hour">Price per GPU-hour, lowest first</option>' in body
    assert ">price_gpu_hour<" not in body
    assert ">-gpu<" not in body
    chinese = client.get("/zh-hans/?sort=gpu").content.decode()
    assert '<option value="gpu" selected>GPU 型号，A 到 Z</option>' in chinese


def test_no_template_syntax_or_comment_reaches_a_page(client, catalog):
    """A `{# #}` comment may not span lines (Django prints it); nor may any tag leak."""
    for path in ("/", "/zh-hans/", "/?nvlink=true", "/instances/aws/ib-8x/", "/providers/aws/"):
        body = client.get(path).content.decode()
        for marker in ("{#", "#}", "{%", "%}", "{{", "}}"):
            assert marker not in body, (path, marker)


@pytest.mark.parametrize(
    ("value", "shown"),
    [("0.1404760000", "0.140476"), ("7.0000", "7"), ("10", "10"), ("120.50", "120.5"), (None, "—")],
)
def test_plain_number_drops_trailing_zeros_without_an_exponent(value, shown):
    from decimal import Decimal

    from offerings.templatetags.catalog import plain_number

    assert plain_number(None if value is None else Decimal(value)) == shown


def test_every_filter_that_narrows_the_rows_can_be_named_as_a_cause_of_an_empty_result():
    from offerings.table.parameters import InstanceFilterSet
    from offerings.table.views import NARROWING

    assert set(NARROWING) == set(InstanceFilterSet.base_filters) - {"sort"}


def test_undated_prices_get_one_notice_above_the_table_not_a_stale_badge_on_each_row(
    client, catalog
):
    """1,661 of 1,728 prices were undated and every row carried a red "stale · date unknown"."""
    from offerings.models import Offer

    body = client.get("/").content.decode()
    assert "undated-notice" not in body  # the test catalog's prices are dated
    Offer.objects.update(observed_at=None)
    body = client.get("/").content.decode()
    assert body.count("undated-notice") == 1
    assert 'class="stale"' not in body
    assert "date unknown" in body
    prices = [
        price for row in client.get("/api/instances").json()["results"] for price in row["prices"]
    ]
    assert prices
    assert all(p["observed_at"] is None and p["is_stale"] is False for p in prices)
