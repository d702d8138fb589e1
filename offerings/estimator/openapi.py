"""`/api/estimate` in the OpenAPI document (offerings/openapi.py assembles the whole)."""

from __future__ import annotations

from offerings.estimator.core import (
    BATCH_MAX,
    CONTEXT_TOKENS_MAX,
    GPU_COUNTS_MAX,
    GPUS_MAX,
    KV_BYTES_MAX,
    MICRO_BATCH_TOKENS,
    MICRO_BATCH_TOKENS_MAX,
    MODES,
    NODES_MAX,
    NODES_VALUES_MAX,
    PARAMS_B_MAX,
    TOKENS_PER_STEP_MAX,
)

NULLABLE_INT = {"type": "integer", "nullable": True}
NULLABLE_NUMBER = {"type": "number", "nullable": True}
NULLABLE_STRING = {"type": "string", "nullable": True}

# The parameter names the FilterSet's form holds that are listing options, not filters; the
# estimator ignores them (its ranking is fixed and its money is USD). It reads `page` and
# `page_size` as /api/instances does.
LISTING_OPTIONS = ("format", "currency", "sort")


def _query(name: str, schema: dict, description: str, required: bool = False) -> dict:
    parameter = {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }
    if not required:  # an empty value means the parameter is absent (its default applies)
        parameter["allowEmptyValue"] = True
    return parameter


def estimate_parameters(listing: list[dict]) -> list[dict]:
    """The filters (restricting the instances), `page` and `page_size`, `ids` and the job.

    `listing` is the listing's parameters, as `offerings/table/openapi.py` builds them from the
    FilterSet.
    """
    filters = [p for p in listing if p["name"] not in LISTING_OPTIONS]
    open_low = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    return [
        *filters,
        _query(
            "ids",
            {"type": "string", "maxLength": 10000},
            "Only these instances: comma-separated, each an id or `provider/slug` (at most "
            "100); an unknown one is invalid.",
        ),
        _query(
            "params_b",
            open_low | {"maximum": PARAMS_B_MAX},
            "Model parameters, in billions.",
            required=True,
        ),
        _query(
            "mode",
            {"type": "string", "enum": list(MODES)},
            "train-ddp (replicated, one gradient all-reduce), train-fsdp (fully sharded: "
            "reduce-scatter plus two parameter all-gathers) or inference (weights plus KV cache "
            "in one NVLink domain).",
            required=True,
        ),
        _query(
            "bytes_per_param",
            open_low | {"maximum": 16, "default": 2},
            "Bytes per parameter of weights and gradients (2: bf16).",
        ),
        _query(
            "tokens_per_step",
            {"type": "integer", "minimum": 1, "maximum": TOKENS_PER_STEP_MAX, "default": 4194304},
            "Tokens per training step (global batch).",
        ),
        {
            **_query(
                "nodes",
                {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1, "maximum": NODES_MAX},
                    "maxItems": NODES_VALUES_MAX,
                    "default": [1, 2, 4, 8, 16],
                },
                "Node counts to estimate, one repeated key each.",
            ),
            "style": "form",
            "explode": True,
        },
        {
            **_query(
                "gpus",
                {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1, "maximum": GPUS_MAX},
                    "maxItems": GPU_COUNTS_MAX,
                },
                "GPU counts wanted, one repeated key each, instead of nodes (not both): each "
                "instance is estimated at ceil(GPUs / its GPUs per node) nodes for each count, "
                "as /api/plan counts them.",
            ),
            "style": "form",
            "explode": True,
        },
        _query(
            "mfu",
            {"type": "number", "minimum": 0.001, "maximum": 1, "default": 0.4},
            "Model FLOPs utilisation: the share of dense BF16 peak the compute reaches.",
        ),
        _query(
            "overlap",
            {"type": "number", "minimum": 0, "maximum": 1, "default": 0},
            "Share of communication hidden behind compute.",
        ),
        _query(
            "context_tokens",
            {"type": "integer", "minimum": 1, "maximum": CONTEXT_TOKENS_MAX, "default": 4096},
            "Inference: context length in tokens.",
        ),
        _query(
            "batch",
            {"type": "integer", "minimum": 1, "maximum": BATCH_MAX, "default": 1},
            "Inference: sequences served at once.",
        ),
        _query(
            "kv_bytes_per_token",
            {"type": "integer", "minimum": 1, "maximum": KV_BYTES_MAX, "default": 327680},
            "Inference: KV cache bytes per token (default: a 70B grouped-query-attention model "
            "at 2 bytes).",
        ),
        _query(
            "micro_batch_tokens",
            {
                "type": "integer",
                "minimum": 1,
                "maximum": MICRO_BATCH_TOKENS_MAX,
                "default": MICRO_BATCH_TOKENS,
            },
            "Training: tokens per GPU per forward and backward pass (one micro-batch). A step "
            "runs micro_batches = max(1, ceil(tokens_per_step / (GPUs x micro_batch_tokens))) "
            "of them; train-ddp all-reduces the gradients once per step, train-fsdp all-gathers "
            "the parameters in the forward and the backward pass and reduce-scatters the "
            "gradients for every micro-batch.",
        ),
    ]


ESTIMATE_RESULT = {
    "type": "object",
    "description": "One (instance, node count). Times in seconds, bandwidths in GB/s per GPU "
    "per direction after the efficiency factor, money in USD; every float rounded to 6 "
    "significant digits. null: not computed (unknown input, or not meaningful for the mode).",
    "required": [
        "instance",
        "nodes",
        "gpus",
        "fits",
        "reason",
        "compute_s",
        "comm_intra_s",
        "comm_inter_s",
        "step_s",
        "efficiency",
        "cost_per_step_usd",
        "cost_per_billion_tokens_usd",
        "intra_gbytes_per_s_per_gpu",
        "inter_gbytes_per_s_per_gpu",
        "verdict",
        "micro_batches",
    ],
    "properties": {
        "instance": {
            "type": "object",
            "required": ["id", "provider", "name", "url"],
            "properties": {
                "id": {"type": "integer"},
                "provider": {"type": "string"},
                "name": {"type": "string"},
                "url": {"type": "string", "format": "uri"},
            },
        },
        "nodes": {"type": "integer", "minimum": 1},
        "gpus": {"type": "integer", "minimum": 1},
        "fits": {"type": "boolean"},
        "reason": NULLABLE_STRING,
        "compute_s": NULLABLE_NUMBER,
        "comm_intra_s": NULLABLE_NUMBER,
        "comm_inter_s": NULLABLE_NUMBER,
        "comm_s": NULLABLE_NUMBER,
        "step_s": NULLABLE_NUMBER,
        "efficiency": {"type": "number", "nullable": True, "minimum": 0, "maximum": 1},
        "cost_per_step_usd": NULLABLE_NUMBER,
        "cost_per_billion_tokens_usd": NULLABLE_NUMBER,
        "cost_per_hour_usd": NULLABLE_NUMBER,
        "intra_gbytes_per_s_per_gpu": NULLABLE_NUMBER,
        "inter_gbytes_per_s_per_gpu": NULLABLE_NUMBER,
        "intra_link": NULLABLE_STRING,
        "inter_link": NULLABLE_STRING,
        "group_gpus": {"type": "integer"},
        "groups": {"type": "integer"},
        "bottleneck": {
            "type": "string",
            "nullable": True,
            "enum": ["compute", "intra", "inter", None],
        },
        "memory_per_gpu_gib": NULLABLE_NUMBER,
        "memory_limit_gib": NULLABLE_NUMBER,
        "missing": {"type": "array", "items": {"type": "string"}},
        "verdict": {"type": "string"},
        "micro_batches": {
            "type": "integer",
            "nullable": True,
            "minimum": 1,
            "description": "Training: forward and backward passes per step, max(1, "
            "ceil(tokens_per_step / (gpus x micro_batch_tokens))); null for inference.",
        },
        "domain_gpus": NULLABLE_INT,
        "needed_gib": NULLABLE_NUMBER,
        "nodes_needed": NULLABLE_INT,
        "tp_comm_s_per_token": NULLABLE_NUMBER,
        "tp_fabric_s_per_token": NULLABLE_NUMBER,
    },
}

ESTIMATE_OPERATION = {
    "operationId": "estimateJob",
    "summary": "Time, efficiency and cost of a job on each matching instance and node count",
    "description": "Paginated like /api/instances (page, page_size up to 200, count and next), "
    "with one ranking across the pages, in three tiers: (1) fits and has a cost, by "
    "cost_per_billion_tokens_usd ascending (inference, which has no token cost: by "
    "cost_per_hour_usd); (2) fits, no price; (3) does not fit or cannot be estimated, each with "
    "reason or missing; ties by instance id, then nodes. Training: one result per (instance, "
    "node count); inference: one result per instance, at the smallest requested node count "
    "that fits, or, when none fits, one result with the reason. The filters restrict the "
    "instances; format, currency and sort are ignored.",
}


def path_item(listing: list[dict], error: dict, rate_limited: dict) -> dict:
    return {
        "get": {
            **ESTIMATE_OPERATION,
            "parameters": estimate_parameters(listing),
            "responses": {
                "200": {
                    "description": "A page of the ranked results, and every parameter "
                    "and constant the estimate used",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["count", "next", "results", "assumptions"],
                                "properties": {
                                    "count": {
                                        "type": "integer",
                                        "description": "Results on every page",
                                    },
                                    "next": {
                                        "type": "string",
                                        "format": "uri",
                                        "nullable": True,
                                    },
                                    "results": {"type": "array", "items": ESTIMATE_RESULT},
                                    "assumptions": {"type": "object"},
                                },
                            }
                        }
                    },
                },
                "400": {
                    "description": "Invalid parameters (params_b and mode are required; "
                    "a page past the last is invalid)",
                    "content": {"application/json": {"schema": error}},
                },
                "429": rate_limited,
            },
        }
    }
