"""The MCP tools: the API's endpoints, called as tools.

Each tool runs the query its endpoint runs and answers the JSON the endpoint answers, so every
fact keeps its basis, source and date, every price its source, basis and date, and an unknown
stays null. A tool's arguments are its endpoint's query parameters, by their API names, with the
types, bounds and descriptions (units included) of the OpenAPI document (`arguments_of`): one
definition of each parameter for both. Arguments are validated twice: by their schema in the SDK,
then by the endpoint's own parser, whose messages name the parameter; either failure is a tool
error saying which argument and why, never a crash.

Links in results are on SITE_URL (a path alone where it is unset): a tool has no request whose
host could be trusted.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections
from django.db.models import F
from django.http import HttpRequest, QueryDict
from django.urls import reverse
from django.utils import timezone
from mcp.server.mcpserver.exceptions import ToolError

from offerings.estimator.collective_views import answer, parse_collective_query, sharp_fact
from offerings.estimator.views import parse_estimate_query, run_estimate
from offerings.models import InstanceType
from offerings.money import RateTable
from offerings.pages.readiness import (
    listed_providers,
    provider_path,
    serialize_readiness,
    type_facts,
)
from offerings.planner.views import (
    assumptions,
    parse_plan_query,
    plan,
    serialize_shape,
    with_page_rows,
)
from offerings.table.parameters import parse_instance_ids, parse_listing_query
from offerings.table.rows import for_serializing, serialize_instance
from offerings.table.views import page_slice, paginate
from offerings.web.caching import (
    RENDER_GROUP,
    cache_period,
    digest_of,
    site_url,
    time_bucket,
    version_key,
)
from offerings.web.middleware import retry_after

#: The IP of the client whose MCP request is being answered, set by the server's ASGI wrapper
#: (`server.mcp_app`) and carried into the tool's worker thread with the context: a call that
#: misses the kept results is a render, and counts against RENDER_RATE like a page's.
calling_client: ContextVar[str | None] = ContextVar("calling_client", default=None)

#: Parameters of the endpoints that no tool takes: a download, and the pages' display currency.
NOT_TOOL_ARGUMENTS = frozenset({"format", "currency"})


class ArgumentError(ToolError):
    """Bad arguments, each named with why."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        text = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())
        super().__init__(f"Invalid arguments. {text}")


def query_of(arguments: dict[str, Any]) -> QueryDict:
    """The endpoint's query string for a tool's arguments: lists as repeated keys, booleans as
    true/false, None left out."""
    query = QueryDict(mutable=True)
    for name, value in arguments.items():
        if value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        query.setlist(name, [_text(v) for v in values])
    return query


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def kept_result(name: str, arguments: dict[str, Any], build: Callable[..., dict]) -> dict:
    """A tool's result, kept in the response cache's store under the data version and the time
    bucket the call read, like a page: a write moves the version, so no result outlives its
    data, and prices re-read as they age. The same call again sends the version read alone. A
    tool error is raised, never kept. Links are on SITE_URL, so no request is part of the key.
    A call that has to be computed counts against the client's RENDER_RATE."""

    def computed() -> dict:
        count_render()
        return build(**arguments)

    if not settings.PAGE_CACHE_SECONDS:
        return computed()
    call = json.dumps([name, arguments], sort_keys=True, default=str)
    key = f"mcp:{version_key()}:{time_bucket()}:{digest_of(call)}"
    return cache.get_or_set(key, computed, cache_period())


class RenderLimited(ToolError):
    """This client computed more results than RENDER_RATE allows."""

    def __init__(self, wait: int) -> None:
        self.retry_after = wait
        super().__init__(
            f"Rate limited: this client asked for more results that had to be computed than "
            f"the site allows (RENDER_RATE); the same call again is answered from what is kept. "
            f"Retry after {wait} s."
        )


def client_request(client: str) -> HttpRequest:
    """A POST to /mcp from `client` (an IP), as Django's rate limiter reads a request: the MCP
    server's requests never pass through Django."""
    request = HttpRequest()
    request.method = "POST"
    request.path = request.path_info = "/mcp"
    request.META["REMOTE_ADDR"] = client
    return request


def count_render() -> None:
    """Count a computed tool result against the calling client's RENDER_RATE, the counter a
    page render that misses the response cache counts against; over it, `RenderLimited`."""
    client = calling_client.get()
    if client is None:  # not called through /mcp (a test, a shell)
        return
    wait = retry_after(client_request(client), RENDER_GROUP, settings.RENDER_RATE, "MCP render")
    if wait is not None:
        raise RenderLimited(wait)


def database_work[T](fn: Callable[..., T]) -> Callable[..., T]:
    """A tool runs in a worker thread of the SDK: like a Django request, it gives back database
    connections that are broken or past their age, before and after."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs) -> T:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return wrapper


# -- the tools' bodies ---------------------------------------------------------------------------


def _instances_by_id(value: str, minimum: int, maximum: int, name: str) -> list[InstanceType]:
    rows, errors = parse_instance_ids(
        value,
        InstanceType.objects.for_table().annotate(row_offer_id=F("best_offer_id")),
        minimum,
        maximum,
    )
    if errors:
        raise ArgumentError({name: errors})
    return rows


def _serialized(rows: Iterable[InstanceType]) -> list[dict]:
    rates = RateTable()
    now = timezone.now()
    return [serialize_instance(row, rates, now, site_url) for row in for_serializing(rows)]


def search_instances(**arguments: Any) -> dict:
    listing = parse_listing_query(query_of(arguments), InstanceType.objects.for_table())
    if not listing.is_valid:
        raise ArgumentError(listing.errors)
    page = paginate(listing)
    if page is None:
        raise ArgumentError(listing.errors)
    results = _serialized(page_slice(listing, page))
    table = query_of({k: v for k, v in arguments.items() if k not in ("page", "page_size")})
    return {
        "count": page.paginator.count,
        "page": page.number,
        "next_page": page.next_page_number() if page.has_next() else None,
        "results": results,
        "table_url": site_url(reverse("offerings:instance-list") + _query_suffix(table)),
    }


def get_instance(instance: str) -> dict:
    return _serialized(_instances_by_id(instance, 1, 1, "instance"))[0]


def compare_instances(instances: list[str]) -> dict:
    rows = _instances_by_id(",".join(instances), 2, 4, "instances")
    compare = QueryDict(mutable=True)
    compare["ids"] = ",".join(f"{row.provider.slug}/{row.slug}" for row in rows)
    by_pk = {item["id"]: item for item in _serialized(rows)}
    return {
        "results": [by_pk[row.pk] for row in rows],
        "compare_url": site_url(reverse("offerings:compare") + _query_suffix(compare)),
    }


def plan_cluster(**arguments: Any) -> dict:
    query = parse_plan_query(query_of(arguments))
    if not query.is_valid:
        raise ArgumentError(query.errors)
    page = query.listing.page_of(plan(query), query.errors)
    if page is None:
        raise ArgumentError(query.errors)
    with_page_rows(page.object_list)
    return {
        "count": page.paginator.count,
        "page": page.number,
        "next_page": page.next_page_number() if page.has_next() else None,
        "results": [serialize_shape(shape, site_url) for shape in page],
        "assumptions": assumptions(query),
    }


def estimate_job(**arguments: Any) -> dict:
    query = parse_estimate_query(query_of(arguments))
    if not query.is_valid:
        raise ArgumentError(query.errors)
    run = run_estimate(query, site_url)
    if run is None:
        raise ArgumentError(query.errors)
    return {
        "count": run.page.paginator.count,
        "page": run.page.number,
        "next_page": run.page.next_page_number() if run.page.has_next() else None,
        "results": list(run.page.object_list),
        "assumptions": run.data["assumptions"],
    }


def expected_collective(**arguments: Any) -> dict:
    query = parse_collective_query(query_of(arguments))
    if query.errors or query.instance is None:
        raise ArgumentError(query.errors or {"instance": ["This argument is required."]})
    return answer(query.instance, query, sharp_fact(query.instance), site_url)


def list_providers() -> dict:
    providers = list(listed_providers())
    facts = type_facts(providers)
    return {
        "results": [
            {
                "slug": provider.slug,
                "name": provider.name,
                "url": site_url(provider_path(provider)),
                "readiness": serialize_readiness(provider, site_url, facts[provider.pk]),
            }
            for provider in providers
        ]
    }


def _query_suffix(query: QueryDict) -> str:
    text = query.urlencode()
    return f"?{text}" if text else ""


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its body, the endpoint whose parameters it takes (None: its own), what it
    says it does."""

    name: str
    body: Callable[..., dict]
    path: str | None
    title: str
    description: str


TOOLS = (
    ToolSpec(
        "search_instances",
        search_instances,
        "/api/instances",
        "Search instance types",
        "Multi-GPU cloud instance types matching the filters of GET /api/instances (same names, "
        "same meaning), one page at a time: each with its GPU, NVLink and network facts (every "
        "fact with its basis and source), its headline price and every current price (USD, each "
        "with source_url, basis and observed_at; null when unknown). Example: gpu=['h100-sxm'], "
        "fabric=['infiniband'] for H100 types with InfiniBand between nodes.",
    ),
    ToolSpec(
        "get_instance",
        get_instance,
        None,
        "Get one instance type",
        "Every fact and price of one instance type, by its id or provider/slug "
        "(e.g. 'aws/p5-48xlarge'), in the shape of one result of GET /api/instances.",
    ),
    ToolSpec(
        "compare_instances",
        compare_instances,
        None,
        "Compare instance types",
        "Two to four instance types (ids or provider/slug) side by side, each in the shape of "
        "GET /api/instances, with the link to the site's comparison page.",
    ),
    ToolSpec(
        "plan_cluster",
        plan_cluster,
        "/api/plan",
        "Plan a GPU cluster",
        "Every way to get `gpus` GPUs on one fabric, ranked by price, as GET /api/plan answers: "
        "nodes, whether it is feasible and bookable self-serve, the price per hour in USD and "
        "the network per GPU; with a job (params_b, mode) also what it would cost.",
    ),
    ToolSpec(
        "estimate_job",
        estimate_job,
        "/api/estimate",
        "Estimate a training or inference job",
        "Step time, efficiency and cost of a training (train-ddp, train-fsdp) or inference job "
        "of params_b billion parameters on every matching type and node count, as GET "
        "/api/estimate answers, with every assumption used.",
    ),
    ToolSpec(
        "expected_collective",
        expected_collective,
        "/api/collectives",
        "Expected collective bandwidth",
        "What nccl-tests should show for one collective on N nodes of one type (bus bandwidth "
        "in GB/s, time, algorithm, NCCL protocol, bottleneck), from the model the estimator uses, "
        "with the "
        "published runs on record and the error band; as GET /api/collectives answers.",
    ),
    ToolSpec(
        "list_providers",
        list_providers,
        "/api/providers",
        "List providers and their network readiness",
        "Every provider with its network-readiness facts (fabrics, largest self-serve cluster, "
        "SHARP, managed Slurm, ...), each with its value, basis, source and date, as GET "
        "/api/providers answers.",
    ),
)
