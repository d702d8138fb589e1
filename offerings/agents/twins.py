"""The Markdown twin of a page: `/<path>.md` is the page at `/<path>/`, as Markdown.

One source of truth: the twin is the page itself. The view asks the page's own view for the
page (same language, same query, same data), takes its `<main>`, and converts it with
markdownify: headings, lists, definition lists and tables as Markdown, every fact with the
basis, source link and date the page shows beside it, "unknown" where the page says unknown.
What only a browser uses goes (forms, buttons, navigation, scripts, the phone copy of a
drawing); a drawing keeps its title and description as text. Links are absolute on SITE_URL
(left as paths where it is unset: no link is built from the Host header).
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from django.conf import settings
from django.utils.translation import gettext as _
from markdownify import MarkdownConverter

from offerings.web.caching import site_url

SUFFIX = ".md"
HOME = "index"  # `/index.md` is the twin of `/`
#: Routes of the `offerings` namespace that are not pages with a twin.
NOT_PAGES = frozenset({"instance-report", "llms-txt", "markdown-twin"})
DROPPED = ("script", "style", "form", "button", "input", "select", "textarea", "nav", "template")


def page_path(twin: str) -> str:
    """`instances/aws/p5-48xlarge` -> `instances/aws/p5-48xlarge/`; `index` -> `` (the home)."""
    return "" if twin == HOME else f"{twin}/"


def twin_path(page: str) -> str:
    """The twin of a page's path: `/zh-hans/faq/` -> `/zh-hans/faq.md`, `/` -> `/index.md`."""
    stripped = page.rstrip("/")
    if stripped in ("", *(f"/{code}" for code, _ in settings.LANGUAGES)):
        return f"{stripped}/{HOME}{SUFFIX}"
    return f"{stripped}{SUFFIX}"


def absolute(url: str, page: str = "/") -> str:
    """A link on SITE_URL: a path as it is, a query or fragment on `page` (the page's path);
    another site's link unchanged."""
    if url.startswith(("?", "#")):
        url = page + url
    if url.startswith("/") and not url.startswith("//"):
        return site_url(url)
    return url


def to_markdown(html: str, page: str, page_url: str) -> str:
    """The `<main>` of a rendered page at `page` (its path) as Markdown, ending with a link to
    the page itself (`page_url`, its query included)."""
    soup = BeautifulSoup(html, "html.parser")
    main = soup.find("main") or soup.body or soup
    for tag in main.find_all(DROPPED):
        tag.decompose()
    # `data-twin="skip"`: a part of the page that only serves the browser: a form (the
    # correction report), the table's compare ticks and their hints, the badge legend (the
    # twin writes each fact's basis out in words).
    for tag in main.select(".skip, [hidden], [aria-hidden=true], [data-twin=skip]"):
        tag.decompose()
    seen: set[str] = set()
    for svg in main.find_all("svg"):
        classes = svg.get("class") or []
        parts = [
            t.get_text(" ", strip=True) for t in svg.find_all(["title", "desc"], recursive=False)
        ]
        text = ": ".join(p for p in parts if p)
        if "narrow" in classes or not text or text in seen:  # the phone copy of a drawing
            svg.decompose()
            continue
        seen.add(text)
        svg.replace_with(soup.new_string(f"({text})"))
    for tag in main.find_all(["a", "img"]):
        attribute = "href" if tag.name == "a" else "src"
        if tag.get(attribute):
            tag[attribute] = absolute(tag[attribute], page)
    body = MarkdownConverter(heading_style="ATX", bullets="-", escape_misc=False).convert_soup(main)
    body = re.sub(r"[ \t]+\n", "\n", body)
    body = re.sub(r"\n{3,}", "\n\n", body).strip()
    link = f"<{page_url}>" if "://" in page_url else f"[{page_url}]({page_url})"
    return f"{body}\n\n{_('The page on the site')}: {link}\n"
