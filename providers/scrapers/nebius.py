"""Nebius AI Cloud: on-demand and spot (preemptible) prices of multi-GPU VM presets, over gRPC.

Nebius serves its API only over gRPC; the calls go through `providers.grpc` on the one httpx
client, with the `nebius` SDK's generated message classes. Needs NEBIUS_SERVICE_ACCOUNT_ID,
NEBIUS_PUBLIC_KEY_ID and NEBIUS_PRIVATE_KEY (a service account's key pair); without them the
provider is skipped. The service account signs a short-lived JWT (RS256, `kid` = the public key
id) and exchanges it for an IAM token (`TokenExchangeService.Exchange`), as the SDK does.

Then: the tenants and projects the account sees (`TenantService.List`, `ProjectService.List`;
one project per region, its `status.region`), each region's platforms with their presets
(`PlatformService.List(parent_id=project)`), and one price estimate per multi-GPU preset
(`CalculatorService.Estimate` with a `CreateInstanceRequest` for `platform` + `preset`; again
with `preemptible` set for the spot price, where the platform allows preemptibles). The
estimate's hourly cost is a decimal string without a currency; Nebius bills in US dollars, so
that is the currency recorded. A platform_preset maps to the curated instance type
"<platform> <preset>" by the contract's slug rule; anything not curated goes to the review queue.
"""

from __future__ import annotations

import time
from decimal import Decimal, InvalidOperation

import httpx
import jwt
from nebius.api.nebius.billing import v1alpha1 as billing
from nebius.api.nebius.common import v1 as common
from nebius.api.nebius.compute import v1 as compute
from nebius.api.nebius.iam import v1 as iam
from pydantic import ValidationError

from offerings.schemas import RejectedRow, ScrapeBatch, ScrapedOffer, instance_slug
from providers import grpc
from providers.base import REDACTED, ScrapeContext, ScrapeError, describe_error

SLUG = "nebius"
# Service addresses as the SDK's resolver (`nebius.base.resolver.Conventional`) derives them:
# `<service or api_service_name>.api.nebius.cloud`.
DOMAIN = "api.nebius.cloud"
TOKEN_HOST = f"tokens.iam.{DOMAIN}"
IAM_HOST = f"cpl.iam.{DOMAIN}"
COMPUTE_HOST = f"compute.{DOMAIN}"
CALCULATOR_HOST = f"api.calculator.billing-data-plane.{DOMAIN}"
# The audience the SDK's ServiceAccount requester puts in the JWT it exchanges.
JWT_AUDIENCE = "token-service.iam.new.nebiuscloud.net"
JWT_TTL_S = 60
PAGE_SIZE = 100
CURRENCY = "USD"  # the calculator's CostBreakdown carries no currency; Nebius bills in USD

# Reference: https://github.com/nebius/api/blob/main/nebius/iam/v1/token_exchange_service.proto
EXCHANGE = grpc.unary_method(
    TOKEN_HOST,
    "nebius.iam.v1.TokenExchangeService",
    "Exchange",
    iam.ExchangeTokenRequest,
    iam.CreateTokenResponse,
)
# Reference: https://github.com/nebius/api/blob/main/nebius/iam/v1/tenant_service.proto
LIST_TENANTS = grpc.unary_method(
    IAM_HOST, "nebius.iam.v1.TenantService", "List", iam.ListTenantsRequest, iam.ListTenantsResponse
)
# Reference: https://github.com/nebius/api/blob/main/nebius/iam/v1/project_service.proto
LIST_PROJECTS = grpc.unary_method(
    IAM_HOST,
    "nebius.iam.v1.ProjectService",
    "List",
    iam.ListProjectsRequest,
    iam.ListProjectsResponse,
)
# Reference: https://github.com/nebius/api/blob/main/nebius/compute/v1/platform_service.proto
LIST_PLATFORMS = grpc.unary_method(
    COMPUTE_HOST,
    "nebius.compute.v1.PlatformService",
    "List",
    compute.ListPlatformsRequest,
    compute.ListPlatformsResponse,
)
# Reference: https://github.com/nebius/api/blob/main/nebius/billing/v1alpha1/calculator_service.proto
ESTIMATE = grpc.unary_method(
    CALCULATOR_HOST,
    "nebius.billing.v1alpha1.CalculatorService",
    "Estimate",
    billing.EstimateRequest,
    billing.EstimateResponse,
)
SOURCE_URL = ESTIMATE.url

# platform_preset -> curated instance slug, where the slug rule on "<platform> <preset>" does not
# give it (fixtures/providers/nebius.toml names its types that way, so none is needed yet).
INSTANCE_SLUGS: dict[str, str] = {}

# Platform -> GPU slug, for what the review queue shows.
GPU_SLUGS = {
    "gpu-h100-sxm": "h100-sxm",
    "gpu-h200-sxm": "h200-sxm",
    "gpu-b200-sxm": "b200",
    "gpu-b200-sxm-a": "b200",
    "gpu-b300-sxm": "b300",
    "gpu-l40s-a": "l40s",
    "gpu-l40s-d": "l40s",
}

REGION_NAMES = {
    "eu-north1": "Finland",
    "eu-north2": "Iceland",
    "eu-west1": "Paris",
    "me-west1": "Israel",
    "uk-south1": "United Kingdom",
    "us-central1": "Kansas City",
}
REGION_GEO_PREFIXES = (("eu-", "eu"), ("uk-", "eu"), ("us-", "na"), ("me-", "me"))


def sku(platform: str, preset: str) -> str:
    return f"{platform}_{preset}"


def mapped_slug(platform: str, preset: str) -> str:
    return INSTANCE_SLUGS.get(sku(platform, preset)) or instance_slug(f"{platform} {preset}")


def geo_for(region: str) -> str:
    return next((geo for prefix, geo in REGION_GEO_PREFIXES if region.startswith(prefix)), "")


# -- auth -----------------------------------------------------------------------------------------


def subject_token(ctx: ScrapeContext) -> str:
    """The service account's signed JWT; REDACTED in a replay (the recordings hold that)."""
    account = ctx.credentials.get("NEBIUS_SERVICE_ACCOUNT_ID", "")
    key_id = ctx.credentials.get("NEBIUS_PUBLIC_KEY_ID", "")
    private_key = ctx.credentials.get("NEBIUS_PRIVATE_KEY", "")
    if not (account and key_id and private_key):
        return REDACTED
    now = int(time.time())
    claims = {
        "iss": account,
        "sub": account,
        "aud": JWT_AUDIENCE,
        "iat": now,
        "exp": now + JWT_TTL_S,
    }
    try:
        return jwt.encode(claims, private_key, algorithm="RS256", headers={"kid": key_id})
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        raise ScrapeError(
            f"nebius: NEBIUS_PRIVATE_KEY is not a usable RSA private key ({type(exc).__name__})"
        ) from None


def exchange_request(token: str) -> iam.ExchangeTokenRequest:
    return iam.ExchangeTokenRequest(
        grant_type="urn:ietf:params:oauth:grant-type:token-exchange",
        requested_token_type="urn:ietf:params:oauth:token-type:access_token",
        subject_token=token,
        subject_token_type="urn:ietf:params:oauth:token-type:jwt",
    )


def _get_token(client: httpx.Client, ctx: ScrapeContext) -> str:
    answer = grpc.call_unary(
        client, EXCHANGE, exchange_request(subject_token(ctx)), what="nebius token exchange"
    )
    if answer.token_type != "Bearer" or not answer.access_token:
        raise ScrapeError(
            f"nebius token exchange: expected a Bearer access token, got token type "
            f"{answer.token_type!r}{'' if answer.access_token else ' and no token'}"
        )
    return answer.access_token


# -- listings -------------------------------------------------------------------------------------


def _list_all(client: httpx.Client, method: grpc.UnaryMethod, build, what: str, token: str):
    """Every item of a paged List call; a page token seen twice is a paging loop."""
    items: list = []
    page_token = ""
    seen: set[str] = set()
    while True:
        answer = grpc.call_unary(client, method, build(page_token), what=what, token=token)
        items += list(answer.items)
        page_token = answer.next_page_token
        if not page_token:
            return items
        if page_token in seen:
            raise ScrapeError(f"{what}: paging loop (page token {page_token!r} came back)")
        seen.add(page_token)


def _get_tenants(client: httpx.Client, token: str) -> list:
    def build(page_token: str) -> iam.ListTenantsRequest:
        return iam.ListTenantsRequest(page_size=PAGE_SIZE, page_token=page_token)

    return _list_all(client, LIST_TENANTS, build, "nebius tenants", token)


def _get_projects(client: httpx.Client, token: str, tenant_id: str) -> list:
    def build(page_token: str) -> iam.ListProjectsRequest:
        return iam.ListProjectsRequest(
            parent_id=tenant_id, page_size=PAGE_SIZE, page_token=page_token
        )

    return _list_all(client, LIST_PROJECTS, build, f"nebius projects of {tenant_id}", token)


def _get_platforms(client: httpx.Client, token: str, project_id: str, region: str) -> list:
    def build(page_token: str) -> compute.ListPlatformsRequest:
        return compute.ListPlatformsRequest(
            parent_id=project_id, page_size=PAGE_SIZE, page_token=page_token
        )

    return _list_all(client, LIST_PLATFORMS, build, f"nebius platforms in {region}", token)


def project_regions(projects: list, wanted: tuple[str, ...] = ()) -> dict[str, str]:
    """Region -> the first project (by id) there; only the wanted regions when some are named."""
    regions: dict[str, str] = {}
    for project in sorted(projects, key=lambda p: p.metadata.id):
        region = project.status.region or project.spec.region
        if region and (not wanted or region in wanted):
            regions.setdefault(region, project.metadata.id)
    return dict(sorted(regions.items()))


# -- prices ---------------------------------------------------------------------------------------


def estimate_request(
    project_id: str, platform: str, preset: str, spot: bool
) -> billing.EstimateRequest:
    """What a VM of this platform and preset would cost in the project, preemptible for spot."""
    spec = compute.InstanceSpec(resources=compute.ResourcesSpec(platform=platform, preset=preset))
    if spot:
        spec.preemptible = compute.PreemptibleSpec(
            on_preemption=compute.PreemptibleSpec.PreemptionPolicy.STOP
        )
    instance = compute.CreateInstanceRequest(
        metadata=common.ResourceMetadata(parent_id=project_id), spec=spec
    )
    return billing.EstimateRequest(
        resource_spec=billing.ResourceSpec(compute_instance_spec=instance)
    )


def parse_estimate(answer: billing.EstimateResponse) -> Decimal:
    """The hourly cost of an estimate; ValueError when it has none or it is not a number."""
    cost = answer.hourly_cost.general.total.cost.strip()
    if not cost:
        raise ValueError("the estimate has no hourly cost")
    try:
        price = Decimal(cost)
    except InvalidOperation:
        raise ValueError(
            f"hourly cost {cost!r} is not a decimal number (the calculator states no currency; "
            f"{CURRENCY} is assumed)"
        ) from None
    if not price.is_finite():
        raise ValueError(f"hourly cost {cost!r} is not a finite number")
    return price


def multi_gpu_presets(platform) -> list[tuple[str, object]]:
    """(preset name, preset) of the platform's presets with at least two GPUs."""
    return [(p.name, p) for p in platform.spec.presets if p.resources.gpu_count >= 2]


def parse_offer(
    platform: str, preset, region: str, kind: str, price: Decimal
) -> ScrapedOffer | RejectedRow:
    """One price of one platform preset in one region."""
    name = preset.name
    parsed = {
        "platform": platform,
        "preset": name,
        "gpu": GPU_SLUGS.get(platform),
        "gpu_count": preset.resources.gpu_count,
        "vcpus": preset.resources.vcpu_count,
        "memory_gib": preset.resources.memory_gibibytes,
    }
    try:
        return ScrapedOffer(
            sku=sku(platform, name),
            instance_slug=mapped_slug(platform, name),
            region=region,
            region_name=REGION_NAMES.get(region, ""),
            geo=geo_for(region),
            kind=kind,
            price_per_hour=price,
            currency=CURRENCY,
            source_url=SOURCE_URL,
            parsed=parsed,
        )
    except ValidationError as exc:
        return _rejected(platform, name, region, kind, describe_error(exc))


def _rejected(platform: str, preset: str, region: str, kind: str, reason: str) -> RejectedRow:
    return RejectedRow(
        sku=sku(platform, preset),
        reason=reason,
        instance_slug=mapped_slug(platform, preset),
        region=region,
        kind=kind,
    )


def _price(
    client: httpx.Client, token: str, project_id: str, platform: str, preset, region: str, kind: str
) -> ScrapedOffer | RejectedRow:
    request = estimate_request(project_id, platform, preset.name, spot=kind == "spot")
    what = f"nebius {kind} estimate of {sku(platform, preset.name)} in {region}"
    try:
        answer = grpc.call_unary(client, ESTIMATE, request, what=what, token=token)
        price = parse_estimate(answer)
    except grpc.GrpcStatusError as exc:  # the calculator refused this one preset: keep its price
        return _rejected(platform, preset.name, region, kind, str(exc))
    except ValueError as exc:
        return _rejected(platform, preset.name, region, kind, f"{what}: {exc}")
    return parse_offer(platform, preset, region, kind, price)


def fetch(client: httpx.Client, ctx: ScrapeContext) -> ScrapeBatch:
    """Every multi-GPU preset of every platform in each region's project, on-demand and spot."""
    ctx.progress("nebius: token")
    token = _get_token(client, ctx)
    ctx.progress("nebius: projects")
    projects = []
    for tenant in _get_tenants(client, token):
        projects += _get_projects(client, token, tenant.metadata.id)
    regions = project_regions(projects, ctx.regions)
    if not regions:
        raise ScrapeError(
            "nebius projects: the service account sees no project in a region to price"
        )
    catalog = {}
    for region, project_id in regions.items():
        ctx.progress(f"nebius: platforms in {region}")
        catalog[region] = _get_platforms(client, token, project_id, region)
    offers: list[ScrapedOffer] = []
    rejected: list[RejectedRow] = []
    for region, platforms in catalog.items():
        for platform in platforms:
            name = platform.metadata.name
            kinds = ["on-demand"] + (["spot"] if platform.status.allowed_for_preemptibles else [])
            for preset_name, preset in multi_gpu_presets(platform):
                if not preset_name:
                    rejected.append(
                        RejectedRow(
                            sku=name, reason=f"platform {name} lists a preset without a name"
                        )
                    )
                    continue
                ctx.progress(f"nebius: {sku(name, preset_name)} in {region}")
                for kind in kinds:
                    row = _price(client, token, regions[region], name, preset, region, kind)
                    (offers if isinstance(row, ScrapedOffer) else rejected).append(row)
    return ScrapeBatch(offers=tuple(offers), rejected=tuple(rejected), warnings=tuple(ctx.warnings))
