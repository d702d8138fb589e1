"""What every scraper shares: its context, its one error type and strict JSON helpers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from offerings.schemas import RejectedRow, ScrapedOffer
from providers.http import RETRY_STATUSES

# What a recording holds in place of a secret (a key, a client secret, a signed token).
REDACTED = "REDACTED"


class ScrapeError(Exception):
    """The provider's answer cannot be used at all: the run fails with this message."""


@dataclass
class ScrapeContext:
    """What a scraper is given besides its HTTP client."""

    now: datetime
    api_key: str = ""
    regions: tuple[str, ...] = ()
    # Credential setting name -> value, for scrapers needing more than `api_key` (empty in replay).
    credentials: dict[str, str] = field(default_factory=dict)
    progress: Callable[[str], None] = lambda message: None
    warnings: list[str] = field(default_factory=list)
    # A file's path in a repository -> the commit to read it at (a replay's credited commits:
    # the versions its recorded files were cut from). Empty for a live run.
    pinned: dict[str, str] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        """Note schema drift or a skipped part once per run (shown on the refresh run)."""
        if message not in self.warnings:
            self.warnings.append(message)


def _number(value: Any) -> Any:
    """Accept JSON numbers only: a quoted price or a boolean is a wrong type, not a price."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError(f"expected a JSON number, got {type(value).__name__} {value!r}")
    return Decimal(str(value)) if isinstance(value, float) else Decimal(value)


def _decimal_string(value: Any) -> Any:
    """Accept a decimal number written as a JSON string (AWS writes prices as "98.3200000000")."""
    if not isinstance(value, str):
        raise ValueError(f"expected a number in a string, got {type(value).__name__} {value!r}")
    try:
        return Decimal(value.strip())
    except InvalidOperation:
        raise ValueError(f"expected a decimal number, got {value!r}") from None


JsonNumber = Annotated[Decimal, BeforeValidator(_number)]
DecimalString = Annotated[Decimal, BeforeValidator(_decimal_string)]


class ProviderModel(BaseModel):
    """A provider's own response object: only the fields read; extra keys ignored, not trusted."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


def describe_error(exc: ValidationError) -> str:
    """A pydantic error as one line naming each bad field."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(item)"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def unknown_keys(item: Mapping, known: Iterable[str]) -> set[str]:
    return set(item) - set(known)


class JsonObject(dict):
    """A decoded JSON object that remembers keys the document repeated (json keeps the last)."""

    duplicates: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> JsonObject:
    obj = JsonObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        obj.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return obj


def read_json(response: httpx.Response, what: str) -> Any:
    """Decode a JSON answer (numbers as Decimal), failing clearly on errors and HTML pages."""
    response.read()
    if response.is_error:
        raise ScrapeError(
            f"{what}: HTTP {response.status_code} {response.reason_phrase} from "
            f"{response.request.url}{retry_note(response)}: {snippet(response.content)}"
        )
    content_type = response.headers.get("Content-Type", "")
    if "json" not in content_type.lower():
        raise ScrapeError(
            f"{what}: expected JSON from {response.request.url} but got {content_type or 'no content type'} "
            f"(HTTP {response.status_code}): {snippet(response.content)}"
        )
    try:
        return json.loads(response.content, parse_float=Decimal, object_pairs_hook=_object)
    except ValueError as exc:
        raise ScrapeError(
            f"{what}: response from {response.request.url} is not valid JSON ({exc}); "
            f"{len(response.content)} bytes, ends with {snippet(response.content[-80:])}"
        ) from None


def retry_note(response: httpx.Response) -> str:
    return " (after retries)" if response.status_code in RETRY_STATUSES else ""


def snippet(data: bytes, limit: int = 160) -> str:
    text = " ".join(data.decode("utf-8", "replace").split())
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


# How close to on-demand a spot price may come before it is taken for on-demand itself: 0.01%.
SPOT_SAME_AS_ON_DEMAND = Decimal("0.0001")
FOURTH_DECIMAL = Decimal("0.0001")


def spot_at_or_above_on_demand(
    offers: Iterable[ScrapedOffer],
) -> tuple[list[ScrapedOffer], list[RejectedRow]]:
    """Leave out every spot price at or above the on-demand price of the same type and region.

    A spot price is a discount on on-demand capacity; one at or above it is a known defect of
    the source (SkyPilot's Azure and AWS spot columns match the wrong meter for some types, and
    Azure's H100 spot meters repeat on-demand). "At" allows for rounding: AWS states spot to four
    decimals, so SkyPilot's g5.48xlarge spot 21.1776 in ap-southeast-2 is its on-demand 21.17764
    cut short. Anything within SPOT_SAME_AS_ON_DEMAND of on-demand, or within one unit of the
    fourth decimal (for prices under 1 a unit), counts as equal; no real spot discount is that
    small. The reading is named on the run, not kept as a price, and it
    protects nothing: an earlier spot offer it would have refreshed retires.
    """
    offers = list(offers)

    def key(offer: ScrapedOffer) -> tuple:
        return offer.provider, offer.sku, offer.region, offer.currency

    # Judged on the lowest reading of each side: rows that conflict with each other are left
    # whole for the writer, which refuses a conflict on its own terms.
    on_demand: dict[tuple, Decimal] = {}
    spot: dict[tuple, Decimal] = {}
    for offer in offers:
        side = on_demand if offer.kind == "on-demand" else spot if offer.kind == "spot" else None
        if side is not None:
            side[key(offer)] = min(side.get(key(offer), offer.price_per_hour), offer.price_per_hour)
    kept: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    for offer in offers:
        ceiling = on_demand.get(key(offer))
        if (
            offer.kind == "spot"
            and ceiling is not None
            and spot[key(offer)] >= ceiling - max(FOURTH_DECIMAL, ceiling * SPOT_SAME_AS_ON_DEMAND)
        ):
            rejected.append(
                RejectedRow(
                    sku=offer.sku,
                    provider=offer.provider,
                    reason=(
                        f"{offer.region}: spot {offer.price_per_hour} {offer.currency} is at or "
                        f"above on-demand {ceiling} (within rounding), a known defect of the "
                        f"source; left out"
                    ),
                )
            )
        else:
            kept.append(offer)
    return kept, rejected
