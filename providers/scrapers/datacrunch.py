"""Verda (formerly DataCrunch) public API: on-demand and spot prices of multi-GPU instance types.

Needs DATACRUNCH_CLIENT_ID and DATACRUNCH_CLIENT_SECRET (OAuth2 client credentials, exchanged for
a Bearer token); without them the provider is skipped. `GET /instance-types` gives each type's
price per instance-hour (`price_per_hour`, `spot_price`, both decimal strings, in `currency`);
prices are the same in every location, so each multi-GPU type is offered in every location of
`GET /locations`, `available` telling whether `GET /instance-availability` lists it there now
(asked once for on-demand and once for spot). Single-GPU and CPU types are outside the catalog.
"""

from __future__ import annotations

import httpx
from pydantic import ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from providers.base import (
    REDACTED,
    DecimalString,
    ProviderModel,
    ScrapeContext,
    ScrapeError,
    describe_error,
    read_json,
)

SLUG = "datacrunch"
API_URL = "https://api.datacrunch.io/v1"
SOURCE_URL = f"{API_URL}/instance-types"

# API instance type -> curated instance slug (fixtures/providers/datacrunch.toml). The names
# encode count, GPU, memory and vCPUs (`8H100.80S.176V`); one not listed maps by the contract's
# slug rule (2A6000.20V -> 2a6000-20v) and goes to the review queue when nothing is curated
# under that slug.
INSTANCE_SLUGS = {
    "2A6000.20V": "2a6000-20v",
}

# (API `model`, GPU memory GB) -> GPU slug, for what the review queue shows. Verda's `model`
# does not say SXM or PCIe; the instance-type name's "S" after the memory does (80S = SXM).
GPU_SLUGS = {
    ("RTX A6000", 48): "rtx-a6000",
    ("RTX 6000 Ada", 48): "rtx-6000-ada",
    ("Tesla V100", 16): "v100-sxm2-16gb",
    ("L40S", 48): "l40s",
    ("A100", 40): "a100-sxm-40gb",
    ("A100", 80): "a100-sxm-80gb",
    ("H100", 80): "h100-sxm",
    ("H200", 141): "h200-sxm",
    ("B200", 180): "b200",
    ("B300", 288): "b300",
    ("GB200", 186): "gb200",
}

COUNTRY_GEO = {
    "FI": "eu",
    "IS": "eu",
    "SE": "eu",
    "NO": "eu",
    "DE": "eu",
    "NL": "eu",
    "FR": "eu",
    "GB": "eu",
    "US": "na",
    "CA": "na",
}

# Documented instance-type fields (API_NOTES.md section 8); others are drift worth a warning.
TYPE_FIELDS = frozenset(
    {
        "id",
        "instance_type",
        "name",
        "model",
        "description",
        "display_name",
        "manufacturer",
        "best_for",
        "cpu",
        "gpu",
        "gpu_memory",
        "memory",
        "storage",
        "p2p",
        "price_per_hour",
        "spot_price",
        "currency",
        "supported_os",
        "deploy_warning",
    }
)


class VerdaToken(ProviderModel):
    access_token: str
    token_type: str = "Bearer"


class VerdaLocation(ProviderModel):
    code: str
    name: str = ""
    country_code: str = ""


class VerdaAvailability(ProviderModel):
    location_code: str
    availabilities: list[str]


class VerdaGpu(ProviderModel):
    description: str
    number_of_gpus: int


class VerdaSize(ProviderModel):
    description: str = ""
    size_in_gigabytes: int | None = None


class VerdaCpu(ProviderModel):
    number_of_cores: int


class VerdaInstanceType(ProviderModel):
    instance_type: str
    model: str
    cpu: VerdaCpu
    gpu: VerdaGpu
    gpu_memory: VerdaSize
    memory: VerdaSize
    p2p: str | None = None
    price_per_hour: DecimalString
    spot_price: DecimalString | None = None
    currency: str


def mapped_slug(name: str) -> str:
    return INSTANCE_SLUGS.get(name) or instance_slug(name)


def credentials(api_key: str) -> tuple[str, str]:
    """(client id, client secret) from the registry's "id:secret"; a replay sends REDACTED."""
    client_id, sep, secret = api_key.partition(":")
    if not sep:
        # A replay has no credentials: a recording holds the pair as REDACTED (replay.py).
        return REDACTED, REDACTED
    return client_id, secret


def _read_list(response: httpx.Response, what: str) -> list:
    data = read_json(response, what)
    if not isinstance(data, list):
        raise ScrapeError(f"{what}: expected a JSON list, got {type(data).__name__}")
    return data


def _validated(model, raw: list, what: str) -> list:
    try:
        return [model.model_validate(item) for item in raw]
    except ValidationError as exc:
        raise ScrapeError(f"{what}: {describe_error(exc)}") from None


def _get_token(client: httpx.Client, ctx: ScrapeContext) -> str:
    # Reference: https://api.datacrunch.io/v1/docs#tag/Authentication/paths/~1v1~1oauth2~1token/post
    client_id, secret = credentials(ctx.api_key)
    body = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    data = read_json(client.post(f"{API_URL}/oauth2/token", json=body), "datacrunch token")
    try:
        return VerdaToken.model_validate(data).access_token
    except ValidationError as exc:
        raise ScrapeError(f"datacrunch token: {describe_error(exc)}") from None


def _get_locations(client: httpx.Client, token: str) -> list[VerdaLocation]:
    # Reference: https://api.datacrunch.io/v1/docs#tag/Locations
    response = client.get(f"{API_URL}/locations", headers=_auth(token))
    return _validated(VerdaLocation, _read_list(response, "datacrunch locations"), "locations")


def _get_instance_types(client: httpx.Client, token: str) -> list:
    # Reference: https://api.datacrunch.io/v1/docs#tag/Instance-Types
    response = client.get(f"{API_URL}/instance-types", headers=_auth(token))
    return _read_list(response, "datacrunch instance types")


def _get_availability(client: httpx.Client, token: str, spot: bool) -> dict[str, set[str]]:
    # Reference: https://api.datacrunch.io/v1/docs#tag/Instance-Availability
    what = f"datacrunch {'spot' if spot else 'on-demand'} availability"
    response = client.get(
        f"{API_URL}/instance-availability",
        params={"is_spot": "true" if spot else "false"},
        headers=_auth(token),
    )
    rows = _validated(VerdaAvailability, _read_list(response, what), what)
    return {row.location_code: set(row.availabilities) for row in rows}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def parse_instance_type(
    raw: object,
    locations: list[VerdaLocation],
    available: dict[str, dict[str, set[str]]],
) -> list[ScrapedOffer] | list[RejectedRow] | None:
    """One instance type -> on-demand and spot offers per location, rejected rows, or None."""
    name = raw.get("instance_type") if isinstance(raw, dict) else None
    name = name if isinstance(name, str) else ""
    if name not in INSTANCE_SLUGS and _stated_gpu_count(raw) < 2:
        return None  # single-GPU and CPU-only types are outside the catalog's scope
    try:
        kind = VerdaInstanceType.model_validate(raw)
    except ValidationError as exc:
        return _rejected(name, describe_error(exc), locations)
    prices = {"on-demand": kind.price_per_hour}
    if kind.spot_price is not None:
        prices["spot"] = kind.spot_price
    memory = kind.gpu_memory.size_in_gigabytes
    per_gpu_memory = (
        memory // kind.gpu.number_of_gpus if memory and kind.gpu.number_of_gpus else None
    )
    parsed = {
        "model": kind.model,
        "gpu": GPU_SLUGS.get((kind.model, per_gpu_memory)),
        "gpu_description": kind.gpu.description,
        "gpu_count": kind.gpu.number_of_gpus,
        "vcpus": kind.cpu.number_of_cores,
        "memory_gb": kind.memory.size_in_gigabytes,
        "p2p": kind.p2p,
    }
    offers = []
    for location in locations:
        for price_kind, price in prices.items():
            try:
                offers.append(
                    ScrapedOffer(
                        sku=kind.instance_type,
                        instance_slug=mapped_slug(kind.instance_type),
                        region=location.code,
                        region_name=location.name,
                        geo=COUNTRY_GEO.get(location.country_code, ""),
                        kind=price_kind,
                        price_per_hour=price,
                        currency=kind.currency.upper(),
                        available=kind.instance_type
                        in available[price_kind].get(location.code, set()),
                        source_url=SOURCE_URL,
                        parsed=parsed,
                    )
                )
            except ValidationError as exc:
                return _rejected(kind.instance_type, describe_error(exc), locations)
    return offers


def _stated_gpu_count(raw: object) -> int:
    """The GPU count a raw type states, or 2 when unreadable (so validation reports it)."""
    gpu = raw.get("gpu") if isinstance(raw, dict) else None
    count = gpu.get("number_of_gpus") if isinstance(gpu, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else 2


def _rejected(name: str, reason: str, locations: list[VerdaLocation]) -> list[RejectedRow]:
    """A rejected row per offer the type would have given, so each keeps its stored price."""
    if not name:
        return [RejectedRow(reason=reason)]
    return [
        RejectedRow(
            sku=name,
            reason=reason,
            instance_slug=mapped_slug(name),
            region=location.code,
            kind=kind,
        )
        for location in locations
        for kind in ("on-demand", "spot")
    ]


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every multi-GPU instance type in every location, with its availability there."""
    ctx.progress("datacrunch: token")
    token = _get_token(client, ctx)
    ctx.progress("datacrunch: locations")
    locations = _get_locations(client, token)
    if not locations:
        raise ScrapeError("datacrunch locations: the list is empty")
    ctx.progress("datacrunch: instance types")
    types = _get_instance_types(client, token)
    ctx.progress("datacrunch: availability")
    available = {
        "on-demand": _get_availability(client, token, spot=False),
        "spot": _get_availability(client, token, spot=True),
    }
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    names = [t.get("instance_type") for t in types if isinstance(t, dict)]
    repeated = {n for n in names if isinstance(n, str) and names.count(n) > 1}
    for raw in types:
        if isinstance(raw, dict) and set(raw) - TYPE_FIELDS:
            ctx.warn(
                f"datacrunch: undocumented instance type field(s) {sorted(set(raw) - TYPE_FIELDS)}"
            )
        name = raw.get("instance_type") if isinstance(raw, dict) else None
        if name in repeated:
            # The answer lists this type more than once: trust no copy, keep the stored prices.
            reason = "instance type listed more than once in the answer; stored prices kept"
            rejected += _rejected(name, reason, locations)
            continue
        result = parse_instance_type(raw, locations, available)
        for row in result or ():
            (offers if isinstance(row, ScrapedOffer) else rejected).append(row)
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
