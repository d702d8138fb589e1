"""Unary gRPC calls over the one httpx client (`providers.http.make_client`), no second stack.

gRPC is HTTP/2 POST to `https://<host>/<package.Service>/<Method>` with
`content-type: application/grpc` and `te: trailers`; request and answer bodies are
length-prefixed frames: 1 byte compressed flag, 4 bytes big-endian length, the serialised
protobuf message. The live transport sends these requests over HTTP/2 (`providers.http`), and
replay and test transports serve them like any other exchange.

Status: a gRPC server ends each answer with `grpc-status` in the HTTP/2 trailers, or, for an
error without a message ("trailers-only"), in the headers. httpx does not expose trailers, so
the rule here is: a `grpc-status` header other than 0 is an error (with its `grpc-message`);
otherwise the body must be exactly one complete, uncompressed frame that decodes as the expected
message, and that counts as success. A non-OK status sent in trailers *after* a complete message
goes unseen; for the read-only unary calls made here (listings and price estimates) a server has
no reason to do that, and a truncated or malformed body fails the call either way.

Scrapers declare each method once with `unary_method`, which also registers it so that
`providers.replay` can decode and encode the messages of a recorded exchange by its URL path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from providers.base import REDACTED, ScrapeError, retry_note, snippet

CONTENT_TYPE = "application/grpc"
FRAME_HEADER_BYTES = 5
# Longest message accepted in one frame (gRPC's default receive limit is 4 MiB).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# Field names (protobuf-JSON spelling) whose values never go into a recording.
SENSITIVE_FIELDS = frozenset({"subjectToken", "actorToken", "accessToken"})

# https://grpc.github.io/grpc/core/md_doc_statuscodes.html
STATUS_NAMES = {
    0: "OK",
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}


class FrameError(ValueError):
    """A body that is not a sequence of complete, uncompressed gRPC frames."""


class GrpcStatusError(ScrapeError):
    """The server answered with a non-OK `grpc-status`."""

    def __init__(self, what: str, code: int, message: str) -> None:
        name = STATUS_NAMES.get(code, "unknown code")
        super().__init__(f"{what}: gRPC status {code} {name}: {message or '(no message)'}")
        self.code = code


@dataclass(frozen=True)
class UnaryMethod:
    """One unary RPC: where it lives and the message classes it takes and returns."""

    host: str
    service: str
    name: str
    request_type: type
    response_type: type

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.name}"

    @property
    def url(self) -> str:
        return f"https://{self.host}{self.path}"


METHODS: dict[str, UnaryMethod] = {}


def unary_method(
    host: str, service: str, name: str, request_type: type, response_type: type
) -> UnaryMethod:
    """Declare (and register for replay) the unary method `service/name` served at `host`."""
    method = UnaryMethod(host, service, name, request_type, response_type)
    METHODS[method.path] = method
    return method


def method_for(url: str) -> UnaryMethod | None:
    """The registered method a URL calls, or None for a URL that is not a known gRPC method."""
    return METHODS.get(unquote(urlsplit(url).path))


def encode_frame(payload: bytes) -> bytes:
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def decode_frames(body: bytes) -> list[bytes]:
    """Split a body into its frames' messages; fail on a truncated, compressed or oversized one."""
    messages = []
    offset = 0
    while offset < len(body):
        header = body[offset : offset + FRAME_HEADER_BYTES]
        if len(header) < FRAME_HEADER_BYTES:
            raise FrameError(f"truncated frame header at byte {offset} of {len(body)}")
        if header[0] not in (0, 1):
            raise FrameError(f"frame at byte {offset} has an invalid flag {header[0]}")
        if header[0] == 1:
            raise FrameError("compressed frame, but no compression was offered")
        length = int.from_bytes(header[1:], "big")
        if length > MAX_MESSAGE_BYTES:
            raise FrameError(
                f"frame at byte {offset} claims {length} bytes (limit {MAX_MESSAGE_BYTES})"
            )
        start = offset + FRAME_HEADER_BYTES
        if start + length > len(body):
            raise FrameError(
                f"frame at byte {offset} claims {length} bytes but only {len(body) - start} follow"
            )
        messages.append(body[start : start + length])
        offset = start + length
    return messages


def decode_unary(body: bytes, message_type: type) -> Any:
    """The one message of a unary body; FrameError or the decoder's error when unusable."""
    frames = decode_frames(body)
    if len(frames) != 1:
        raise FrameError(f"expected one frame, got {len(frames)}")
    return message_type.FromString(frames[0])


def to_json(message: Any) -> str:
    """A message as canonical protobuf-JSON (camelCase names, sorted keys, no spaces)."""
    return json.dumps(json.loads(message.to_json()), sort_keys=True, separators=(",", ":"))


def redact(data: Any) -> Any:
    """Protobuf-JSON with the values of SENSITIVE_FIELDS replaced by REDACTED."""
    if isinstance(data, dict):
        return {k: REDACTED if k in SENSITIVE_FIELDS else redact(v) for k, v in data.items()}
    if isinstance(data, list):
        return [redact(item) for item in data]
    return data


def status_of(response: httpx.Response) -> tuple[int, str] | None:
    """(code, message) of a `grpc-status` header, or None when the header is absent."""
    raw = response.headers.get("grpc-status")
    if raw is None:
        return None
    try:
        code = int(raw.strip())
    except ValueError:
        code = 2  # UNKNOWN: an unreadable status is no success
    return code, unquote(response.headers.get("grpc-message", ""))


def call_unary(
    client: httpx.Client,
    method: UnaryMethod,
    request: Any,
    *,
    what: str,
    token: str = "",
) -> Any:
    """Send one request message and return the answer message; ScrapeError on any failure."""
    headers = {
        "Content-Type": CONTENT_TYPE,
        "Accept": CONTENT_TYPE,
        "TE": "trailers",
        "grpc-accept-encoding": "identity",
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    response = client.post(
        method.url, content=encode_frame(request.SerializeToString()), headers=headers
    )
    response.read()
    if response.is_error:
        raise ScrapeError(
            f"{what}: HTTP {response.status_code} {response.reason_phrase} from "
            f"{method.url}{retry_note(response)}: {snippet(response.content)}"
        )
    status = status_of(response)
    if status is not None and status[0] != 0:
        raise GrpcStatusError(what, *status)
    content_type = response.headers.get("Content-Type", "")
    if not content_type.lower().startswith(CONTENT_TYPE):
        raise ScrapeError(
            f"{what}: expected gRPC from {method.url} but got {content_type or 'no content type'} "
            f"(HTTP {response.status_code}): {snippet(response.content)}"
        )
    try:
        message = decode_unary(response.content, method.response_type)
    except Exception as exc:  # FrameError, or the protobuf decoder's DecodeError
        raise ScrapeError(
            f"{what}: unusable gRPC answer from {method.url}: {exc} ({len(response.content)} bytes)"
        ) from None
    return message
