"""A Chinese buyer served in Chinese and CNY (issue 29, item 2): the Chinese pages show CNY unless
USD is asked for, providers and regions go by their Chinese names there, and the search finds a
provider by its Chinese name in either language."""

from __future__ import annotations

import pytest

from offerings.models import Provider, Region
from tests.content.test_content import get, parse


def price_cells(body: str) -> list[str]:
    """The headline price of each priced row of the filter table."""
    return [
        next(cell.iter("strong")).text()
        for cell in parse(body).iter("td", "price")
        if any(cell.iter("strong"))
    ]


def row_providers(body: str) -> set[str]:
    rows = next(parse(body).iter("section", "results"))
    # A row's first link is its provider's page (the first cell holds the compare tick).
    return {next(row.iter("a")).text().strip() for row in rows.iter("tr") if any(row.iter("code"))}


def test_the_chinese_filter_page_shows_cny_unless_usd_is_asked_for(client, shipped):
    chinese = price_cells(get(client, "/zh-hans/?provider=aws").content.decode())
    assert chinese
    assert all(cell.startswith("¥") for cell in chinese)
    usd = price_cells(get(client, "/zh-hans/?provider=aws&currency=USD").content.decode())
    assert usd
    assert all(cell.startswith("$") for cell in usd)
    english = price_cells(get(client, "/?provider=aws").content.decode())
    assert english
    assert all(cell.startswith("$") for cell in english)
    chosen = price_cells(get(client, "/?provider=aws&currency=CNY").content.decode())
    assert all(cell.startswith("¥") for cell in chosen)


def test_the_currency_menu_names_the_page_s_default_and_a_link_switches_it(client, shipped):
    for prefix, default, other in (("", "USD", "CNY"), ("/zh-hans", "CNY", "USD")):
        root = parse(get(client, prefix + "/?gpu=h100-sxm").content.decode())
        select = next(s for s in root.iter("select") if s.attrs.get("name") == "currency")
        assert next(select.iter("option")).text().startswith(default)
        switch = next(root.iter("span", "currency-switch"))
        href = next(switch.iter("a")).attrs["href"]
        assert f"currency={other}" in href
        assert "gpu=h100-sxm" in href


def test_the_api_answers_in_usd_whatever_the_reader_s_language(client, shipped):
    response = client.get(
        "/api/instances?provider=aws&format=csv", headers={"Accept-Language": "zh-hans"}
    )
    header, first = response.content.decode().splitlines()[:2]
    columns = dict(zip(header.split(","), first.split(","), strict=False))
    assert columns["price_currency"] == "USD"


@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
def test_the_search_finds_a_provider_by_its_chinese_name(client, shipped, prefix):
    alibaba = Provider.objects.get(slug="alibaba")
    assert alibaba.name_zh == "阿里云"
    body = get(client, f"{prefix}/?q=阿里云&interconnect=").content.decode()
    count = next(parse(body).iter("p", "count")).text()
    assert (
        int(count.split()[0])
        == alibaba.instance_types.filter(is_active=True, is_hidden=False).count()
    )
    response = client.get("/api/instances?q=腾讯云")
    assert {item["provider"] for item in response.json()["results"]} == {"tencent"}


def test_chinese_pages_name_providers_and_regions_in_chinese_and_english_pages_do_not(
    client, shipped
):
    chinese = get(client, "/zh-hans/?provider=alibaba&provider=aws").content.decode()
    english = get(client, "/?provider=alibaba&provider=aws").content.decode()
    assert {"阿里云", "亚马逊云科技"} <= row_providers(chinese)
    assert {"Alibaba Cloud", "Amazon Web Services"} <= row_providers(english)
    # The region checklist labels a region by the provider's own Chinese name for it.
    region = Region.objects.get(provider__slug="alibaba", code="cn-shanghai")
    assert region.name_zh == "华东2（上海）"
    assert "阿里云: cn-shanghai (华东2（上海）)" in chinese
    assert "Alibaba Cloud: cn-shanghai (China East 2 (Shanghai))" in english
    # The provider page too.
    assert "<h1>阿里云</h1>" in get(client, "/zh-hans/providers/alibaba/").content.decode()
    assert "<h1>Alibaba Cloud</h1>" in get(client, "/providers/alibaba/").content.decode()


def detail_prices(body: str) -> list[str]:
    """The per-hour cells of the detail page's price table."""
    section = next(e for e in parse(body).iter("section") if e.attrs.get("id") == "prices")
    return [
        list(row.iter("td"))[2].text().split()[0]
        for row in section.iter("tr")
        if any(row.iter("td"))
    ]


def priced(count: int) -> list:
    """`count` visible types of one provider, each with an on-demand price charged in USD."""
    from offerings.models import InstanceType

    rows = (
        InstanceType.objects.visible()
        .filter(offers__is_active=True, offers__kind="on-demand", offers__currency="USD")
        .distinct()
        .select_related("provider", "gpu")
        .order_by("provider__slug", "slug")
    )
    by_provider: dict[str, list] = {}
    for row in rows:
        by_provider.setdefault(row.provider.slug, []).append(row)
    return next(found[:count] for found in by_provider.values() if len(found) >= count)


@pytest.mark.parametrize(
    ("query", "prefix", "symbol"),
    [
        ("", "", "$"),
        ("", "/zh-hans", "¥"),
        ("?currency=USD", "/zh-hans", "$"),
        ("?currency=CNY", "", "¥"),
    ],
)
def test_the_detail_page_shows_the_page_s_currency(client, shipped, query, prefix, symbol):
    (row,) = priced(1)
    path = f"{prefix}/instances/{row.provider.slug}/{row.slug}/{query}"
    cells = detail_prices(get(client, path).content.decode())
    assert cells
    assert all(cell.startswith(symbol) for cell in cells)


def test_compare_the_gpu_and_the_provider_pages_honour_the_currency(client, shipped):
    rows = priced(2)
    ids = ",".join(str(row.pk) for row in rows)
    for prefix, symbol in (("", "$"), ("/zh-hans", "¥")):
        body = get(client, f"{prefix}/compare/?ids={ids}").content.decode()
        prices = price_cells(body)
        assert prices
        assert all(p.startswith(symbol) for p in prices)
        for page in (f"/gpus/{rows[0].gpu.slug}/", f"/providers/{rows[0].provider.slug}/"):
            cells = price_cells(get(client, prefix + page).content.decode())
            assert cells
            assert all(p.startswith(symbol) for p in cells)
    usd = get(client, f"/zh-hans/compare/?ids={ids}&currency=USD").content.decode()
    assert "每 GPU 小时价格（USD）" in usd


def test_a_chosen_currency_travels_with_the_links_to_the_priced_pages(client, shipped):
    root = parse(get(client, "/zh-hans/?provider=aws&currency=USD").content.decode())
    rows = next(root.iter("section", "results"))
    details = [a.attrs["href"] for a in rows.iter("a") if "/instances/" in a.attrs.get("href", "")]
    assert details
    assert all(href.endswith("?currency=USD") for href in details)
    nav = next(root.iter("nav", "site-nav"))
    hrefs = [a.attrs["href"] for a in nav.iter("a")]
    assert "/zh-hans/plan/?currency=USD" in hrefs
    assert "/zh-hans/estimate/?currency=USD" in hrefs
    plain = parse(get(client, "/zh-hans/?provider=aws").content.decode())
    plain_nav = [a.attrs["href"] for a in next(plain.iter("nav", "site-nav")).iter("a")]
    assert "/zh-hans/plan/" in plain_nav  # the planner is in the navigation, in both languages
    assert "/plan/" in [
        a.attrs["href"]
        for a in next(parse(get(client, "/").content.decode()).iter("nav", "site-nav")).iter("a")
    ]


def test_the_planner_and_the_estimator_show_the_page_s_currency(client, shipped):
    def money_on(path: str) -> list[str]:
        body = get(client, path).content.decode()
        return [c.text() for c in parse(body).iter("strong") if c.text()[:1] in "$¥"] + [
            c.text() for c in parse(body).iter("td", "cost") if c.text()[:1] in "$¥"
        ]

    for prefix, symbol in (("", "$"), ("/zh-hans", "¥")):
        plan = money_on(f"{prefix}/plan/?gpus=16&price_kind=on-demand")
        assert plan
        assert all(text.startswith(symbol) for text in plan)
        estimate = money_on(f"{prefix}/estimate/?params_b=7&mode=train-fsdp&nodes=1")
        assert estimate
        assert all(text.startswith(symbol) for text in estimate)
    usd = money_on("/zh-hans/plan/?gpus=16&price_kind=on-demand&currency=USD")
    assert all(text.startswith("$") for text in usd)


@pytest.mark.parametrize("path", ["/zh-hans/faq/", "/zh-hans/providers/", "/zh-hans/about/data/"])
def test_every_page_carries_the_chosen_currency_in_its_navigation(client, db, path):
    html = client.get(f"{path}?currency=USD").content.decode()
    nav = html.split('class="site-nav"', 1)[1].split("</nav>", 1)[0]
    assert "/zh-hans/plan/?currency=USD" in nav
    # A value the site cannot show is dropped, not kept in the links or the cache key.
    junk = client.get(f"{path}?currency=XYZ").content.decode()
    assert "currency=XYZ" not in junk
