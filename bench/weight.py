"""Page weight, third-party requests and Lighthouse scores (issue 11, item 5).

    .venv/bin/python -m bench.weight [--quick] [--no-lighthouse]

Against gunicorn serving the benchmark database (static files collected, DEBUG off):

- the default filter page's HTML gzipped (level 6, what a proxy would send) under 20 KB;
- all JavaScript the measured pages load, gzipped (level 9, as WhiteNoise precompresses), under
  50 KB together;
- no third-party request: every resource URL in the HTML (and in the CSS it loads) is on the
  site's own host, and Chromium (Playwright) loading each page requests no other host;
- Lighthouse 12 (`npx --yes lighthouse@12`, Debian's Chromium via CHROME_PATH, headless, its
  default mobile profile) on the filter page, a detail page, the explainer and the estimator:
  performance, accessibility, best practices and SEO each at least 95.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import VAR, Report, kb, quick_mode, setup_django
from bench.server import Gunicorn

CHROMIUM = os.environ.get("CHROME_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
LIGHTHOUSE = os.environ.get("BENCH_LIGHTHOUSE", "lighthouse@12")
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""")


class Resources(HTMLParser):
    """Every URL the HTML makes a browser fetch (not plain links)."""

    LOADING_RELS = {
        "stylesheet",
        "preload",
        "modulepreload",
        "icon",
        "shortcut",
        "apple-touch-icon",
        "manifest",
        "prefetch",
        "preconnect",
        "dns-prefetch",
        "mask-icon",
    }

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str]] = []  # (kind, url)
        self.scripts: list[str] = []
        self.inline_script_bytes = 0
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            if a.get("src"):
                self.urls.append(("script", a["src"]))
                self.scripts.append(a["src"])
            elif a.get("type", "text/javascript") in ("text/javascript", "module", ""):
                self._in_script = True
        elif tag == "link" and a.get("href"):
            rels = set((a.get("rel") or "").lower().split())
            if rels & self.LOADING_RELS:
                self.urls.append((f"link {' '.join(sorted(rels))}", a["href"]))
        elif tag in ("img", "source", "iframe", "video", "audio", "embed", "track", "input"):
            for name in ("src", "poster"):
                if a.get(name):
                    self.urls.append((tag, a[name]))
            for name in ("srcset", "imagesrcset"):
                for part in (a.get(name) or "").split(","):
                    if part.strip():
                        self.urls.append((tag, part.strip().split()[0]))
        elif tag == "object" and a.get("data"):
            self.urls.append(("object", a["data"]))
        if a.get("style"):
            for match in CSS_URL.finditer(a["style"]):
                self.urls.append(("inline style", match.group(1) or match.group(2)))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.inline_script_bytes += len(data.encode())


def get(url: str) -> tuple[int, bytes, dict]:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def gz(data: bytes, level: int) -> int:
    return len(gzip.compress(data, compresslevel=level))


def third_party(url: str, base: str) -> bool:
    parts = urlsplit(urljoin(base + "/", url))
    if parts.scheme in ("data", "blob", "about", "javascript"):
        return False
    return parts.hostname not in (urlsplit(base).hostname, "localhost", "127.0.0.1")


def weigh(base: str, pages: dict[str, str], report: Report) -> dict[str, int]:
    statuses = {}
    scripts: dict[str, int] = {}
    styles: set[str] = set()
    external: list[str] = []
    for name, path in pages.items():
        status, body, _ = get(base + path)
        statuses[name] = status
        if status != 200:
            continue
        parser = Resources()
        parser.feed(body.decode("utf-8", "replace"))
        if name == "filter page":
            report.add(
                "default filter page HTML, gzipped",
                f"{kb(gz(body, 6))} ({kb(len(body))} raw)",
                "< 20 KB",
                gz(body, 6) < 20 * 1024,
            )
        for kind, url in parser.urls:
            if third_party(url, base):
                external.append(f"{name}: {kind} {url}")
            elif kind.startswith("link") and "stylesheet" in kind:
                styles.add(urljoin(base + path, url))
        for src in parser.scripts:
            full = urljoin(base + path, src)
            if full not in scripts and not third_party(full, base):
                _, js, _ = get(full)
                scripts[full] = gz(js, 9)
        if parser.inline_script_bytes:
            report.info(f"{name}: inline script bytes", str(parser.inline_script_bytes))
    for css_url in sorted(styles):
        _, css, _ = get(css_url)
        for match in CSS_URL.finditer(css.decode("utf-8", "replace")):
            url = match.group(1) or match.group(2)
            if third_party(urljoin(css_url, url), base):
                external.append(f"{css_url}: {url}")
    total = sum(scripts.values())
    listing = ", ".join(
        f"{urlsplit(u).path.rsplit('/', 1)[-1]} {kb(s)}" for u, s in scripts.items()
    )
    report.add(
        "all JavaScript the measured pages load, gzipped",
        f"{kb(total)} ({len(scripts)} file(s))",
        "< 50 KB",
        total < 50 * 1024,
        listing,
    )
    report.add(
        "third-party resource URLs in the HTML and CSS",
        str(len(external)),
        "0",
        not external,
        "; ".join(external[:5]),
    )
    return statuses


def browser_requests(base: str, pages: dict[str, str], report: Report) -> None:
    """Load each page in Chromium and note every host it requests."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        report.add("Chromium requests only the site's host", "playwright missing", "yes", False)
        return
    hosts: dict[str, set[str]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            for name, path in pages.items():
                context = browser.new_context()
                page = context.new_page()
                seen: set[str] = set()
                page.on("request", lambda request, seen=seen: seen.add(request.url))
                page.goto(base + path, wait_until="networkidle", timeout=120_000)
                page.mouse.wheel(0, 4000)  # lazy-loaded resources below the fold
                page.wait_for_timeout(500)
                hosts[name] = {u for u in seen if third_party(u, base)}
                context.close()
        finally:
            browser.close()
    outside = sorted({u for urls in hosts.values() for u in urls})
    report.add(
        "requests Chromium makes to other hosts (all measured pages)",
        str(len(outside)),
        "0",
        not outside,
        "; ".join(outside[:5]),
    )


def lighthouse(base: str, pages: dict[str, str], statuses: dict[str, int], report: Report) -> None:
    if not shutil.which("npx"):
        report.add("Lighthouse", "npx missing (install Node.js 20)", "scores >= 95", False)
        return
    env = dict(os.environ, CHROME_PATH=CHROMIUM)
    for name, path in pages.items():
        if statuses.get(name) != 200:
            report.add(
                f"Lighthouse, {name}",
                f"missing (HTTP {statuses.get(name)})",
                "each >= 95",
                False,
                path,
            )
            continue
        out = VAR / f"lighthouse-{re.sub(r'[^a-z0-9]+', '-', name)}.json"
        command = [
            "npx",
            "--yes",
            LIGHTHOUSE,
            base + path,
            "--output=json",
            f"--output-path={out}",
            "--quiet",
            f"--only-categories={','.join(CATEGORIES)}",
            "--chrome-flags=--headless=new --no-sandbox --disable-gpu",
        ]
        # A run that fails as a tool (Lighthouse's own runtime errors, e.g. NO_NAVSTART when
        # Chromium's trace misses the navigation) is tried once more; scores are never retried.
        for attempt in (1, 2):
            out.unlink(missing_ok=True)
            result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
            if result.returncode == 0 and out.exists():
                break
            print(f"    Lighthouse {name}: run {attempt} failed as a tool", flush=True)
        if result.returncode != 0 or not out.exists():
            report.add(
                f"Lighthouse, {name}",
                "did not run",
                "each >= 95",
                False,
                (result.stderr or result.stdout).strip()[-300:],
            )
            continue
        data = json.loads(out.read_text())
        scores = {c: data["categories"][c]["score"] for c in CATEGORIES}
        shown = ", ".join(f"{c} {round((s or 0) * 100)}" for c, s in scores.items())
        failing = [c for c, s in scores.items() if s is None or s < 0.95]
        notes = []
        for category in failing:
            refs = data["categories"][category]["auditRefs"]
            bad = [
                data["audits"][r["id"]]
                for r in refs
                if r.get("weight")
                and (data["audits"][r["id"]].get("score") or 0) < 0.9
                and data["audits"][r["id"]].get("scoreDisplayMode")
                not in ("notApplicable", "informative", "manual")
            ]
            bad.sort(key=lambda a: a.get("score") or 0)
            notes.append(
                f"{category}: "
                + ", ".join(
                    f"{a['id']}" + (f" ({a['displayValue']})" if a.get("displayValue") else "")
                    for a in bad[:4]
                )
            )
        version = data.get("lighthouseVersion")
        report.add(
            f"Lighthouse {version}, {name}",
            shown,
            "each >= 95",
            not failing,
            "; ".join([*notes, path]),
        )
        report.details.setdefault("lighthouse", {})[name] = {
            "version": version,
            "scores": scores,
            "path": path,
        }


def detail_path() -> str:
    setup_django()
    from offerings.models import InstanceType

    rows = InstanceType.objects.visible().select_related("provider").order_by("pk")
    row = rows.filter(provider__slug="aws", slug="p5-48xlarge").first() or rows.first()
    return f"/instances/{row.provider.slug}/{row.slug}/"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    quick = quick_mode(args)
    print("== page weight, third-party requests, Lighthouse", flush=True)
    report = Report("weight")
    pages = {
        "filter page": "/",
        "detail page": detail_path(),
        "explainer": "/learn/nvlink-vs-infiniband/",
        "estimator": "/estimate/",
    }
    with Gunicorn(workers=2) as server:
        statuses = weigh(server.url, pages, report)
        for name, status in statuses.items():
            if status != 200:
                report.add(f"{name} answers", f"HTTP {status}", "200", False, pages[name])
        browser_requests(server.url, {n: p for n, p in pages.items() if statuses[n] == 200}, report)
        if "--no-lighthouse" not in args and not (quick and os.environ.get("BENCH_SKIP_LH")):
            lighthouse(server.url, pages, statuses, report)
    report.save()
    return 0 if all(f.passed is not False for f in report.figures) else 1


if __name__ == "__main__":
    sys.exit(main())
