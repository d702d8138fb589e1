"""What a recorded HTTP exchange is matched on, and what a recording holds in place of a secret.

Shared by the replay/record transports (`providers.replay`) and the scrapers that sign or match
requests themselves (Azure's paging, Verda's and Nebius's credentials), so that neither imports
the other: the transports import the registry, and the registry imports the scrapers.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from providers import grpc
from providers.base import REDACTED

# Query parameters that carry a key: ignored when matching, redacted when recording.
AUTH_PARAMS = frozenset({"key", "api_key", "access_token"})


def canonical_json(raw: bytes) -> str:
    """JSON re-serialised with sorted keys and no spaces, so equal documents compare equal."""
    try:
        return json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return raw.decode("utf-8", "replace")


def canonical_grpc(call: grpc.UnaryMethod, raw: bytes) -> str | bytes:
    """A gRPC request as canonical protobuf-JSON: from a recorded JSON file or a sent frame."""
    try:
        if raw.lstrip()[:1] == b"{":
            message = call.request_type.from_json(raw)
        else:
            message = grpc.decode_unary(raw, call.request_type)
        return grpc.to_json(message)
    except Exception:  # undecodable: matched byte for byte (and so, in practice, not at all)
        return raw


def match_key(method: str, url: str, body: bytes | None = None) -> tuple:
    """What a request is matched on: method, decoded URL, query multiset, canonical body."""
    call = grpc.method_for(url)
    if body and call is not None:
        canonical = canonical_grpc(call, body)
    else:
        canonical = canonical_json(body) if body else None
    parts = urlsplit(url)
    query = sorted(
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if name not in AUTH_PARAMS
    )
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    default_port = {"https": 443, "http": 80}.get(scheme)
    netloc = host if parts.port in (None, default_port) else f"{host}:{parts.port}"
    return (
        method.upper(),
        scheme,
        netloc,
        unquote(parts.path) or "/",
        tuple(query),
        canonical,
    )


def redact_url(url: str) -> str:
    """Replace the values of auth query parameters with REDACTED."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not any(name in AUTH_PARAMS for name, _ in pairs):
        return url
    query = urlencode([(n, REDACTED if n in AUTH_PARAMS else v) for n, v in pairs])
    return urlunsplit(parts._replace(query=query))
