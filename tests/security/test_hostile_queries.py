"""Hostile query strings: thousands of generated ones per list endpoint, zero server errors, and
every 4xx from the API and the feed in the contract's JSON shape.

Keys include ORM-shaped names (`_connector`, `a__b__c` lookups, `gpu__slug`), ordering
expressions as values (`sort=-id`, `sort=gpu__slug`), control characters, NUL, 10 KB values,
repeated keys and malformed percent-escapes. The slowest response per endpoint (and the slowest
queries themselves) go to var/security/hostile_queries.json for the performance issue's bench
harness to replay; nothing here asserts on time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from django.conf import settings as django_settings
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offerings.table.parameters import known_parameters

pytestmark = pytest.mark.django_db

EXAMPLES = 1000
ENDPOINTS = ["/", "/api/instances", "/feeds/price-changes/", "/api/estimate"]
JSON_ERRORS = ("/api/", "/feeds/")
REPORT = Path(django_settings.BASE_DIR) / "var" / "security" / "hostile_queries.json"

ORM_KEYS = [
    "_connector",
    "_negated",
    "_",
    "__",
    "__class__",
    "__init__",
    "a__b__c",
    "gpu__slug",
    "provider__name__icontains",
    "instance__provider__slug__regex",
    "pk__in",
    "id__gt",
    "sort__desc",
    "gpu__slug__startswith",
    "order_by",
    "ordering",
    "o",
]
ESTIMATOR_KEYS = ["ids", "params_b", "mode", "nodes", "mfu", "overlap", "batch", "context_tokens"]
KNOWN_KEYS = sorted(known_parameters()) + ESTIMATOR_KEYS + ["compare", "from", "utm_source"]
VALUES = [
    "",
    " ",
    "true",
    "false",
    "True",
    "1",
    "0",
    "-1",
    "1.5",
    "1e309",
    "-1e309",
    "NaN",
    "inf",
    "-0",
    "0x1f",
    "9" * 40,
    "1" * 400,
    "h100-sxm",
    "aws",
    "verda",
    "us-east-1",
    "-id",
    "id",
    "pk",
    "gpu__slug",
    "-gpu__slug",
    "price_gpu_hour",
    "-price_gpu_hour",
    "--price_gpu_hour",
    "F('id')",
    "Lower('name')",
    "?",
    "1 OR 1=1",
    "' OR ''='",
    "'; DROP TABLE offerings_offer; --",
    "%",
    "%%",
    "_",
    "\\",
    "*",
    "../../etc/passwd",
    "<script>window.__pwned=1</script>",
    "\x00",
    "a\x00b",
    "\r\nSet-Cookie: x=1",
    "\u202e",
    "\ufeff",
    "𝟘𝟙",
    "²",  # str.isdigit() is true for it, int() refuses it
    "¹²,³",
    "٣",
    "aws/ib-8x,aws/efa-8x",
    "1,2,3,4,5,6,7,8,9,10",
    "train-ddp",
    "inference",
]

control = st.characters(min_codepoint=0, max_codepoint=0x1F)
unicode_text = st.text(st.characters(codec="utf-8"), max_size=40)
control_text = st.text(st.one_of(control, st.characters(codec="utf-8")), min_size=1, max_size=20)
ten_kb = st.builds(
    lambda chunk, size: (chunk * size)[:size],
    st.sampled_from(["a", "0", "-", "%", "<", "\x00", "é", "1,", "aws/x,", "gpu__"]),
    st.integers(min_value=10_000, max_value=10_240),
)
keys = st.one_of(
    st.sampled_from(KNOWN_KEYS),
    st.sampled_from(ORM_KEYS),
    st.builds(lambda a, b: f"{a}__{b}", st.sampled_from(KNOWN_KEYS), unicode_text),
    control_text,
    unicode_text,
)
values = st.one_of(
    st.sampled_from(VALUES),
    unicode_text,
    control_text,
    ten_kb,
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
)
encoded_pairs = st.lists(st.tuples(keys, values), max_size=8).map(urlencode)
# What a client can put on the wire as it is: printable Latin-1 with raw &, =, + and malformed
# or overlong percent-escapes (%zz, %c0%80, %ff).
raw = st.lists(
    st.one_of(
        st.sampled_from(["%", "%zz", "%00", "%c0%80", "%ff", "%e2%80%ae", "&", "=", "+", ";"]),
        st.characters(min_codepoint=0x21, max_codepoint=0xFF, exclude_characters="#"),
    ),
    max_size=40,
).map("".join)
repeated = st.builds(
    lambda key, value, n: "&".join([f"{quote(key)}={quote(value)}"] * n),
    st.sampled_from(KNOWN_KEYS + ORM_KEYS),
    st.sampled_from(VALUES),
    st.integers(min_value=2, max_value=50),
)
query_strings = st.one_of(encoded_pairs, raw, repeated)


def check_json_error(response) -> None:
    body = response.json()
    assert set(body) == {"error", "fields"}, body
    assert body["error"] == "invalid_parameters"
    fields = body["fields"]
    assert isinstance(fields, dict)
    assert fields, "an invalid request names at least one field"
    for name, messages in fields.items():
        assert isinstance(name, str)
        assert isinstance(messages, list)
        assert messages
        assert all(isinstance(m, str) and m for m in messages)


class Slowest:
    """The slowest responses seen, per endpoint and overall (for the bench harness)."""

    def __init__(self) -> None:
        self.by_endpoint: dict[str, dict] = {}

    def record(self, path: str, query: str, seconds: float, status: int) -> None:
        entry = self.by_endpoint.setdefault(path, {"examples": 0, "slowest": []})
        entry["examples"] += 1
        entry["slowest"].append({"seconds": seconds, "status": status, "query": query})
        entry["slowest"] = sorted(entry["slowest"], key=lambda e: -e["seconds"])[:10]

    def write(self) -> None:
        REPORT.parent.mkdir(parents=True, exist_ok=True)
        existing = json.loads(REPORT.read_text()) if REPORT.exists() else {}
        endpoints = existing.get("endpoints", {})
        for path, entry in self.by_endpoint.items():
            endpoints[path] = {
                "examples": entry["examples"],
                "slowest_seconds": round(entry["slowest"][0]["seconds"], 6),
                "slowest": entry["slowest"],
            }
        overall = max(endpoints.values(), key=lambda e: e["slowest_seconds"])
        REPORT.write_text(
            json.dumps(
                {
                    "what": "Django test client, small catalog; the slowest of the generated "
                    "hostile query strings per endpoint (tests/security/test_hostile_queries.py)",
                    "slowest_seconds": overall["slowest_seconds"],
                    "endpoints": endpoints,
                },
                indent=2,
                ensure_ascii=True,
            )
        )


@pytest.mark.parametrize("path", ENDPOINTS)
def test_hostile_query_strings_never_cause_a_server_error(catalog, path):
    """The catalog is made once for the whole run: GET requests never change it."""
    client = Client(raise_request_exception=True)
    slowest = Slowest()
    client.get(path)  # warm up (first-request imports and template loading are not the query's)

    @given(query=query_strings)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def send(query: str) -> None:
        started = time.perf_counter()
        response = client.get(path, QUERY_STRING=query)
        slowest.record(path, query, time.perf_counter() - started, response.status_code)
        assert response.status_code < 500, (query, response.status_code)
        assert response.status_code in (200, 400), (query, response.status_code)
        if response.status_code == 400 and path.startswith(JSON_ERRORS):
            check_json_error(response)

    send()
    assert slowest.by_endpoint[path]["examples"] >= EXAMPLES
    slowest.write()


def test_orm_shaped_names_are_refused_by_name_not_passed_on(client, catalog):
    for key in ("_connector", "a__b__c", "gpu__slug", "__class__"):
        response = client.get("/api/instances", {key: "OR"})
        assert response.status_code == 400
        assert response.json()["fields"] == {key: ["This parameter name is not allowed."]}
    for ordering in ("-id", "gpu__slug", "pk", "-provider__name"):
        response = client.get("/api/instances", {"sort": ordering})
        assert response.status_code == 400
        assert "sort" in response.json()["fields"]


@pytest.mark.parametrize(
    "url",
    [
        "/compare/?ids=²,³",
        "/?compare=²",
        "/api/estimate?params_b=7&mode=train-ddp&ids=²,¹",
        "/compare/?ids=1,٣",
    ],
)
def test_unicode_digits_in_ids_are_invalid_not_a_crash(client, catalog, url):
    """`"²".isdigit()` is true and `int("²")` raises: ids must be ASCII digits."""
    response = client.get(url)
    assert response.status_code in (200, 400)


def test_a_provider_retry_after_in_unicode_digits_is_ignored_not_a_crash():
    import httpx

    from providers.http import retry_after_seconds

    # Header bytes are Latin-1: b"\xb2" reads as "²".
    assert retry_after_seconds(httpx.Response(429, headers=[(b"Retry-After", b"\xb2")])) is None
    assert retry_after_seconds(httpx.Response(429, headers={"Retry-After": "3"})) == 3.0
