"""Every page type shows the hostile catalog as inert text in real Chromium: no script runs, no
CSP violation, no injected handler or script element, and no link that is not http(s)."""

from __future__ import annotations

import contextlib

import pytest
from django.urls import NoReverseMatch, reverse

from offerings.models import CorrectionReport, InstanceType, Region, SkuReview
from tests.security.conftest import csp_violations
from tests.security.hostile import PAYLOAD, ingest_hostile_catalog

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Elements a payload could have added, and every URL-bearing attribute on the page.
DOM_AUDIT = """
() => {
  const problems = [];
  for (const el of document.querySelectorAll("*")) {
    for (const attr of el.attributes) {
      if (attr.name.startsWith("on") || attr.name.startsWith("hx-on")) {
        problems.push(`${el.tagName} ${attr.name}`);
      }
    }
  }
  for (const el of document.querySelectorAll("script")) {
    const kind = (el.getAttribute("type") || "").toLowerCase();
    if (!el.src && kind !== "application/ld+json") problems.push("inline script element");
  }
  for (const el of document.querySelectorAll("iframe, object, embed, frame")) {
    problems.push(`${el.tagName} element`);
  }
  const urls = [];
  for (const el of document.querySelectorAll("a[href], area[href], link[href]")) urls.push(el.href);
  for (const el of document.querySelectorAll("[src]")) urls.push(el.src);
  for (const el of document.querySelectorAll("form[action]")) urls.push(el.action);
  for (const url of urls) {
    let protocol = "unparsable";
    try { protocol = new URL(url, document.baseURI).protocol; } catch (error) {}
    if (!["http:", "https:", "mailto:"].includes(protocol)) problems.push(`link ${url}`);
  }
  return {problems, links: urls.length, pwned: typeof window.__pwned !== "undefined"};
}
"""


def hostile_paths(hostile: dict) -> list[str]:
    instance: InstanceType = hostile["instance"]
    other = (
        InstanceType.objects.filter(provider=instance.provider, is_hidden=False)
        .exclude(pk=instance.pk)
        .first()
    )
    region = Region.objects.get(provider__slug="azure", code__startswith='">')
    review = SkuReview.objects.get(sku=f"Standard_ND96{PAYLOAD}_v5")
    report = CorrectionReport.objects.get()
    detail = f"/instances/azure/{instance.slug}/"
    paths = [
        "/",
        "/?q=ND96isr",
        "/?provider=azure&sort=-gpu_count",
        "/zh-hans/?provider=azure",
        detail,
        f"/zh-hans{detail}",
        f"/compare/?ids=azure/{instance.slug},azure/{other.slug}",
        f"/gpus/{instance.gpu.slug}/",
        "/providers/azure/",
        "/feeds/price-changes/",
        "/feeds/price-changes/?provider=azure",
        "/api/instances?provider=azure",
        "/admin/offerings/instancetype/",
        "/admin/offerings/instancetype/?q=script",
        f"/admin/offerings/instancetype/{instance.pk}/change/",
        "/admin/offerings/offer/",
        "/admin/offerings/offer/?q=azure",
        "/admin/offerings/scraperun/",
        f"/admin/offerings/scraperun/{hostile['run'].pk}/change/",
        "/admin/offerings/skureview/",
        f"/admin/offerings/skureview/{review.pk}/change/",
        "/admin/offerings/correctionreport/",
        f"/admin/offerings/correctionreport/{report.pk}/change/",
        "/admin/offerings/region/",
        f"/admin/offerings/region/{region.pk}/change/",
        "/admin/offerings/provider/",
        "/admin/offerings/gpumodel/",
        "/admin/offerings/priceobservation/",
    ]
    with contextlib.suppress(NoReverseMatch):  # the estimator page, where it exists
        paths.append(reverse("offerings:estimate") + "?params_b=70&mode=train-fsdp")
    return paths


def test_hostile_scraped_strings_stay_inert_on_every_page_type(watched_page, curator):
    hostile = ingest_hostile_catalog()
    page = watched_page
    page.goto("/admin/login/?next=/admin/")
    page.fill("#id_username", "curator")
    page.fill("#id_password", "a-long-curator-passphrase")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")
    failures: dict[str, list] = {}
    for path in hostile_paths(hostile):
        response = page.goto(path)
        page.wait_for_load_state("load")
        problems = []
        if response is None or response.status >= 400:
            problems.append(f"status {response.status if response else None}")
        audit = page.evaluate(DOM_AUDIT)
        if audit["pwned"]:
            problems.append("a payload ran: window.__pwned is set")
        problems += audit["problems"]
        problems += csp_violations(page)
        if problems:
            failures[path] = problems
    assert not failures, "\n".join(f"{path}: {problems}" for path, problems in failures.items())
    assert page.dialogs == []
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_the_payload_is_shown_as_text_not_dropped(watched_page):
    hostile = ingest_hostile_catalog()
    page = watched_page
    page.goto(f"/instances/azure/{hostile['instance'].slug}/")
    assert PAYLOAD in page.text_content("h1")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    page.goto("/")
    page.hover(f"text={PAYLOAD}")  # a handler would fire on hover
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert csp_violations(page) == []
