"""Serve recorded HTTP exchanges instead of the network (`--replay`) and record them (`--record`).

The manifest format is the public contract (the README's public interface section): `manifest.json` is a JSON list of
`{"method", "url", "status", "content_type", "body"}` entries, optionally with `"headers"`,
`"request_body"` (matched as canonical JSON) or `"error": "timeout" | "connect"` in place of
status and body. A request matches an entry on its method and URL after percent-decoding, with
the query string parsed as form-encoded (`+` is a space) and compared as a multiset, ignoring the
auth parameters `key`, `api_key` and `access_token`. Entries with the same match are served in
order; a request with no entry left fails with `ReplayMismatch`.

gRPC exchanges (a URL whose path is a method registered in `providers.grpc`, such as
`https://compute.api.nebius.cloud/nebius.compute.v1.PlatformService/List`) keep the same entry
format with `"content_type": "application/grpc"`. Their message files are protobuf-JSON: a
`request_body` is matched by decoding the request's frame with the method's request class and
comparing both as canonical protobuf-JSON; a `body` ending in `.json` is encoded with the
response class into one frame when served. A body file with any other name is served as it is
(raw frames, e.g. a broken one), and a request file that is not JSON is read as a raw frame.
`grpc-status` and `grpc-message` are kept in `headers` (a trailers-only gRPC error).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

import httpx
from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from providers import grpc  # registry: the scrapers register their gRPC methods
from providers.base import REDACTED
from providers.exchanges import match_key, redact_url

CHUNK_BYTES = 64 * 1024
# Response headers worth keeping in a recording (the rest is noise or varies per request).
RECORDED_HEADERS = ("retry-after", "grpc-status", "grpc-message")


class ReplayError(Exception):
    """The recording itself is unusable (missing manifest, bad entry, missing body file)."""


class ReplayMismatch(httpx.TransportError):
    """A request for which the recording holds no (remaining) response."""


class ManifestEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str = "GET"
    url: str = Field(pattern=r"^https?://")
    status: int | None = Field(default=None, ge=100, le=599)
    content_type: str = "application/json"
    body: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    request_body: str | None = None
    error: Literal["timeout", "connect"] | None = None
    # When the exchange was recorded (UTC); null for a hand-built recording, whatever dates its
    # body shows. The prices a replay reads are observed then, never at the replay's time.
    recorded_at: datetime | None = None
    # Where real data in the body came from (repository, path, commit), for hand-built ones.
    credit: str | dict[str, str] | None = None

    @model_validator(mode="after")
    def _status_or_error(self) -> ManifestEntry:
        if (self.status is None) == (self.error is None):
            raise ValueError("give exactly one of status and error")
        if self.error is not None and self.body is not None:
            raise ValueError("an error entry has no body")
        if self.recorded_at is not None and self.recorded_at.utcoffset() is None:
            raise ValueError("recorded_at needs a UTC offset (e.g. 2026-11-29T00:00:00Z)")
        return self


class FileStream(httpx.SyncByteStream):
    """A response body read from disk in chunks, so a multi-GB recording never sits in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[bytes]:
        with self.path.open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                yield chunk


def manifest_path(directory: Path, slug: str, single: bool) -> Path:
    """`DIR/manifest.json` when one provider is replayed from it, else `DIR/<slug>/manifest.json`."""
    if single and (directory / "manifest.json").exists():
        return directory / "manifest.json"
    return directory / slug / "manifest.json"


def recording_name(manifest: Path) -> str:
    """How a run names the recording it replayed: its folder, relative to the project when it
    lies inside it (`tests/providers/recordings/skypilot`)."""
    folder = manifest.resolve().parent
    try:
        return str(folder.relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return str(folder)


def providers_in(directory: Path) -> list[str]:
    """The provider slugs a replay folder holds: its subfolders that have a manifest."""
    return sorted(p.parent.name for p in directory.glob("*/manifest.json"))


def load_manifest(path: Path) -> list[ManifestEntry]:
    if not path.is_file():
        raise ReplayError(f"no manifest at {path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ReplayError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(raw, list):
        raise ReplayError(f"{path} must hold a JSON list of exchanges")
    entries = []
    for index, item in enumerate(raw):
        try:
            entry = ManifestEntry.model_validate(item)
        except ValidationError as exc:
            raise ReplayError(f"{path} entry {index}: {exc}") from None
        for name in (entry.body, entry.request_body):
            if name is not None and not (path.parent / name).is_file():
                raise ReplayError(f"{path} entry {index}: body file {name!r} is missing")
        entries.append(entry)
    return entries


class ReplayTransport(httpx.BaseTransport):
    """Answer requests from a manifest; fail loudly on anything not recorded."""

    def __init__(self, manifest: Path) -> None:
        self.manifest = manifest
        self.folder = manifest.parent
        self.entries = load_manifest(manifest)
        self._queues: dict[tuple, deque[ManifestEntry]] = defaultdict(deque)
        for entry in self.entries:
            request_body = None
            if entry.request_body is not None:
                request_body = (self.folder / entry.request_body).read_bytes()
            self._queues[match_key(entry.method, entry.url, request_body)].append(entry)
        self.served: list[ManifestEntry] = []

    def recorded_at(self) -> datetime | None:
        """When the served exchanges were recorded: the earliest, or None if any is undated."""
        moments = [entry.recorded_at for entry in self.served]
        if not moments or any(moment is None for moment in moments):
            return None
        return min(moments)

    def pinned_commits(self) -> dict[str, str]:
        """File path -> commit, from the entries' credits that name both: the version of each
        file the recording holds, so what it is replayed into cites that version."""
        return {
            entry.credit["path"]: entry.credit["commit"]
            for entry in self.entries
            if isinstance(entry.credit, dict) and {"path", "commit"} <= entry.credit.keys()
        }

    def unused(self) -> list[ManifestEntry]:
        """Recorded exchanges no request has asked for (yet)."""
        return [entry for queue in self._queues.values() for entry in queue]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read() or None
        queue = self._queues.get(match_key(request.method, str(request.url), body))
        if not queue:
            raise ReplayMismatch(
                f"replay: no recorded response left for {request.method} "
                f"{redact_url(str(request.url))} in {self.manifest}",
                request=request,
            )
        entry = queue.popleft()
        self.served.append(entry)
        if entry.error == "timeout":
            raise httpx.ReadTimeout(f"replay: recorded timeout for {entry.url}", request=request)
        if entry.error == "connect":
            raise httpx.ConnectError(
                f"replay: recorded connect error for {entry.url}", request=request
            )
        headers = {"Content-Type": entry.content_type, **entry.headers}
        call = grpc.method_for(entry.url)
        if entry.body and call is not None and entry.body.endswith(".json"):
            message = call.response_type.from_json((self.folder / entry.body).read_bytes())
            stream = httpx.ByteStream(grpc.encode_frame(message.SerializeToString()))
        elif entry.body:
            stream = FileStream(self.folder / entry.body)
        else:
            stream = httpx.ByteStream(b"")
        return httpx.Response(entry.status, headers=headers, stream=stream, request=request)


_EXTENSIONS = {"json": "json", "html": "html", "xml": "xml", "csv": "csv", "text/plain": "txt"}


def _extension(content_type: str) -> str:
    for marker, ext in _EXTENSIONS.items():
        if marker in content_type:
            return ext
    return "bin"


class RecordingTransport(httpx.BaseTransport):
    """Pass requests to the network and write each exchange to `folder` as a manifest entry."""

    def __init__(
        self, inner: httpx.BaseTransport, folder: Path, secrets: Iterable[str] = ()
    ) -> None:
        self.inner = inner
        self.folder = folder
        self.secrets = [s.encode() for s in secrets if s]
        self.entries: list[dict] = []
        folder.mkdir(parents=True, exist_ok=True)

    def _scrub(self, data: bytes) -> bytes:
        for secret in self.secrets:
            data = data.replace(secret, REDACTED.encode())
        return data

    def _name(self, request: httpx.Request, ext: str) -> str:
        stem = re.sub(r"[^a-z0-9]+", "-", (request.url.path or "root").lower()).strip("-")[-60:]
        return f"{len(self.entries) + 1:03d}-{stem or 'root'}.{ext}"

    def _save(self, entry: dict) -> None:
        self.entries.append(entry)
        text = json.dumps(self.entries, indent=2) + "\n"
        (self.folder / "manifest.json").write_text(text, encoding="utf-8")

    def _send(self, request: httpx.Request, entry: dict) -> httpx.Response:
        """Send through the real transport; a timeout or refused connection is recorded too."""
        try:
            return self.inner.handle_request(request)
        except httpx.TimeoutException:
            self._save(entry | {"error": "timeout"})
            raise
        except httpx.ConnectError:
            self._save(entry | {"error": "connect"})
            raise

    @staticmethod
    def _kept_headers(response: httpx.Response) -> dict[str, str]:
        return {k: v for k, v in response.headers.items() if k.lower() in RECORDED_HEADERS}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        entry: dict = {"method": request.method, "url": redact_url(str(request.url))}
        body = request.read()
        call = grpc.method_for(str(request.url))
        if call is not None:
            return self._record_grpc(call, request, body, entry)
        if body:
            name = self._name(request, "request.json")
            (self.folder / name).write_bytes(self._scrub(body))
            entry["request_body"] = name
        response = self._send(request, entry)
        content_type = response.headers.get("Content-Type", "application/octet-stream")
        name = self._name(request, _extension(content_type))
        path = self.folder / name
        # iter_bytes() undoes any Content-Encoding, so the file holds the plain body.
        decoded = httpx.Response(
            response.status_code, headers=response.headers, stream=response.stream
        )
        with path.open("wb") as handle:
            for chunk in decoded.iter_bytes():
                handle.write(self._scrub(chunk))
        decoded.close()
        headers = self._kept_headers(response)
        entry |= {"status": response.status_code, "content_type": content_type, "body": name}
        if headers:
            entry["headers"] = headers
        self._save(entry)
        return httpx.Response(
            response.status_code,
            headers={"Content-Type": content_type, **headers},
            stream=FileStream(path),
            request=request,
        )

    def _message_file(self, request: httpx.Request, message_type: type, data: bytes, ext: str):
        """Write a gRPC message as redacted protobuf-JSON; raw bytes when it does not decode."""
        try:
            message = grpc.decode_unary(data, message_type)
        except Exception:
            name = self._name(request, ext.replace("json", "bin"))
            (self.folder / name).write_bytes(self._scrub(data))
            return name
        text = json.dumps(grpc.redact(json.loads(message.to_json())), indent=2) + "\n"
        name = self._name(request, ext)
        (self.folder / name).write_bytes(self._scrub(text.encode()))
        return name

    def _record_grpc(
        self, call: grpc.UnaryMethod, request: httpx.Request, body: bytes, entry: dict
    ) -> httpx.Response:
        """A gRPC exchange: messages as protobuf-JSON files; the caller gets the real answer."""
        if body:
            entry["request_body"] = self._message_file(
                request, call.request_type, body, "request.json"
            )
        response = self._send(request, entry)
        content = response.read()
        content_type = response.headers.get("Content-Type", "application/octet-stream")
        headers = self._kept_headers(response)
        entry |= {"status": response.status_code, "content_type": content_type}
        if content:
            if content_type.startswith(grpc.CONTENT_TYPE):
                entry["body"] = self._message_file(request, call.response_type, content, "json")
            else:
                entry["body"] = self._name(request, _extension(content_type))
                (self.folder / entry["body"]).write_bytes(self._scrub(content))
        if headers:
            entry["headers"] = headers
        self._save(entry)
        return httpx.Response(
            response.status_code,
            headers={"Content-Type": content_type, **headers},
            content=content,
            request=request,
        )

    def close(self) -> None:
        self.inner.close()
