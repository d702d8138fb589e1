"""The explainer, the FAQ, the about-the-data page, the sitemap and robots.txt.

Figures stated in content come from `offerings.content.facts` and must agree with the shipped
catalog; every pre-filtered link must return rows from it; the FAQ's JSON-LD must say what the page
says.
"""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import get_resolver, reverse
from django.utils import translation

from offerings.content import facts, faq
from offerings.content.markup import (
    TABLE_LINKS,
    count_matches,
    render_markup,
    table_link_counts,
    table_url,
)
from offerings.content.views import NOT_IN_SITEMAP, route_exists
from offerings.management.commands import lint_catalog
from offerings.models import ExchangeRate, Fabric, GpuLink, InstanceType, Offer

CONTENT_PAGES = ("/learn/nvlink-vs-infiniband/", "/faq/", "/about/data/")
LANGUAGES = {"en": "", "zh-hans": "/zh-hans"}
TEMPLATES = Path(settings.BASE_DIR) / "templates" / "content"
FIGURE = re.compile(r"(\d[\d,]*)\s?(GB/s|Gb/s|TB/s|Tb/s)")


# -- a small HTML tree, enough to read what a reader sees --------------------------------------


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self, tag: str | None = None, cls: str | None = None):
        if (tag is None or self.tag == tag) and (cls is None or cls in self.classes):
            yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.iter(tag, cls)

    def text(self) -> str:
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return " ".join("".join(parts).split())


VOID = {"meta", "link", "br", "img", "input", "hr", "source", "rect", "line", "path", "circle"}


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for index in range(len(self.stack) - 1, 0, -1):
            if self.stack[index].tag == tag:
                del self.stack[index:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(body: str) -> Element:
    builder = TreeBuilder()
    builder.feed(body)
    return builder.root


def visible_text(root: Element) -> str:
    """The body's words without scripts and SVG titles, for finding the figures it states."""
    body = next(root.iter("body"))

    def walk(node: Element) -> str:
        if node.tag in ("script", "style", "title", "desc"):
            return ""
        # Elements are separated by a space, so table cells and SVG labels do not run together.
        return " ".join(c if isinstance(c, str) else walk(c) for c in node.children)

    return " ".join(walk(body).replace("\xa0", " ").split())


# -- fixtures ---------------------------------------------------------------------------------


# `_fresh_cache` (every test) is in tests/content/conftest.py, `shipped` in tests/conftest.py.


def get(client, path: str):
    response = client.get(path)
    assert response.status_code == 200, path
    return response


# -- pages ------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("page", CONTENT_PAGES)
def test_every_content_page_renders_in_both_languages(client, db, page, language):
    response = get(client, LANGUAGES[language] + page)
    assert response.headers["Content-Language"] == language
    assert f'<html lang="{language}">' in response.content.decode()


def test_the_site_navigation_links_the_content_pages(client, db):
    root = parse(get(client, "/").content.decode())
    nav = next(root.iter("nav", "site-nav"))
    hrefs = {a.attrs["href"] for a in nav.iter("a")}
    assert {"/learn/nvlink-vs-infiniband/", "/faq/", "/about/data/"} <= hrefs


def test_the_explainer_is_written_per_language(client, db):
    english = get(client, "/learn/nvlink-vs-infiniband/").content.decode()
    chinese = get(client, "/zh-hans/learn/nvlink-vs-infiniband/").content.decode()
    assert "NVLink connects the GPUs inside one server" in english
    assert "NVLink 把同一台服务器里的 GPU 连在一起" in chinese
    assert "NVLink connects the GPUs inside one server" not in chinese


def test_the_explainer_draws_its_diagrams_as_inline_svg_without_style_or_script(client, db):
    body = get(client, "/learn/nvlink-vs-infiniband/").content.decode()
    for start in [m.start() for m in re.finditer("<svg", body)]:
        svg = body[start : body.index("</svg>", start) + len("</svg>")]
        ET.fromstring(svg)  # well-formed
        assert "style=" not in svg
    assert body.count('<svg class="diagram"') == 4
    assert "<script" not in body.split("</head>")[1]
    assert " style=" not in body


def test_no_link_is_nested_in_another(client, db):
    for language in LANGUAGES.values():
        for page in CONTENT_PAGES:
            root = parse(get(client, language + page).content.decode())
            for anchor in root.iter("a"):
                assert not list(anchor.iter("a"))[1:], anchor.text()


# -- from reading to the table -----------------------------------------------------------------


def test_every_pre_filtered_link_returns_rows_from_the_shipped_catalog(client, shipped):
    for slug, link in TABLE_LINKS.items():
        count = count_matches(link.query)
        assert count, f"{slug}: {link.query} matches nothing in the shipped catalog"
        page = client.get(f"/?{link.query}")
        assert page.status_code == 200, slug
        api = client.get(f"/api/instances?{link.query}").json()
        assert api["count"] == count, slug


def test_the_content_links_only_to_known_table_views_and_uses_them_all(client, shipped):
    used: set[str] = set()
    by_url = {}
    for language, prefix in LANGUAGES.items():
        with translation.override(language):
            by_url |= {table_url(slug): slug for slug in TABLE_LINKS}
        for page in (*CONTENT_PAGES, "/nvlink-infiniband/"):
            root = parse(get(client, prefix + page).content.decode())
            for anchor in root.iter("a", "table-link"):
                href = anchor.attrs["href"]
                assert href in by_url, href
                assert href.startswith(prefix + "/?")
                used.add(by_url[href])
    assert used == set(TABLE_LINKS)


def test_each_link_shows_its_live_count(client, shipped):
    counts = table_link_counts()
    faq_body = get(client, "/faq/").content.decode()
    assert (
        '<a class="table-link" href="/?nvlink=true&amp;fabric=infiniband">NVLink nodes with '
        f'InfiniBand</a> <span class="live-count">({counts["nvlink-infiniband"]} listed)</span>'
    ) in faq_body
    zh = get(client, "/zh-hans/faq/").content.decode()
    assert 'href="/zh-hans/?nvlink=true&amp;fabric=infiniband"' in zh
    assert f"（已收录 {counts['nvlink-infiniband']} 种）" in zh


def test_the_counts_are_read_with_the_page_so_a_new_type_counts_at_once(client, shipped):
    """No count outlives a write: the page is cached on the data version, nothing else."""
    from offerings.models import InstanceType

    before = table_link_counts()["nvlink-infiniband"]
    row = InstanceType.objects.visible().filter(fabric__technology="infiniband").first()
    assert row is not None
    InstanceType.objects.filter(pk=row.pk).update(is_hidden=True)
    assert f"({before - 1} listed)" in get(client, "/faq/").content.decode()


def test_a_content_page_reads_every_links_count_in_one_query(
    client, shipped, django_assert_max_num_queries
):
    with django_assert_max_num_queries(3):  # the data version, the counts, the figures' rows
        get(client, "/faq/")


# -- one source for figures ---------------------------------------------------------------------


def figures_on(client, path: str) -> list[tuple[int, str]]:
    text = visible_text(parse(get(client, path).content.decode()))
    return [(int(number.replace(",", "")), unit) for number, unit in FIGURE.findall(text)]


def test_every_bandwidth_the_content_states_comes_from_the_facts_module(client, db):
    allowed = facts.allowed_bandwidths()
    for prefix in LANGUAGES.values():
        for page in CONTENT_PAGES:
            for value, unit in figures_on(client, prefix + page):
                assert unit in allowed, f"{page}: {value} {unit}"
                assert value in allowed[unit], f"{prefix}{page} states {value} {unit}"


def test_the_explainer_states_each_generation_s_figure(client, db):
    stated = set(figures_on(client, "/learn/nvlink-vs-infiniband/"))
    for figure in (*facts.NVLINK.values(), *facts.INFINIBAND.values()):
        assert (figure.value, figure.unit) in stated


def test_each_figure_links_to_the_source_of_that_figure(client, db):
    sources: dict[tuple[int, str], set[str]] = {}
    for figure in facts.stated_figures().values():
        sources.setdefault((figure.value, figure.unit), set()).add(figure.source_url)
    for prefix in LANGUAGES.values():
        for page in ("/learn/nvlink-vs-infiniband/", "/faq/"):
            root = parse(get(client, prefix + page).content.decode())
            links = list(root.iter("a", "fig"))
            assert links
            for link in links:
                (number, unit), *_ = FIGURE.findall(link.text().replace("\xa0", " ")) or [("", "")]
                key = (int(number.replace(",", "")), unit) if number else None
                if key is None:  # a count such as "72" GPUs
                    continue
                assert link.attrs["href"] in sources[key], link.text()


def test_no_content_source_states_a_bandwidth_by_hand():
    """Figures reach the pages only through {% fig %}, {% figtext %} or {name} in the FAQ."""
    texts = {path.name: path.read_text() for path in TEMPLATES.glob("*.html")}
    texts["faq.py"] = "\n".join(
        paragraph for entries in faq.FAQ.values() for e in entries for paragraph in e.answer
    )
    for name, text in texts.items():
        assert not FIGURE.findall(text), f"{name} states {FIGURE.findall(text)} by hand"


def test_numbers_follow_the_locale(client, db):
    english = get(client, "/learn/nvlink-vs-infiniband/").content.decode()
    chinese = get(client, "/zh-hans/learn/nvlink-vs-infiniband/").content.decode()
    assert "1,800\xa0GB/s" in english
    assert "1800\xa0GB/s" in chinese


def test_the_facts_agree_with_the_shipped_catalog(shipped):
    links = GpuLink.objects.filter(
        instance__in=InstanceType.objects.all(), bandwidth_gbytes_per_s__isnull=False
    ).select_related("instance__gpu", "instance__provider")
    # A figure a source states differently (the lint's accepted overrides) is the source's.
    overrides = tomllib.loads((settings.BASE_DIR / "fixtures" / "lint_overrides.toml").read_text())
    stated = {
        (o["provider"], o["instance"])
        for o in overrides.get("overrides", [])
        if o["rule"] == "nvlink-bandwidth"
    }
    checked = 0
    for link in links:
        gpu = link.instance.gpu
        if (link.instance.provider.slug, link.instance.slug) in stated:
            continue
        if link.technology == "nvlink" and gpu.nvlink_generation:
            assert (
                link.bandwidth_gbytes_per_s == facts.NVLINK_GBYTES_PER_GPU[gpu.nvlink_generation]
            ), f"{link.instance}: {link.bandwidth_gbytes_per_s} GB/s on {gpu.slug}"
            checked += 1
        if link.technology == "infinity-fabric":
            assert link.bandwidth_gbytes_per_s == facts.INFINITY_FABRIC_GBYTES_PER_GPU[gpu.slug]
    assert checked
    h100 = links.filter(instance__gpu__slug="h100-sxm", technology="nvlink")
    assert h100.exists()
    assert set(h100.values_list("bandwidth_gbytes_per_s", flat=True)) == {facts.NVLINK[4].value}

    ib_ports = set(
        Fabric.objects.filter(
            technology="infiniband", port_speed_gbits_per_s__isnull=False
        ).values_list("port_speed_gbits_per_s", flat=True)
    )
    assert ib_ports
    assert ib_ports <= set(facts.INFINIBAND_GBITS_PER_PORT.values())


def test_the_gpus_named_for_each_nvlink_generation_have_that_generation(shipped):
    from offerings.models import GpuModel

    for generation, names in facts.NVLINK_GPUS.items():
        for name in names:
            gpus = GpuModel.objects.filter(name__icontains=name, vendor="nvidia")
            generations = set(gpus.values_list("nvlink_generation", flat=True)) - {None}
            assert generations <= {generation}, f"{name}: {generations}"


def test_the_catalog_lint_checks_against_the_same_figures():
    assert lint_catalog.NVLINK_GBYTES_PER_GPU is facts.NVLINK_GBYTES_PER_GPU
    assert lint_catalog.INFINITY_FABRIC_GBYTES_PER_GPU is facts.INFINITY_FABRIC_GBYTES_PER_GPU


# -- the FAQ --------------------------------------------------------------------------------------


BRIEF_QUESTIONS = {
    "do-i-need-both",
    "single-gpu-job",
    "why-interconnect-matters",
    "every-multi-gpu-nvlink",
    "efa-roce-infiniband",
    "how-many-nodes",
    "slow-multi-node",
}


def test_the_faq_asks_the_brief_s_questions_in_both_languages():
    english = [entry.slug for entry in faq.FAQ["en"]]
    chinese = [entry.slug for entry in faq.FAQ["zh-hans"]]
    assert english == chinese
    assert len(set(english)) == len(english)
    assert set(english) >= BRIEF_QUESTIONS
    for entries in faq.FAQ.values():
        slow = next(e for e in entries if e.slug == "slow-multi-node")
        answer = " ".join(slow.answer)
        for needle in ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NET/Socket", "aws-ofi-nccl"):
            assert needle in answer


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_faq_json_ld_parses_and_says_what_the_page_shows(client, shipped, language):
    root = parse(get(client, LANGUAGES[language] + "/faq/").content.decode())
    scripts = [s for s in root.iter("script") if s.attrs.get("type") == "application/ld+json"]
    assert len(scripts) == 1
    data = json.loads("".join(c for c in scripts[0].children if isinstance(c, str)))
    assert data["@context"] == "https://schema.org"
    assert data["@type"] == "FAQPage"
    assert data["inLanguage"] == language
    visible = [
        (
            next(entry.iter("h2")).text(),
            next(entry.iter("div", "faq-answer")).text(),
        )
        for entry in root.iter("section", "faq-entry")
    ]
    in_jsonld = [
        (
            item["name"],
            parse(item["acceptedAnswer"]["text"]).text(),
        )
        for item in data["mainEntity"]
    ]
    assert all(item["@type"] == "Question" for item in data["mainEntity"])
    assert len(visible) == len(faq.FAQ[language])
    # The buyer's first four questions are marked up on /nvlink-infiniband/, where they are asked.
    seed = {e.question for e in faq.FAQ[language] if e.slug in faq.SEED_PAGE_SLUGS}
    assert len(seed) == 4
    assert [(q, " ".join(a.replace("\xa0", " ").split())) for q, a in in_jsonld] == [
        (q, " ".join(a.replace("\xa0", " ").split())) for q, a in visible if q not in seed
    ]
    # Links inside the JSON-LD answers are absolute: it is read outside the page.
    for item in data["mainEntity"]:
        for anchor in parse(item["acceptedAnswer"]["text"]).iter("a"):
            assert anchor.attrs["href"].startswith(("http://testserver/", "https://"))


def test_the_json_ld_cannot_close_its_script_element():
    from offerings.content.templatetags import ld_json

    text = ld_json({"text": "</script><script>alert(1)</script> & <b>"})
    assert "<" not in text
    assert ">" not in text
    assert json.loads(text)["text"].startswith("</script>")


def test_the_faq_markup_escapes_text_and_refuses_unknown_targets(db):
    with translation.override("en"):
        rendered = render_markup(
            "a <b> & `x<y>` [src](https://example.com/a?b=1&c=2) {nvlink4}", counts={}
        )
    assert "&lt;b&gt; &amp;" in rendered
    assert "<code>x&lt;y&gt;</code>" in rendered
    assert 'href="https://example.com/a?b=1&amp;c=2" rel="external">src</a>' in rendered
    assert f'href="{facts.H100_PAGE}" rel="external">900\xa0GB/s</a>' in rendered
    with pytest.raises(ValueError, match="unknown link target"):
        render_markup("[x](ftp://example.com)", counts={})


# -- SEO: titles, descriptions, canonical, hreflang, Open Graph ----------------------------------


def head_of(client, path: str) -> dict:
    root = parse(get(client, path).content.decode())
    head = next(root.iter("head"))
    metas = {
        m.attrs.get("name") or m.attrs.get("property"): m.attrs.get("content")
        for m in head.iter("meta")
    }
    links = [
        (link.attrs.get("rel"), link.attrs.get("hreflang"), link.attrs["href"])
        for link in head.iter("link")
    ]
    return {"title": next(head.iter("title")).text(), "meta": metas, "links": links}


@pytest.mark.parametrize("page", ["/", *CONTENT_PAGES])
def test_each_page_has_its_title_description_canonical_alternates_and_open_graph(client, db, page):
    heads = {language: head_of(client, prefix + page) for language, prefix in LANGUAGES.items()}
    base = "http://testserver"
    for language, head in heads.items():
        own = base + LANGUAGES[language] + page
        assert ("canonical", None, own) in head["links"]
        assert ("alternate", "en", base + page) in head["links"]
        assert ("alternate", "zh-Hans", base + "/zh-hans" + page) in head["links"]
        assert ("alternate", "x-default", base + page) in head["links"]
        meta = head["meta"]
        assert meta["description"]
        assert meta["og:title"] == head["title"]
        assert meta["og:description"] == meta["description"]
        assert meta["og:url"] == own
        assert meta["og:locale"] == {"en": "en_US", "zh-hans": "zh_CN"}[language]
    assert heads["en"]["title"] != heads["zh-hans"]["title"]
    assert heads["en"]["meta"]["description"] != heads["zh-hans"]["meta"]["description"]


def test_the_canonical_url_drops_the_query_and_uses_site_url_when_set(client, db, settings):
    head = head_of(client, "/?nvlink=true&utm_source=x")
    assert ("canonical", None, "http://testserver/") in head["links"]
    settings.SITE_URL = "https://gpucatalog.example"
    head = head_of(client, "/zh-hans/faq/")
    assert ("canonical", None, "https://gpucatalog.example/zh-hans/faq/") in head["links"]


# -- about the data -----------------------------------------------------------------------------


def test_the_about_page_names_sources_freshness_and_the_reference_rate(
    client, shipped, django_assert_max_num_queries
):
    rate = ExchangeRate.objects.create(
        currency="CNY",
        rate_date=date(2031, 1, 15),
        usd_per_unit=Decimal("0.1400000000"),
        source_url="https://rates.example/cny",
    )
    with django_assert_max_num_queries(6):
        english = get(client, "/about/data/").content.decode()
    chinese = get(client, "/zh-hans/about/data/").content.decode()
    assert "Jan. 15, 2031" in english
    assert "2031年1月15日" in chinese
    assert rate.source_url in english
    assert "Prices are references, not quotes" in english
    assert "Corrections welcome" in english
    assert "price API" in english
    provider = Offer.objects.current().filter(basis="provider").count()
    assert (
        f"{provider} ({round(100 * provider / Offer.objects.current().count())}%) are stated"
        in english
    )
    visible = InstanceType.objects.visible().count()
    assert f"lists {visible} multi-GPU instance types" in english


def test_the_about_page_words_where_each_provider_s_prices_come_from():
    from offerings.content.templatetags import price_origins

    with translation.override("en"):
        origins = [
            "scraper::provider",
            "curator::provider",
            "catalog::provider",
            "catalog::third-party",
            "scraper:skypilot:third-party",
        ]
        assert price_origins(origins) == (
            "curated from documentation, curated from a third party (SkyPilot's catalog or a "
            "post quoting the provider), a curator, provider API, SkyPilot's public catalog "
            "(third party), files read at their commits"
        )
        assert price_origins([]) == "no prices yet"
    with translation.override("zh-hans"):
        assert price_origins([]) == "暂无价格"


# -- sitemap and robots.txt -----------------------------------------------------------------------

SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
XHTML = "{http://www.w3.org/1999/xhtml}"


def sitemap_of(client) -> tuple[set[str], list[ET.Element]]:
    response = client.get("/sitemap.xml")
    assert response.status_code == 200
    root = ET.fromstring(response.content)
    urls = root.findall(f"{SITEMAP}url")
    return {u.findtext(f"{SITEMAP}loc") for u in urls}, urls


def test_the_sitemap_lists_every_public_page_in_both_languages(client, shipped):
    hidden = InstanceType.objects.visible().first()
    hidden.is_hidden = True
    hidden.save()
    locations, urls = sitemap_of(client)
    base = "http://testserver"
    pages = ["/", *CONTENT_PAGES]
    pages += [
        reverse("offerings:instance-detail", kwargs={"provider": i.provider.slug, "slug": i.slug})
        for i in InstanceType.objects.visible().select_related("provider")
    ]
    if route_exists("offerings:gpu-detail", "x"):
        pages += [
            f"/gpus/{slug}/"
            for slug in InstanceType.objects.visible().values_list("gpu__slug", flat=True)
        ]
    if route_exists("offerings:provider-detail", "x"):
        pages += [
            f"/providers/{slug}/"
            for slug in InstanceType.objects.visible().values_list("provider__slug", flat=True)
        ]
    expected = {base + page for page in pages} | {base + "/zh-hans" + page for page in pages}
    assert expected <= locations
    hidden_path = f"/instances/{hidden.provider.slug}/{hidden.slug}/"
    assert base + hidden_path not in locations
    assert not any("/admin/" in loc or "/api/" in loc for loc in locations)
    for url in urls:
        alternates = {a.get("hreflang") for a in url.findall(f"{XHTML}link")}
        assert alternates == {"en", "zh-hans", "x-default"}


def test_every_page_in_the_sitemap_answers(client, shipped):
    locations, _urls = sitemap_of(client)
    instance_pages = sorted(loc for loc in locations if "/instances/" in loc)
    others = sorted(set(locations) - set(instance_pages))
    assert len(others) >= 2 * (1 + len(CONTENT_PAGES))
    for location in [*others, *instance_pages[:6], *instance_pages[-6:]]:
        path = location.removeprefix("http://testserver")
        assert client.get(path).status_code == 200, path


def test_every_parameterless_public_route_is_in_the_sitemap_or_named_as_left_out(client, db):
    locations, _urls = sitemap_of(client)
    offerings_names = [
        f"offerings:{name}"
        for name in get_resolver().namespace_dict["offerings"][1].reverse_dict
        if isinstance(name, str)
    ]
    for name in offerings_names:
        if name in NOT_IN_SITEMAP or not route_exists(name):
            continue  # takes arguments, or is not a page of its own
        assert "http://testserver" + reverse(name) in locations, name


def test_robots_txt_allows_pages_keeps_out_admin_and_api_and_names_the_sitemap(client, db):
    response = client.get("/robots.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    lines = response.content.decode().splitlines()
    assert lines[0] == "User-agent: *"
    assert "Allow: /" in lines
    assert "Disallow: /admin/" in lines
    assert "Disallow: /api/" in lines
    assert "Sitemap: http://testserver/sitemap.xml" in lines
    assert client.get("/zh-hans/robots.txt").status_code == 404  # unprefixed only
    assert client.get("/zh-hans/sitemap.xml").status_code == 404


def test_the_about_page_reports_the_dated_share_and_never_calls_a_replay_a_refresh(client, catalog):
    """/about/data/ said "Last refresh today · Succeeded" beside "Newest price read: unknown":
    the run was a replay."""
    from django.utils import timezone

    from offerings.models import Offer, Provider, ScrapeRun

    Offer.objects.filter(pk=Offer.objects.order_by("pk").first().pk).update(observed_at=None)
    current = Offer.objects.filter(is_active=True, instance__is_hidden=False)
    dated = current.filter(observed_at__isnull=False).count()
    aws = Provider.objects.get(slug="aws")
    now = timezone.now()
    ScrapeRun.objects.create(
        provider=aws,
        started_at=now,
        finished_at=now,
        status="succeeded",
        replay_of="tests/providers/recordings/aws",
    )
    body = client.get("/about/data/").content.decode()
    assert f"Of the {current.count()} current prices, {dated} (" in body
    assert "not refreshed from an API yet" in body  # the replay is no refresh
    # Each provider's newest date stands beside how many of its prices have one at all.
    listed = current.filter(instance__provider=aws, instance__is_active=True)
    aws_dated = listed.filter(observed_at__isnull=False).count()
    assert f"{aws_dated} of {listed.count()}" in body
    page = client.get("/providers/aws/").content.decode()
    assert "a replay of the recording tests/providers/recordings/aws, not a refresh" in page
