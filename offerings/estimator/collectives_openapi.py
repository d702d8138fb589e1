"""`/api/collectives` in the OpenAPI document (offerings/openapi.py assembles the whole)."""

from __future__ import annotations

from offerings.estimator.core import NODES_MAX
from offerings.estimator.nccl import ALGORITHMS, COLLECTIVES

DEFAULT_MESSAGE_BYTES = 2**30
MESSAGE_BYTES_MAX = 2**40  # 1 TiB: nccl-tests' largest runs are a few GiB

NUMBER = {"type": "number", "nullable": True}
FACT = {
    "type": "object",
    "required": ["fact", "value", "basis", "source_url", "verified_at"],
    "properties": {
        "fact": {"type": "string", "description": "e.g. nvlink.bandwidth_gbytes_per_s"},
        "value": {},
        "basis": {"type": "string", "nullable": True},
        "source_url": {"type": "string", "format": "uri", "nullable": True},
        "verified_at": {"type": "string", "format": "date", "nullable": True},
    },
}
STAGE = {
    "type": "object",
    "properties": {
        "stage": {"type": "string", "enum": ["link", "network"]},
        "kind": {"type": "string", "description": "The efficiency factor's link kind"},
        "bytes": {
            "type": "number",
            "description": "Per GPU over a link, per group over the network",
        },
        "bandwidth_gbytes_per_s": {"type": "number", "description": "After efficiency"},
        "latency_steps": {"type": "number"},
        "seconds": {"type": "number"},
    },
}
ERROR_BAND = {
    "type": "object",
    "nullable": True,
    "description": "The model's error on published results it was not fitted to (held out by "
    "source and configuration) on the answer's link kind and message size class: busbw times the "
    "10th and 90th percentile of published / model, so four in five of them fell inside, widened "
    "to hold busbw itself, capped at line rate. With fewer than five such results, the bounds "
    "are null.",
    "properties": {
        "kind": {"type": "string"},
        "message_sizes": {
            "type": "string",
            "enum": ["small", "large"],
            "description": "The held-out results the band is taken from: below 256 MiB, or "
            "256 MiB and larger, as the answer's message",
        },
        "held_out_points": {"type": "integer"},
        "median_error": NUMBER,
        "worst_error": NUMBER,
        "low_gbytes_per_s": NUMBER,
        "high_gbytes_per_s": NUMBER,
        "fitted": {"type": "boolean", "description": "False: the kind's factor is not fitted"},
    },
}


def _query(name: str, schema: dict, description: str, required: bool = False) -> dict:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


PARAMETERS = [
    _query(
        "instance",
        {"type": "string"},
        "The instance type: its id or provider/slug (e.g. aws/p5-48xlarge)",
        required=True,
    ),
    _query(
        "collective",
        {"type": "string", "enum": list(COLLECTIVES), "default": "all_reduce"},
        "nccl-tests' collective",
    ),
    _query(
        "nodes",
        {"type": "integer", "minimum": 1, "maximum": NODES_MAX, "default": 1},
        "Nodes of the type",
    ),
    _query(
        "message_bytes",
        {
            "type": "integer",
            "minimum": 1,
            "maximum": MESSAGE_BYTES_MAX,
            "default": DEFAULT_MESSAGE_BYTES,
        },
        "The message size as nccl-tests prints it (the whole buffer)",
    ),
    _query(
        "algorithm",
        {"type": "string", "enum": list(ALGORITHMS), "default": "auto"},
        "auto: what NCCL would choose on this hardware (NVLS on NVLink SHARP switches, SHARP "
        "where the provider offers it, else the faster of ring and tree); an algorithm the "
        "hardware cannot run answers cannot_estimate with the reason",
    ),
]

RESULT = {
    "type": "object",
    "required": [
        "instance",
        "collective",
        "nodes",
        "gpus",
        "message_bytes",
        "cannot_estimate",
        "missing",
        "algorithm",
        "protocol",
        "busbw_gbytes_per_s",
        "algbw_gbytes_per_s",
        "time_s",
        "bottleneck",
        "inputs",
        "published",
        "error_band",
    ],
    "properties": {
        "instance": {"type": "object"},
        "collective": {"type": "string", "enum": list(COLLECTIVES)},
        "nodes": {"type": "integer"},
        "gpus": {"type": "integer"},
        "message_bytes": {"type": "integer"},
        "algorithm_asked": {"type": "string", "enum": list(ALGORITHMS)},
        "bookable": {
            "type": "boolean",
            "nullable": True,
            "description": "Whether the provider books this many nodes of the type together "
            "self-serve (null: no source says); the figures answer the hardware either way",
        },
        "cannot_estimate": {"type": "boolean"},
        "reason": {
            "type": "string",
            "nullable": True,
            "description": "Why the asked algorithm cannot run here",
        },
        "missing": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Facts the catalog does not know that the answer needs",
        },
        "algorithm": {
            "type": "string",
            "nullable": True,
            "enum": ["ring", "tree", "nvls", "sharp", "p2p", None],
        },
        "protocol": {
            "type": "string",
            "nullable": True,
            "enum": ["ll", "ll128", "simple", None],
            "description": "NCCL's protocol the answer runs: LL (lowest latency, a quarter of "
            "the bandwidth), LL128 (92% of it, NVLink of Volta to Hopper and RDMA networks) or "
            "Simple (all of it), whichever is fastest among those the hardware allows",
        },
        "algorithms_considered": {
            "type": "object",
            "additionalProperties": {"type": "number"},
            "description": "auto: seconds of each algorithm it chose among",
        },
        "busbw_gbytes_per_s": NUMBER,
        "algbw_gbytes_per_s": NUMBER,
        "time_s": NUMBER,
        "bottleneck": {
            "type": "string",
            "nullable": True,
            "enum": ["link", "network", "latency", None],
        },
        "stages": {"type": "array", "items": STAGE},
        "call_latency_us": {
            "type": "number",
            "description": "What the call adds besides its stages: NCCL's base latency (with a "
            "Simple ring all-reduce's plateau across nodes) and, crossing the network, the fitted "
            "per-call network latency (half of it for LL and LL128)",
        },
        "inputs": {"type": "array", "items": FACT},
        "published": {
            "type": "array",
            "items": {"type": "object"},
            "description": "Published collective results on record for the type",
        },
        "error_band": ERROR_BAND,
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
}


def path_item(error: dict, rate_limited: dict) -> dict:
    return {
        "get": {
            "summary": "What nccl-tests should show on N nodes of one instance type",
            "description": "The expected bus bandwidth, algorithm bandwidth and time of one "
            "collective, from the model the estimator uses, with the facts it used and their "
            "bases, the published results on record and an error band from held-out results. "
            "A fact the answer needs that the catalog does not know answers cannot_estimate "
            "with the missing fact, never a guess.",
            "parameters": PARAMETERS,
            "responses": {
                "200": {
                    "description": "The expectation, or cannot_estimate with the reason",
                    "content": {"application/json": {"schema": RESULT}},
                },
                "400": {
                    "description": "Invalid parameters",
                    "content": {"application/json": {"schema": error}},
                },
                "429": rate_limited,
            },
        }
    }
