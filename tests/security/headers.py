"""The Mozilla HTTP Observatory's rules for an A+ grade, written out as checks on one response.

Each check returns the problems it found as sentences; an empty list passes. The rules follow
the Observatory's scoring (https://developer.mozilla.org/en-US/observatory/docs/tests_and_scoring):
CSP enforced without unsafe script sources, default-src 'none'/'self' and object-src 'none';
framing forbidden; HSTS of at least a year over HTTPS; nosniff; a Referrer-Policy that does not
leak paths cross-origin; cookies Secure (and session and CSRF cookies HttpOnly, SameSite); no
same-site external scripts without SRI. On top of them, this site's own rules: COOP, no inline
script, event handler, `hx-on` or style attribute on public pages, and nonces only on responses
that are never cached.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

from django.http import HttpResponse

HSTS_MIN_SECONDS = 31_536_000
SAFE_REFERRER_POLICIES = {
    "no-referrer",
    "same-origin",
    "strict-origin",
    "strict-origin-when-cross-origin",
}
UNSAFE_SCRIPT_SOURCES = {"'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*", "data:"}
UNSAFE_SCHEMES = {"http:", "https:", "blob:", "filesystem:"}
SCRIPT_DATA_TYPES = {"application/ld+json", "application/json"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "poster", "data"}
SAFE_SCHEMES = {"", "http", "https", "mailto"}


def is_safe_url(value: str) -> bool:
    """Relative, or http(s)/mailto, as the browser would parse it (tabs and newlines dropped)."""
    return urlsplit(value.strip()).scheme.lower() in SAFE_SCHEMES


def parse_csp(value: str) -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for part in value.split(";"):
        tokens = part.split()
        if tokens:
            directives.setdefault(tokens[0].lower(), tokens[1:])
    return directives


def csp_problems(response: HttpResponse) -> list[str]:
    value = response.get("Content-Security-Policy")
    if not value:
        return ["no enforced Content-Security-Policy header"]
    csp = parse_csp(value)
    problems = []
    default = csp.get("default-src")
    if default is None or not set(default) <= {"'none'", "'self'"}:
        problems.append(f"default-src must be 'none' or 'self', got {default}")
    script = csp.get("script-src", default or [])
    unsafe = (set(script) & UNSAFE_SCRIPT_SOURCES) | (set(script) & UNSAFE_SCHEMES)
    if unsafe:
        problems.append(f"script-src allows {sorted(unsafe)}")
    if any(source.startswith("http:") for source in script):
        problems.append("script-src allows a plain-http source")
    if csp.get("object-src", default) != ["'none'"]:
        problems.append(f"object-src must be 'none', got {csp.get('object-src')}")
    if csp.get("base-uri") not in (["'none'"], ["'self'"]):
        problems.append(f"base-uri must be 'none' or 'self', got {csp.get('base-uri')}")
    if csp.get("form-action") is None:
        problems.append("form-action is not restricted")
    frame_ancestors = csp.get("frame-ancestors")
    if frame_ancestors != ["'none'"] and response.get("X-Frame-Options") != "DENY":
        problems.append("framing allowed: neither frame-ancestors 'none' nor X-Frame-Options DENY")
    style = csp.get("style-src", default or [])
    if "'unsafe-inline'" in style or "*" in style:
        problems.append(f"style-src allows {style}")
    nonced = "'nonce-" in value
    cache_control = response.get("Cache-Control", "")
    if nonced and not ("no-store" in cache_control or "private" in cache_control):
        problems.append(f"a CSP nonce on a cacheable response (Cache-Control: {cache_control!r})")
    return problems


def header_problems(response: HttpResponse) -> list[str]:
    problems = csp_problems(response)
    if response.get("Content-Security-Policy-Report-Only") and not response.get(
        "Content-Security-Policy"
    ):
        problems.append("CSP is only report-only")
    hsts = response.get("Strict-Transport-Security", "")
    max_age = next(
        (int(p.split("=")[1]) for p in hsts.split(";") if p.strip().startswith("max-age=")), 0
    )
    if max_age < HSTS_MIN_SECONDS:
        problems.append(f"HSTS max-age {max_age} < {HSTS_MIN_SECONDS} ({hsts!r})")
    if response.get("X-Content-Type-Options") != "nosniff":
        problems.append("X-Content-Type-Options is not nosniff")
    referrer = {p.strip() for p in response.get("Referrer-Policy", "").split(",") if p.strip()}
    if not referrer or not referrer <= SAFE_REFERRER_POLICIES:
        problems.append(f"Referrer-Policy unsafe or missing: {sorted(referrer)}")
    if response.get("Cross-Origin-Opener-Policy") != "same-origin":
        problems.append("Cross-Origin-Opener-Policy is not same-origin")
    if response.get("Access-Control-Allow-Origin") == "*" and response.cookies:
        problems.append("CORS allows every origin on a response that sets cookies")
    for name, morsel in response.cookies.items():
        if not morsel["secure"]:
            problems.append(f"cookie {name} is not Secure")
        if name in ("sessionid", "csrftoken") and not morsel["httponly"]:
            problems.append(f"cookie {name} is not HttpOnly")
        if morsel["samesite"].lower() not in ("lax", "strict"):
            problems.append(f"cookie {name} has SameSite {morsel['samesite']!r}")
    return problems


class _MarkupAudit(HTMLParser):
    """Collects inline script, event handlers, hx-on, style attributes and <style> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.external_scripts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name.lower(): value for name, value in attrs}
        if tag == "script":
            src = names.get("src")
            kind = (names.get("type") or "").lower()
            if src:
                self.external_scripts.append(src)
            elif kind not in SCRIPT_DATA_TYPES:
                self.problems.append(f"inline <script> ({self.getpos()})")
        if tag == "style":
            self.problems.append(f"inline <style> element ({self.getpos()})")
        for name, value in names.items():
            bare = name.removeprefix("data-")
            if name.startswith("on"):
                self.problems.append(f"event handler {name}= on <{tag}>")
            elif bare.startswith(("hx-on", "hx-vals", "hx-vars")) and "js:" in (value or ""):
                self.problems.append(f"{name} evaluates script on <{tag}>")
            elif bare.startswith("hx-on"):
                self.problems.append(f"{name} on <{tag}>")
            elif name == "style":
                self.problems.append(f"style attribute on <{tag}>")
            elif name in URL_ATTRIBUTES and not is_safe_url(value or ""):
                self.problems.append(f"{name}={value!r} on <{tag}>")


def markup_problems(html: str) -> list[str]:
    audit = _MarkupAudit()
    audit.feed(html)
    audit.close()
    problems = audit.problems
    for src in audit.external_scripts:
        if not src.startswith("/") or src.startswith("//"):
            problems.append(f"external script {src!r} from another origin (no SRI)")
    return problems
