"""The OpenAPI 3 document for `/api/`, built from the FilterSet so the two never disagree."""

from __future__ import annotations

from django import forms

from offerings.filters import REPEATABLE, InstanceFilterSet, StrictBooleanField

NULLABLE_INT = {"type": "integer", "nullable": True}
NULLABLE_NUMBER = {"type": "number", "nullable": True}
NULLABLE_BOOL = {"type": "boolean", "nullable": True}
NULLABLE_STRING = {"type": "string", "nullable": True}

DESCRIPTIONS = {
    "q": "Text search over provider, instance and GPU names.",
    "gpu": "GPU slug (e.g. h100-sxm).",
    "provider": "Provider slug (e.g. aws); `verda` is an alias of `datacrunch`.",
    "region": "Provider region code.",
    "geo": "Continent code of the price's region.",
    "available": "true: capacity reported available now in the price's region.",
    "gpu_count_min": "At least this many GPUs per instance.",
    "gpu_memory_min": "At least this many GiB per GPU.",
    "node_memory_min": "At least this many GiB of GPU memory per instance.",
    "nvlink": "true: has an NVLink or Infinity Fabric GPU-to-GPU link; false: known to lack one.",
    "nvswitch": "true: all GPUs of the instance in one switched all-to-all domain.",
    "nvlink_bw_min": "At least this many GB/s of NVLink per GPU (bidirectional).",
    "fabric": "Inter-node fabric technology.",
    "fabric_gbps_min": "At least this many Gb/s of back-end bandwidth per node.",
    "gpudirect_rdma": "GPUDirect RDMA across nodes.",
    "multi_node": "Self-serve booking of at least 2 nodes on one fabric.",
    "price_kind": "Price kind.",
    "max_gpu_hour": "At most this price per GPU-hour in USD.",
    "sort": "Order; `-` for descending; empty values last; ties by ascending id.",
    "page": "Page number; a page past the end is invalid.",
    "page_size": "Rows per page (default 50, at most 200).",
    "format": "csv or json: all matching rows, unpaged, as a download.",
    "currency": "Display currency of HTML and CSV; JSON stays in USD.",
}


def _schema_for(field: forms.Field) -> dict:
    if isinstance(field, StrictBooleanField):
        return {"type": "string", "enum": ["true", "false"]}
    if isinstance(field, forms.ModelMultipleChoiceField | forms.CharField):
        return {"type": "string", "maxLength": getattr(field, "max_length", None) or 200}
    if isinstance(field, forms.ChoiceField):
        return {"type": "string", "enum": [str(v) for v, _ in field.choices if v != ""]}
    schema = {"type": "integer"} if isinstance(field, forms.IntegerField) else {"type": "number"}
    if field.min_value is not None:
        schema["minimum"] = field.min_value
    if field.max_value is not None:
        schema["maximum"] = field.max_value
    return schema


def listing_parameters() -> list[dict]:
    form = InstanceFilterSet().form
    parameters = []
    for name, field in form.fields.items():
        schema = _schema_for(field)
        parameter = {
            "name": name,
            "in": "query",
            "required": False,
            "description": DESCRIPTIONS.get(name, ""),
        }
        if name in REPEATABLE:
            parameter |= {
                "schema": {"type": "array", "items": schema},
                "style": "form",
                "explode": True,
            }
        else:
            parameter["schema"] = schema
        parameters.append(parameter)
    return parameters


PRICE = {
    "type": "object",
    "required": [
        "kind",
        "term_months",
        "region",
        "price_per_hour",
        "price_per_gpu_hour",
        "currency",
        "observed_at",
        "is_stale",
        "available",
    ],
    "properties": {
        "kind": {"type": "string", "enum": ["on-demand", "spot", "reserved"]},
        "term_months": {"type": "integer", "minimum": 0},
        "region": {"type": "string"},
        "price_per_hour": NULLABLE_NUMBER,
        "price_per_gpu_hour": NULLABLE_NUMBER,
        "currency": {"type": "string", "enum": ["USD"]},
        "observed_at": {"type": "string", "format": "date-time"},
        "is_stale": {"type": "boolean"},
        "available": NULLABLE_BOOL,
        "original_price": {"type": "number"},
        "original_currency": {"type": "string"},
        "exchange_rate_date": {"type": "string", "format": "date", "nullable": True},
    },
}

NVLINK = {
    "type": "object",
    "nullable": True,
    "description": "null when the instance verifiably has no GPU-to-GPU link beyond PCIe. "
    "Bandwidth is per GPU and bidirectional, as vendors quote it.",
    "required": ["technology", "generation", "topology", "domain_size", "bandwidth_gbytes_per_s"],
    "properties": {
        "technology": {"type": "string", "enum": ["nvlink", "infinity-fabric", "unknown"]},
        "generation": NULLABLE_INT,
        "topology": {
            "type": "string",
            "nullable": True,
            "enum": ["nvswitch", "bridge", "mesh", "hybrid-cube-mesh", "unknown", None],
        },
        "domain_size": NULLABLE_INT,
        "bandwidth_gbytes_per_s": NULLABLE_INT,
    },
}

FABRIC = {
    "type": "object",
    "description": "Inter-node fabric. Bandwidth is the sum of back-end NIC line rates per node.",
    "required": [
        "technology",
        "bandwidth_gbits_per_s",
        "nics",
        "gpudirect_rdma",
        "multi_node",
        "max_nodes",
    ],
    "properties": {
        "technology": {
            "type": "string",
            "enum": ["infiniband", "roce", "efa", "erdma", "tcpx", "ethernet", "unknown"],
        },
        "bandwidth_gbits_per_s": NULLABLE_INT,
        "nics": NULLABLE_INT,
        "gpudirect_rdma": NULLABLE_BOOL,
        "multi_node": NULLABLE_BOOL,
        "max_nodes": NULLABLE_INT,
    },
}

INSTANCE = {
    "type": "object",
    "required": [
        "id",
        "provider",
        "name",
        "slug",
        "gpu",
        "gpu_count",
        "gpu_memory_gib",
        "vcpus",
        "ram_gib",
        "nvlink",
        "fabric",
        "price",
        "prices",
        "sources",
        "verified_at",
        "url",
    ],
    "properties": {
        "id": {"type": "integer"},
        "provider": {"type": "string"},
        "name": {"type": "string"},
        "slug": {"type": "string"},
        "gpu": {"type": "string"},
        "gpu_count": {"type": "integer", "minimum": 1},
        "gpu_memory_gib": {"type": "integer"},
        "vcpus": NULLABLE_INT,
        "ram_gib": NULLABLE_NUMBER,
        "nvlink": NVLINK,
        "fabric": FABRIC,
        "price": PRICE | {"nullable": True},
        "prices": {"type": "array", "items": PRICE},
        "sources": {"type": "array", "items": {"type": "string", "format": "uri"}},
        "verified_at": {"type": "string", "format": "date", "nullable": True},
        "url": {"type": "string", "format": "uri"},
    },
}

ERROR = {
    "type": "object",
    "required": ["error", "fields"],
    "properties": {
        "error": {"type": "string", "enum": ["invalid_parameters"]},
        "fields": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
    },
}

RATE_LIMITED = {
    "description": "Too many requests; retry after the number of seconds in Retry-After.",
    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
}


def document(server_url: str) -> dict:
    """The OpenAPI 3.0 document."""
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "gpucatalog API",
            "version": "1",
            "description": "Multi-GPU cloud instances with their NVLink and inter-node fabric, "
            "and prices in USD. Money is rounded half-even to 4 decimals.",
        },
        "servers": [{"url": server_url.rstrip("/")}],
        "paths": {
            "/api/instances": {
                "get": {
                    "operationId": "listInstances",
                    "summary": "Instance types matching the filters",
                    "parameters": listing_parameters(),
                    "responses": {
                        "200": {
                            "description": "A page of instance types (or, with format, a download)",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["count", "next", "results"],
                                        "properties": {
                                            "count": {"type": "integer"},
                                            "next": {
                                                "type": "string",
                                                "format": "uri",
                                                "nullable": True,
                                            },
                                            "results": {"type": "array", "items": INSTANCE},
                                        },
                                    }
                                },
                                "text/csv": {"schema": {"type": "string"}},
                            },
                        },
                        "400": {
                            "description": "Invalid parameters",
                            "content": {"application/json": {"schema": ERROR}},
                        },
                        "429": RATE_LIMITED,
                    },
                }
            }
        },
    }
