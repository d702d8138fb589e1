"""Issue 32, item 2: the Markdown twin of every page, `/<path>.md`, in both languages.

The twin is the page's own rendering converted (offerings/agents/twins.py): the same facts with
their bases, sources and dates, unknown as unknown, tables as Markdown tables, links absolute on
SITE_URL, no HTML. The HTML page links it with `<link rel="alternate" type="text/markdown">`.
"""

from __future__ import annotations

import re

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

SITE = "https://gpucatalog.example"
PAGES = {
    "instances/aws/p5-48xlarge": "/instances/aws/p5-48xlarge/",
    "gpus/h100-sxm": "/gpus/h100-sxm/",
    "providers/aws": "/providers/aws/",
    "nvlink-infiniband": "/nvlink-infiniband/",
    "faq": "/faq/",
    "learn/nvlink-vs-infiniband": "/learn/nvlink-vs-infiniband/",
    "about/data": "/about/data/",
    "providers": "/providers/",
    "data": "/data/",
    "index": "/",
}
# An HTML tag; a Markdown autolink (`<https://...>`) is not one.
TAG = re.compile(r"<(?!https?://)/?[a-zA-Z][a-zA-Z0-9-]*(\s[^>]*)?/?>")


def twin(client, path: str):
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    return response.content.decode()


@override_settings(SITE_URL=SITE)
@pytest.mark.parametrize("prefix", ["", "/zh-hans"])
@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_has_a_markdown_twin_without_html(client, shipped, prefix, name):
    text = twin(client, f"{prefix}/{name}.md")
    assert not TAG.search(text), TAG.search(text).group(0)
    assert re.search(r"(?m)^# ", text)  # the page's heading
    for url in re.findall(r"\]\(([^)]+)\)", text):
        assert url.startswith(("https://", "http://", "mailto:")), url  # absolute
    page = f"{SITE}{prefix}{PAGES[name]}"
    assert text.rstrip().endswith(f"<{page}>")
    # and the page links its twin
    html = client.get(f"{prefix}{PAGES[name]}").content.decode()
    alternate = f'<link rel="alternate" type="text/markdown" href="{SITE}{prefix}/{name}.md'
    assert re.search(re.escape(alternate) + r'(\?[^"]*)?">', html)  # with a preset's query


@override_settings(SITE_URL=SITE)
def test_an_instance_twin_carries_each_fact_with_its_basis_source_and_date(client, shipped):
    text = twin(client, "/instances/aws/p5-48xlarge.md")
    assert "# Amazon Web Services `p5.48xlarge`" in text
    assert "stated by Amazon Web Services" in text  # a basis
    assert "follows from the NVIDIA HGX H100 8-GPU specification" in text  # a platform rule
    assert "(https://docs.aws.amazon.com/" in text or "<https://docs.aws.amazon.com/" in text
    assert re.search(r"checked 20\d\d-\d\d-\d\d", text)  # a date
    assert "unknown" in text  # what no source states
    assert "## Prices" in text
    assert "Report a correction" not in text  # a form, not a fact
    priced = twin(client, "/instances/nebius/gpu-h100-sxm-8gpu-128vcpu-1600gb.md")
    assert re.search(r"(?m)^\| Region \| Kind \|", priced)  # the prices as a Markdown table
    assert "SkyPilot's catalog" in priced
    assert "third party" in priced  # the price's basis


@override_settings(SITE_URL=SITE)
def test_a_chinese_twin_is_in_chinese_with_its_prices_in_cny(client, shipped):
    text = twin(client, "/zh-hans/instances/aws/p5-48xlarge.md")
    assert "来源" in text
    assert "¥" in text
    assert "stated by" not in text


def test_a_twin_takes_the_pages_query(client, shipped):
    text = twin(client, "/compare.md?ids=aws/p5-48xlarge,aws/p4d-24xlarge")
    assert "p5.48xlarge" in text
    assert "p4d.24xlarge" in text


def test_a_twin_redirects_where_its_page_does_and_is_missing_where_it_is(client, shipped):
    moved = client.get("/instances/verda/x.md")
    assert moved.status_code == 301
    assert moved["Location"] == "/instances/datacrunch/x.md"
    for path in (
        "/instances/aws/no-such-type.md",
        "/llms.txt.md",  # not a page
        "/instances/aws/p5-48xlarge/report.md",  # a form's POST target
        "/admin.md",
        "/.md",
        "/../settings.md",
    ):
        assert client.get(path).status_code == 404, path


def test_a_twins_page_errors_keep_their_status_and_an_export_is_not_a_page(client, shipped):
    bad = client.get("/index.md?gpu_count_min=-5")
    assert bad.status_code == 400
    assert bad["Content-Type"] == "text/markdown; charset=utf-8"
    assert "gpu_count_min" in bad.content.decode() or "GPUs" in bad.content.decode()
    assert client.get("/index.md?format=csv").status_code == 404


@override_settings(SITE_URL=SITE)
def test_a_page_rendered_for_its_twin_still_links_its_twin(client, shipped):
    """The page's view runs for the twin first and its HTML is cached: the cached page must
    still name its twin."""
    from django.core.cache import cache

    from offerings.models import GpuModel

    # A write of its own: a data version no other test's cached pages were stored under.
    GpuModel.objects.filter(slug="h100-sxm").update(architecture="Hopper")
    try:
        with override_settings(PAGE_CACHE_SECONDS=300):  # not the `settings` fixture: it
            twin(client, "/gpus/h100-sxm.md")  # would restore this test's SITE_URL after it
            html = client.get("/gpus/h100-sxm/").content.decode()
        assert f'type="text/markdown" href="{SITE}/gpus/h100-sxm.md"' in html
    finally:
        cache.clear()


def test_a_twin_without_site_url_keeps_paths_not_the_host(client, shipped, settings):
    settings.SITE_URL = None
    text = twin(client, "/gpus/h100-sxm.md")
    assert "testserver" not in text
    assert "](/instances/" in text


@pytest.mark.parametrize(
    ("path", "chrome"),
    [
        ("/index.md", ["Jump to the filters", "Badge borders", "Compare "]),
        ("/estimate.md?params_b=70&mode=train-fsdp", ["Jump to the results"]),
        ("/instances/aws/p5-48xlarge.md", ["Report a correction"]),
    ],
)
def test_a_twin_leaves_out_what_only_a_browser_uses(client, shipped, path, chrome):
    """Jump links, compare ticks, the badge legend and forms are for the HTML page alone."""
    text = twin(client, path)
    for words in chrome:
        assert words not in text
