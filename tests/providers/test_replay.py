"""Replay and record in the contract's manifest format, with its request-matching rules."""

from __future__ import annotations

import json

import httpx
import pytest

from providers.exchanges import redact_url
from providers.http import make_client
from providers.replay import (
    RecordingTransport,
    ReplayError,
    ReplayMismatch,
    ReplayTransport,
    match_key,
)


def write_manifest(folder, entries, bodies=None):
    for name, content in (bodies or {}).items():
        (folder / name).write_text(content)
    (folder / "manifest.json").write_text(json.dumps(entries))
    return folder / "manifest.json"


def test_urls_match_after_percent_decoding_with_plus_as_space_and_any_query_order():
    recorded = "https://api.example/a b?x=1&$filter=name eq 'a b'&x=2"
    asked = "https://api.example:443/a%20b?%24filter=name+eq+%27a%20b%27&x=2&x=1"
    assert match_key("GET", recorded) == match_key("get", asked)


def test_query_strings_compare_as_multisets():
    assert match_key("GET", "https://h/p?a=1&a=1") != match_key("GET", "https://h/p?a=1")


def test_auth_parameters_are_ignored_when_matching_and_redacted_when_recording():
    assert match_key("GET", "https://h/p?key=s3cret&q=1") == match_key("GET", "https://h/p?q=1")
    assert match_key("GET", "https://h/p?api_key=a&access_token=b") == match_key(
        "GET", "https://h/p"
    )
    assert redact_url("https://h/p?api_key=s3cret&q=1") == "https://h/p?api_key=REDACTED&q=1"


def test_entries_with_the_same_match_are_served_in_order_then_a_request_fails(tmp_path):
    manifest = write_manifest(
        tmp_path,
        [
            {
                "method": "GET",
                "url": "https://h/p",
                "status": 429,
                "body": "a.json",
                "headers": {"Retry-After": "2"},
            },
            {"method": "GET", "url": "https://h/p", "status": 200, "body": "b.json"},
        ],
        {"a.json": "{}", "b.json": '{"ok": true}'},
    )
    transport = ReplayTransport(manifest)
    client = httpx.Client(transport=transport)
    first = client.get("https://h/p")
    assert (first.status_code, first.headers["Retry-After"]) == (429, "2")
    assert client.get("https://h/p").json() == {"ok": True}
    with pytest.raises(ReplayMismatch, match="no recorded response left for GET https://h/p"):
        client.get("https://h/p")


def test_an_unrecorded_url_fails_with_a_clear_error(tmp_path):
    manifest = write_manifest(tmp_path, [])
    with pytest.raises(ReplayMismatch, match="https://h/other"):
        httpx.Client(transport=ReplayTransport(manifest)).get("https://h/other")


def test_post_bodies_match_as_canonical_json(tmp_path):
    manifest = write_manifest(
        tmp_path,
        [
            {
                "method": "POST",
                "url": "https://h/graphql",
                "status": 200,
                "body": "r.json",
                "request_body": "q.json",
            }
        ],
        {"r.json": "{}", "q.json": '{"b": 1, "a": [1, 2]}'},
    )
    client = httpx.Client(transport=ReplayTransport(manifest))
    assert client.post("https://h/graphql", content=b'{"a":[1,2],"b":1}').status_code == 200


def test_recorded_errors_raise_like_the_network_would(tmp_path):
    manifest = write_manifest(
        tmp_path,
        [
            {"method": "GET", "url": "https://h/t", "error": "timeout"},
            {"method": "GET", "url": "https://h/c", "error": "connect"},
        ],
    )
    client = httpx.Client(transport=ReplayTransport(manifest))
    with pytest.raises(httpx.ReadTimeout):
        client.get("https://h/t")
    with pytest.raises(httpx.ConnectError):
        client.get("https://h/c")


def test_a_manifest_naming_a_missing_body_file_is_refused(tmp_path):
    manifest = write_manifest(
        tmp_path, [{"method": "GET", "url": "https://h/p", "status": 200, "body": "gone.json"}]
    )
    with pytest.raises(ReplayError, match=r"gone\.json"):
        ReplayTransport(manifest)


def test_an_entry_with_both_status_and_error_is_refused(tmp_path):
    manifest = write_manifest(
        tmp_path, [{"method": "GET", "url": "https://h/p", "status": 200, "error": "timeout"}]
    )
    with pytest.raises(ReplayError, match="exactly one of status and error"):
        ReplayTransport(manifest)


def test_recording_writes_a_manifest_that_replays_the_same_answers_without_secrets(tmp_path):
    def network(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/slow":
            raise httpx.ReadTimeout("slow", request=request)
        headers = {"Retry-After": "1"} if request.url.path == "/busy" else {}
        status = 429 if request.url.path == "/busy" else 200
        return httpx.Response(status, headers=headers, json={"token": "s3cret", "n": 1})

    recorder = RecordingTransport(httpx.MockTransport(network), tmp_path / "rec", ["s3cret"])
    client = httpx.Client(transport=recorder)
    assert client.get("https://h/p?api_key=s3cret&q=1").json() == {"token": "REDACTED", "n": 1}
    assert client.get("https://h/busy").status_code == 429
    with pytest.raises(httpx.ReadTimeout):
        client.get("https://h/slow")

    manifest = tmp_path / "rec" / "manifest.json"
    text = manifest.read_text() + "".join(p.read_text() for p in (tmp_path / "rec").iterdir())
    assert "s3cret" not in text
    entries = json.loads(manifest.read_text())
    assert entries[0]["url"] == "https://h/p?api_key=REDACTED&q=1"
    assert entries[1]["headers"] == {"retry-after": "1"}
    assert entries[2] == {"method": "GET", "url": "https://h/slow", "error": "timeout"}

    replayed = httpx.Client(transport=ReplayTransport(manifest))
    assert replayed.get("https://h/p?api_key=other&q=1").json() == {"token": "REDACTED", "n": 1}
    assert replayed.get("https://h/busy").status_code == 429
    with pytest.raises(httpx.ReadTimeout):
        replayed.get("https://h/slow")


def test_replayed_bodies_stream_through_the_client_factory(tmp_path):
    manifest = write_manifest(
        tmp_path,
        [{"method": "GET", "url": "https://h/big", "status": 200, "body": "big.json"}],
        {"big.json": "[" + ",".join(["1"] * 100_000) + "]"},
    )
    with (
        make_client(ReplayTransport(manifest)) as client,
        client.stream("GET", "https://h/big") as r,
    ):
        chunks = list(r.iter_bytes())
    assert len(chunks) > 1


def test_a_replay_is_dated_by_its_recording_never_by_the_time_it_runs(tmp_path):
    entry = {"method": "GET", "url": "https://api.example/a", "status": 200, "body": "a.json"}
    dated = {**entry, "url": "https://api.example/b", "body": "b.json"}
    entries = [
        {**entry, "recorded_at": "2026-10-02T00:00:00Z", "credit": "owner/repo path@abc123"},
        {**dated, "recorded_at": "2026-10-01T12:00:00Z"},
    ]
    transport = ReplayTransport(write_manifest(tmp_path, entries, {"a.json": "{}", "b.json": "{}"}))
    assert transport.recorded_at() is None  # nothing served yet
    with make_client(transport) as client:
        client.get("https://api.example/a")
        client.get("https://api.example/b")
    assert transport.recorded_at().isoformat() == "2026-10-01T12:00:00+00:00"  # the earliest


def test_a_hand_built_recording_has_no_date(tmp_path):
    entries = [
        {"method": "GET", "url": "https://api.example/a", "status": 200, "body": "a.json"},
        {
            "method": "GET",
            "url": "https://api.example/b",
            "status": 200,
            "body": "a.json",
            "recorded_at": "2026-10-01T00:00:00Z",
        },
    ]
    transport = ReplayTransport(write_manifest(tmp_path, entries, {"a.json": "{}"}))
    with make_client(transport) as client:
        client.get("https://api.example/a")
        client.get("https://api.example/b")
    assert transport.recorded_at() is None  # one undated exchange: the prices are undated


def test_a_recorded_at_without_a_utc_offset_is_refused(tmp_path):
    entries = [
        {
            "method": "GET",
            "url": "https://api.example/a",
            "status": 200,
            "body": "a.json",
            "recorded_at": "2026-10-01T00:00:00",
        }
    ]
    with pytest.raises(ReplayError, match="recorded_at needs a UTC offset"):
        ReplayTransport(write_manifest(tmp_path, entries, {"a.json": "{}"}))
