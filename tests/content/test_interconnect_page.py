"""`/nvlink-infiniband/`: the filter page's table preset to `interconnect=nvlink-or-infiniband`, adjustable like
the filter page, a badge saying which of the two each row has, the account of both, the page's FAQ
with its JSON-LD, and its place in the navigation, the presets and the sitemap (issue 20, item 15).
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.http import QueryDict
from django.urls import reverse
from django.utils import translation

from offerings.content import interconnect_faq
from offerings.content.markup import TABLE_LINKS, count_matches, table_url
from offerings.table.parameters import parse_listing_query
from offerings.table.presets import PRESETS
from tests.content.test_content import (
    FIGURE,
    LANGUAGES,
    SITEMAP,
    get,
    parse,
    sitemap_of,
    visible_text,
)
from tests.test_i18n import english_leaks

pytestmark = pytest.mark.usefixtures("lazy_loads_raise")

PAGE = "/nvlink-infiniband/"
# The shared catalog fixture (tests/conftest.py): which of the two each row is known to have.
SEED = {
    "ib.8x": "NVLink + InfiniBand",
    "efa.8x": "NVLink + RDMA",
    "tcpx-8g": "NVLink",
    "2A6000.20V": "NVLink",
}


def rows(body: str) -> dict[str, str]:
    """Instance name -> the text of its interconnect badge ('' when it has none)."""
    found = {}
    for row in parse(body).iter("tr"):
        names = [code.text() for code in row.iter("code")]
        if not names:
            continue
        badges = [span.text() for span in row.iter("span", "has")]
        found[names[0]] = badges[0] if badges else ""
    return found


def results_section(body: str) -> str:
    start = body.index('<section id="results"')
    return body[start : body.index("</section>", start)]


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_page_lists_exactly_the_rows_with_nvlink_or_infiniband_each_with_its_badge(
    client, catalog, language
):
    response = get(client, LANGUAGES[language] + PAGE)
    body = response.content.decode()
    assert response.headers["Content-Language"] == language
    assert rows(results_section(body)) == SEED
    assert len(SEED) == count_matches("interconnect=nvlink-or-infiniband")
    assert "HX-Request" in response["Vary"]


def test_the_badge_names_infinity_fabric_on_amd_rows(client, catalog):
    link = catalog["ib"].gpu_link
    link.technology = "infinity-fabric"
    link.save()
    assert rows(results_section(get(client, PAGE).content.decode()))["ib.8x"] == (
        "Infinity Fabric + InfiniBand"
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("interconnect=both", {"ib.8x", "efa.8x"}),
        ("interconnect=nvlink", {"ib.8x", "efa.8x", "tcpx-8g", "2A6000.20V"}),
        ("interconnect=rdma", {"ib.8x", "efa.8x"}),
        ("interconnect=neither", {"pcie.4x"}),
        ("gpu=h100-sxm", {"ib.8x", "efa.8x", "tcpx-8g"}),  # the preset stays, the GPU narrows it
        ("fabric=efa", {"efa.8x"}),
        ("sort=-price_gpu_hour&interconnect=", set(SEED)),  # an empty choice is the preset
    ],
)
def test_the_table_is_adjustable_like_the_filter_page(client, catalog, query, expected):
    body = get(client, f"{PAGE}?{query}").content.decode()
    assert set(rows(results_section(body))) == expected


def test_every_link_the_table_builds_names_the_preset(client, catalog):
    """Sort headers, exports, the API link and the compare link keep the preset."""
    body = get(client, f"{PAGE}?compare={catalog['ib'].pk}&compare={catalog['efa'].pk}").content
    root = parse(body.decode())
    results = next(root.iter("section", "results"))
    hrefs = [a.attrs["href"] for a in results.iter("a") if "href" in a.attrs]
    sort_links = [h for h in hrefs if "sort=" in h]
    assert sort_links
    assert all("interconnect=nvlink-or-infiniband" in h for h in sort_links)
    for label in ("CSV", "JSON", "API"):
        link = next(a for a in results.iter("a") if a.text() == label)
        assert "interconnect=nvlink-or-infiniband" in link.attrs["href"], label
    compare = next(h for h in hrefs if h.startswith("/compare/"))
    assert "interconnect%3Dnvlink-or-infiniband" in compare


def test_the_csv_export_holds_the_page_s_rows(client, catalog):
    response = client.get(f"{PAGE}?format=csv")
    assert response.status_code == 200
    names = {line["name"] for line in csv.DictReader(io.StringIO(response.content.decode()))}
    assert names == set(SEED)


def test_the_htmx_fragment_is_the_filter_page_s_results_with_the_choice_out_of_band(
    client, catalog
):
    response = client.get(f"{PAGE}?interconnect=both&gpu=h100-sxm", headers={"HX-Request": "true"})
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body
    assert set(rows(results_section(body))) == {"ib.8x", "efa.8x"}
    choice = next(parse(body).iter("nav", "interconnect-choice"))
    assert choice.attrs["hx-swap-oob"] == "true"
    links = {a.text(): a for a in choice.iter("a")}
    assert links["both NVLink and RDMA"].attrs["aria-current"] == "true"
    assert "gpu=h100-sxm" in links["NVLink"].attrs["href"]  # a choice keeps the other filters
    assert "interconnect=nvlink" in links["NVLink"].attrs["href"]


def test_the_form_is_the_filter_page_s_and_submits_to_this_page(client, catalog):
    for prefix in LANGUAGES.values():
        root = parse(get(client, prefix + PAGE).content.decode())
        form = next(root.iter("form", "filters"))
        assert form.attrs["action"] == form.attrs["hx-get"] == prefix + PAGE
        select = next(s for s in form.iter("select") if s.attrs.get("name") == "interconnect")
        options = list(select.iter("option"))
        assert [o.attrs["value"] for o in options if "selected" in o.attrs] == [
            "nvlink-or-infiniband"
        ]
    # On the filter page itself the form still submits to the filter page, "any" first.
    form = next(parse(get(client, "/").content.decode()).iter("form", "filters"))
    assert form.attrs["action"] == "/"
    select = next(s for s in form.iter("select") if s.attrs.get("name") == "interconnect")
    assert next(select.iter("option")).text() == "any"


def test_the_page_s_context_has_everything_the_filter_page_s_partials_read(client, catalog):
    """The page builds the filter page's context itself: it must not fall behind that view."""
    listing = client.get("/?interconnect=either")
    page = client.get(PAGE)
    missing = set(listing.context.keys()) - set(page.context.keys())
    assert not missing, f"{PAGE} lacks {sorted(missing)} that the filter page passes"


# -- the text, the FAQ and its JSON-LD ---------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_part_links_to_the_full_explainer(client, catalog, language):
    prefix = LANGUAGES[language]
    root = parse(get(client, prefix + PAGE).content.decode())
    learn = prefix + "/learn/nvlink-vs-infiniband/"
    for part in ("what-each-does", "who-needs-which", "before-renting", "cost", "questions"):
        section = next(s for s in root.iter("section") if s.attrs.get("id") == part)
        hrefs = [a.attrs.get("href", "") for a in section.iter("a")]
        assert any(h.startswith(learn) for h in hrefs), part
    intro = next(root.iter("header", "page-intro"))
    assert any(a.attrs.get("href") == learn for a in intro.iter("a"))


def test_the_text_is_written_per_language(client, catalog):
    english = get(client, PAGE).content.decode()
    chinese = get(client, "/zh-hans" + PAGE).content.decode()
    assert "<h1>Cloud GPU providers with NVLink or InfiniBand</h1>" in english
    assert "<h1>提供 NVLink 或 InfiniBand 的 GPU 云厂商</h1>" in chinese
    assert "What each interconnect does" not in chinese


def test_the_faq_asks_the_buyer_s_four_first_questions_then_none_of_the_site_faq():
    from offerings.content import faq

    english = [entry.slug for entry in interconnect_faq.FAQ["en"]]
    assert english == [entry.slug for entry in interconnect_faq.FAQ["zh-hans"]]
    assert len(set(english)) == len(english) >= 9
    assert english[:4] == [
        "do-i-need-both",
        "single-gpu-job",
        "why-interconnect-matters",
        "every-multi-gpu-nvlink",
    ]
    site = {entry.question for entries in faq.FAQ.values() for entry in entries}
    page = [e.question for es in interconnect_faq.FAQ.values() for e in es]
    assert len(site & set(page)) == 8  # the four, in both languages
    assert "Will my single-GPU job run faster on an instance with NVLink or InfiniBand?" in page


def test_the_four_first_questions_are_marked_up_on_this_page_and_not_on_the_faq(client, catalog):
    def marked_up(path: str) -> list[str]:
        root = parse(get(client, path).content.decode())
        script = next(
            s for s in root.iter("script") if s.attrs.get("type") == "application/ld+json"
        )
        data = json.loads("".join(c for c in script.children if isinstance(c, str)))
        return [item["name"] for item in data["mainEntity"]]

    question = "Do I need both NVLink and InfiniBand?"
    assert question in marked_up(PAGE)
    assert question not in marked_up("/faq/")
    assert question in visible_text(parse(get(client, "/faq/").content.decode()))


def test_an_infiniband_node_without_nvlink_is_listed_and_an_efa_one_only_when_widened(
    client, catalog
):
    pcie = catalog["pcie"]
    pcie.fabric.technology = "infiniband"
    pcie.fabric.save()
    assert rows(results_section(get(client, PAGE).content.decode()))["pcie.4x"] == "InfiniBand"
    pcie.fabric.technology = "efa"
    pcie.fabric.save()
    assert "pcie.4x" not in rows(results_section(get(client, PAGE).content.decode()))
    widened = rows(results_section(get(client, PAGE + "?interconnect=either").content.decode()))
    assert widened["pcie.4x"] == "RDMA"


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_cost_section_says_how_old_the_table_s_prices_are(client, catalog, language):
    from offerings.models import Offer

    seed = Offer.objects.current().filter(instance__name__in=SEED)
    seed.filter(instance=catalog["tcpx"]).update(observed_at=None)  # a source showing no date
    dated = seed.exclude(observed_at=None)
    assert seed.count() > dated.count() > 0
    root = parse(get(client, LANGUAGES[language] + PAGE).content.decode())
    cost = next(s for s in root.iter("section") if s.attrs.get("id") == "cost")
    text = " ".join(cost.text().split())
    assert f" {len(SEED)} " in text
    assert f" {seed.values('instance').distinct().count()} " in text
    assert f" {seed.count()} " in text
    assert f" {dated.count()} " in text
    newest = max(dated.values_list("observed_at", flat=True)).date().isoformat()
    times = [t.attrs["datetime"] for t in cost.iter("time")]
    assert times[0] == newest
    hrefs = [a.attrs.get("href", "") for a in cost.iter("a")]
    assert any("price_kind=spot" in h and "interconnect=nvlink-or-infiniband" in h for h in hrefs)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_faq_json_ld_parses_and_says_what_the_page_shows(client, catalog, language):
    root = parse(get(client, LANGUAGES[language] + PAGE).content.decode())
    scripts = [s for s in root.iter("script") if s.attrs.get("type") == "application/ld+json"]
    assert len(scripts) == 1
    data = json.loads("".join(c for c in scripts[0].children if isinstance(c, str)))
    assert (data["@context"], data["@type"], data["inLanguage"]) == (
        "https://schema.org",
        "FAQPage",
        language,
    )
    visible = [
        (next(e.iter("h3")).text(), next(e.iter("div", "faq-answer")).text())
        for e in root.iter("section", "faq-entry")
    ]
    in_jsonld = [
        (item["name"], parse(item["acceptedAnswer"]["text"]).text()) for item in data["mainEntity"]
    ]
    assert len(visible) == len(interconnect_faq.FAQ[language])
    assert [(q, " ".join(a.replace("\xa0", " ").split())) for q, a in in_jsonld] == [
        (q, " ".join(a.replace("\xa0", " ").split())) for q, a in visible
    ]
    # The JSON-LD's links are absolute.
    for item in data["mainEntity"]:
        for href in re.findall(r'href="([^"]+)"', item["acceptedAnswer"]["text"]):
            assert href.startswith(("http://testserver/", "https://")), href


def test_the_text_states_only_figures_from_the_facts_module(client, catalog):
    from offerings.content import facts

    allowed = facts.allowed_bandwidths()
    for prefix in LANGUAGES.values():
        root = parse(get(client, prefix + PAGE).content.decode())
        for part in (next(root.iter("header", "page-intro")), next(root.iter("article"))):
            text = " ".join(part.text().replace("\xa0", " ").split())
            for number, unit in FIGURE.findall(text):
                assert int(number.replace(",", "")) in allowed[unit], f"{number} {unit}"


def test_the_table_links_are_known_views_with_rows(client, shipped):
    by_url = {}
    for language, prefix in LANGUAGES.items():
        with translation.override(language):
            by_url |= {table_url(slug): slug for slug in TABLE_LINKS}
        root = parse(get(client, prefix + PAGE).content.decode())
        links = list(root.iter("a", "table-link"))
        assert links
        for anchor in links:
            assert anchor.attrs["href"] in by_url, anchor.attrs["href"]
    for slug in ("interconnect-both", "nvlink-no-rdma", "rdma-no-nvlink", "nvlink-fabric-unknown"):
        assert count_matches(TABLE_LINKS[slug].query), slug


def test_the_page_runs_no_inline_script_and_has_no_style_attribute(client, catalog):
    for prefix in LANGUAGES.values():
        body = get(client, prefix + PAGE).content.decode()
        for script in re.findall(r"<script[^>]*>", body):
            assert "src=" in script or 'type="application/ld+json"' in script, script
        assert " style=" not in body
        assert " hx-on" not in body
        assert " onclick" not in body


def test_the_chinese_page_shows_no_english_interface_text(client, catalog):
    text = visible_text(parse(get(client, "/zh-hans" + PAGE).content.decode()))
    assert not english_leaks(text)


def test_the_page_answers_in_a_fixed_number_of_queries(
    client, catalog, django_assert_max_num_queries
):
    client.get(PAGE)  # the live counts of the table links are cached from here on
    with django_assert_max_num_queries(20):
        assert client.get(PAGE + "?interconnect=both&utm_source=x").status_code == 200


# -- navigation, presets, sitemap --------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/faq/", "/learn/nvlink-vs-infiniband/", PAGE])
def test_the_site_navigation_links_the_page_in_both_languages(client, catalog, path):
    for prefix in LANGUAGES.values():
        nav = next(parse(get(client, prefix + path).content.decode()).iter("nav", "site-nav"))
        links = {a.attrs["href"]: a for a in nav.iter("a")}
        assert prefix + PAGE in links
        if path == PAGE:
            assert links[prefix + PAGE].attrs.get("aria-current") == "page"


def test_a_preset_on_the_filter_page_opens_the_page(client, catalog):
    preset = next(p for p in PRESETS if p.page == "offerings:nvlink-infiniband")
    assert parse_listing_query(QueryDict(preset.query)).is_valid
    for prefix in LANGUAGES.values():
        root = parse(get(client, prefix + "/").content.decode())
        presets = next(root.iter("nav", "presets"))
        link = next(a for a in presets.iter("a") if a.attrs["data-preset"] == preset.slug)
        assert link.attrs["href"] == f"{prefix}{PAGE}?interconnect=nvlink-or-infiniband"
        others = [a for a in presets.iter("a") if a is not link]
        assert all(a.attrs["href"].startswith("?") for a in others)


def test_the_sitemap_lists_the_page_in_both_languages(client, catalog):
    locations, urls = sitemap_of(client)
    assert {"http://testserver" + PAGE, "http://testserver/zh-hans" + PAGE} <= locations
    entry = next(u for u in urls if u.findtext(f"{SITEMAP}loc") == "http://testserver" + PAGE)
    assert entry is not None
    assert reverse("offerings:nvlink-infiniband") == PAGE


def test_the_canonical_url_is_the_bare_page(client, catalog):
    root = parse(get(client, PAGE + "?interconnect=both").content.decode())
    canonical = next(link for link in root.iter("link") if link.attrs.get("rel") == "canonical")
    assert canonical.attrs["href"] == "http://testserver" + PAGE
