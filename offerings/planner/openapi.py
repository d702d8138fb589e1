"""`/api/plan` in the OpenAPI document (offerings/openapi.py assembles the whole)."""

from __future__ import annotations

from offerings.planner.core import MAX_GPUS
from offerings.planner.jobs import TOKENS_TOTAL_MAX

NULLABLE_INT = {"type": "integer", "nullable": True}
NULLABLE_NUMBER = {"type": "number", "nullable": True}
NULLABLE_BOOL = {"type": "boolean", "nullable": True}
NULLABLE_STRING = {"type": "string", "nullable": True}

SHAPE = {
    "type": "object",
    "required": [
        "instance",
        "nodes",
        "gpus",
        "feasible",
        "reason",
        "warnings",
        "region",
        "available",
        "price_kind",
        "term_months",
        "price_per_hour_usd",
        "price_per_gpu_hour_usd",
        "fabric",
        "fabric_gbits_per_s_per_gpu",
        "network_gbits_per_s_per_gpu",
        "one_nvlink_domain",
    ],
    "properties": {
        "instance": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "provider": {"type": "string"},
                "name": {"type": "string"},
                "url": {"type": "string", "format": "uri"},
            },
        },
        "nodes": {
            "type": "integer",
            "description": "The smallest node count whose GPUs reach the request",
        },
        "gpus": {"type": "integer", "description": "nodes x GPUs per node"},
        "feasible": {
            "type": "boolean",
            "description": "Bookable self-serve: one node, or a known self-serve multi-node "
            "fabric within its stated node limit",
        },
        "bookable": {
            **NULLABLE_BOOL,
            "description": "Bookable self-serve: true when feasible, false when a source says "
            "it cannot be, null when no source says (the shape is then not feasible either)",
        },
        "reason": {**NULLABLE_STRING, "description": "Why it is not feasible; null if it is"},
        "warnings": {
            "type": "array",
            "items": {"type": "string"},
            "description": "e.g. an unstated node limit, which leaves the shape feasible",
        },
        "region": {**NULLABLE_STRING, "description": "The price kind's cheapest matching region"},
        "available": NULLABLE_BOOL,
        "price_kind": {
            **NULLABLE_STRING,
            "enum": ["on-demand", "spot", "reserved", "capacity-block", None],
        },
        "term_months": NULLABLE_INT,
        "price_per_hour_usd": {
            **NULLABLE_NUMBER,
            "description": "nodes x the instance's price per hour; null without a price",
        },
        "price_per_gpu_hour_usd": NULLABLE_NUMBER,
        "fabric": {"type": "string", "description": "The fabric technology between nodes"},
        "fabric_gbits_per_s_per_gpu": NULLABLE_NUMBER
        | {"description": "The back-end fabric's Gb/s per GPU; null for plain Ethernet"},
        "network_gbits_per_s_per_gpu": NULLABLE_NUMBER
        | {
            "description": "The general network's Gb/s per GPU: what nodes talk over when the "
            "fabric is plain Ethernet; null when no source states it"
        },
        "one_nvlink_domain": {
            **NULLABLE_BOOL,
            "description": "Whether every GPU of the shape is in one NVLink (or Infinity "
            "Fabric) domain; null when the domain is unknown",
        },
        "fits": {
            **NULLABLE_BOOL,
            "description": "With a job: whether it fits the shape as if booked (training: the "
            "model states in GPU memory; inference: weights and KV cache in one NVLink domain). "
            "Whether the shape can be booked self-serve is `feasible` and `reason`, not this",
        },
        "job_reason": {
            "type": ["string", "null"],
            "description": "With a job that does not fit: the estimator's reason (memory, or a "
            "figure it needs that is unknown), in English; never a booking reason",
        },
        "run_hours": {
            **NULLABLE_NUMBER,
            "description": "With a training job and tokens_total: ceil(tokens_total / "
            "tokens_per_step) steps x step_s / 3600; null when the job does not fit or a "
            "figure is unknown",
        },
        "run_cost_usd": {
            **NULLABLE_NUMBER,
            "description": "With a training job and tokens_total: run_hours x "
            "price_per_hour_usd, rounded half-even to 4 decimals as every price; null without a "
            "price",
        },
        "step_s": {**NULLABLE_NUMBER, "description": "With a training job: the step time"},
        "efficiency": {**NULLABLE_NUMBER, "description": "With a training job"},
        "cost_per_billion_tokens_usd": {
            **NULLABLE_NUMBER,
            "description": "With a training job; null when the job does not fit",
        },
        "cost_per_hour_usd": {
            **NULLABLE_NUMBER,
            "description": "With an inference job: the shape's price per hour when the model "
            "fits, else null",
        },
    },
}

OPERATION = {
    "operationId": "planCluster",
    "summary": "Every shape that gives N GPUs: instance type, price kind and node count",
    "description": "One result per (instance type, price kind, term) at that kind's cheapest "
    "matching region (a type with no price gives one result without a price, unless a price "
    "filter is given), at the smallest node count whose GPUs reach `gpus`. Feasible shapes "
    "first, then by cost_per_billion_tokens_usd when a training job (params_b, mode, ...) is "
    "given, by cost_per_hour_usd for an inference job, else by price_per_hour_usd; a missing "
    "figure last; ties by instance id. A provider's stated max_self_serve_gpus (/api/providers) "
    "binds every shape of its types. Paginated like "
    "/api/instances. The listing's filters restrict the instances (max_gpu_hour and price_kind "
    "the offers); without price_kind a plan weighs on-demand, reserved and capacity-block "
    "prices only (spot capacity can be taken away mid-run: ask for it with price_kind=spot); "
    "the estimator's nodes parameter is ignored.",
}


def parameters(listing: list[dict], job: list[dict]) -> list[dict]:
    """`gpus`, `max_price_per_hour`, the listing's filters and the estimator's job parameters."""
    own = [
        {
            "name": "gpus",
            "in": "query",
            "required": True,
            "description": "GPUs needed",
            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_GPUS},
        },
        {
            "name": "tokens_total",
            "in": "query",
            "required": False,
            "allowEmptyValue": True,
            "description": "Tokens the whole training run processes; with a training job, "
            "adds run_hours and run_cost_usd to each result",
            "schema": {"type": "integer", "minimum": 1, "maximum": TOKENS_TOTAL_MAX},
        },
        {
            "name": "max_price_per_hour",
            "in": "query",
            "required": False,
            "allowEmptyValue": True,
            "description": "Budget for the whole shape, USD per hour",
            "schema": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        },
    ]
    names = {p["name"] for p in own} | {"nodes"}
    seen: set[str] = set()
    rest = []
    for parameter in [*listing, *job]:
        name = parameter["name"]
        if name in names or name in seen or name == "ids":
            continue
        seen.add(name)
        # Optional here, so an empty value means absent, as on every optional parameter.
        rest.append({**parameter, "required": False, "allowEmptyValue": True})
    return [*own, *rest]


def path_item(listing: list[dict], job: list[dict], error: dict, rate_limited: dict) -> dict:
    return {
        "get": {
            **OPERATION,
            "parameters": parameters(listing, job),
            "responses": {
                "200": {
                    "description": "A page of the ranked shapes",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["count", "next", "results", "assumptions"],
                                "properties": {
                                    "count": {"type": "integer"},
                                    "next": {"type": "string", "format": "uri", "nullable": True},
                                    "results": {"type": "array", "items": SHAPE},
                                    "assumptions": {"type": "object"},
                                },
                            }
                        }
                    },
                },
                "400": {
                    "description": "Invalid parameters (gpus is required)",
                    "content": {"application/json": {"schema": error}},
                },
                "429": rate_limited,
            },
        }
    }
