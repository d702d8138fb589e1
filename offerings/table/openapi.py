"""The OpenAPI 3 document for `/api/`, built from the FilterSet so the two never disagree."""

from __future__ import annotations

from django import forms

from offerings import platform
from offerings.schemas import (
    COLLECTIVES,
    FABRIC_GENERATIONS,
    PURCHASE_KINDS,
    READINESS_FACTS,
    READINESS_FLAGS,
)
from offerings.table.parameters import (
    REPEATABLE,
    InstanceFilterSet,
    RegionField,
    StrictBooleanField,
)
from offerings.table.rows import PRICE_FIELDS

NULLABLE_INT = {"type": "integer", "nullable": True}
NULLABLE_NUMBER = {"type": "number", "nullable": True}
NULLABLE_BOOL = {"type": "boolean", "nullable": True}
NULLABLE_STRING = {"type": "string", "nullable": True}

DESCRIPTIONS = {
    "q": "Text search over provider, instance and GPU names.",
    "gpu": "GPU slug (e.g. h100-sxm).",
    "provider": "Provider slug (e.g. aws); `verda` is an alias of `datacrunch`.",
    "region": "A region, written `provider:code` (e.g. `gcp:us-central1`): that provider's "
    "region only; a bare code (`us-central1`) selects every provider's region of that code. A "
    "price of one of the regions given must match; a region that does not exist is invalid.",
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
    "rdma": "true: the fabric between nodes is an RDMA one (infiniband, roce, efa, erdma); "
    "false: it is known to be one without RDMA (tcpx, ethernet). An unknown fabric matches "
    "neither.",
    "interconnect": "Which of the two interconnects a row is known to have: nvlink (NVLink or "
    "Infinity Fabric between the GPUs inside the node), rdma (an RDMA fabric between nodes), "
    "both, either (at least one of the two), nvlink-or-infiniband (NVLink or Infinity Fabric "
    "inside the node, or InfiniBand itself between nodes: RoCE, EFA and eRDMA do not count), "
    "neither (known to have no GPU link beyond PCIe and a fabric without RDMA). An unknown fact "
    "matches no value that needs it.",
    "gpudirect_rdma": "GPUDirect RDMA across nodes.",
    "multi_node": "Self-serve booking of at least 2 nodes on one fabric.",
    "price_kind": "Price kind (capacity-block: an AWS EC2 Capacity Block, the upfront fee "
    "per instance-hour of a stated block).",
    "basis": "Count only interconnect facts of these bases (provider, platform, third-party; "
    "default all three): for the interconnect filters (nvlink, nvswitch, nvlink_bw_min, fabric, "
    "fabric_gbps_min, rdma, interconnect, gpudirect_rdma, multi_node) a fact of another basis "
    "is unknown.",
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
    if isinstance(field, RegionField):
        # Not an enum: the regions are data, and a bare code is valid too.
        return {"type": "string", "maxLength": 200, "example": "gcp:us-central1"}
    if isinstance(field, forms.ModelMultipleChoiceField | forms.CharField):
        return {"type": "string", "maxLength": getattr(field, "max_length", None) or 200}
    if isinstance(field, forms.ChoiceField):
        return {"type": "string", "enum": [str(v) for v, _ in field.choices if v != ""]}
    # DecimalField and FloatField subclass IntegerField: test for them first.
    fractional = isinstance(field, forms.DecimalField | forms.FloatField)
    schema = {"type": "number" if fractional else "integer"}
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
            # The no-JS form sends every field: an empty value means the filter is absent.
            "allowEmptyValue": True,
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
    "required": PRICE_FIELDS,
    "properties": {
        "kind": {"type": "string", "enum": ["on-demand", "spot", "reserved", "capacity-block"]},
        "term_months": {"type": "integer", "minimum": 0},
        "region": {"type": "string"},
        "price_per_hour": NULLABLE_NUMBER,
        "price_per_gpu_hour": NULLABLE_NUMBER,
        "currency": {"type": "string", "enum": ["USD"]},
        "observed_at": {
            "type": "string",
            "format": "date-time",
            "nullable": True,
            "description": "When the price was read at its source (UTC); null when the source "
            "shows no date: such a price is shown as 'date unknown', it never replaces a dated "
            "price for the same offer, and it never heads a row that has a dated price of its "
            "kind.",
        },
        "is_stale": {
            "type": "boolean",
            "description": "A dated price read longer ago than the site's staleness limit; "
            "false for an undated one (its age is unknown: see observed_at).",
        },
        "available": NULLABLE_BOOL,
        "source_url": {
            "type": "string",
            "format": "uri",
            "description": "The document this price was read from, at its version: a provider's "
            "price page or API request, or a third-party catalog file at its commit.",
        },
        "basis": {
            "type": "string",
            "enum": ["provider", "third-party"],
            "description": "Who states the price at source_url: the provider (its own price "
            "page, API or price list) or a third party (a public catalog such as SkyPilot's, or "
            "a post that copies the provider's price).",
        },
        "original_price": {"type": "number"},
        "original_currency": {"type": "string"},
        "exchange_rate_date": {"type": "string", "format": "date", "nullable": True},
    },
}

BASIS = {"type": "string", "enum": ["provider", "platform", "third-party"]}


def _basis_of(fields: list[str]) -> dict:
    return {
        "type": "object",
        "description": "The basis of each known field: provider (the provider states it), "
        "platform (it follows from the vendor's platform specification) or third-party. An "
        "unknown field has no key. A fact derived from others takes the weakest basis of its "
        "inputs.",
        "properties": dict.fromkeys(fields, BASIS),
        "additionalProperties": False,
    }


NVLINK_FIELDS = list(platform.LINK_FIELDS)
FABRIC_FIELDS = list(platform.FABRIC_FIELDS)

NVLINK = {
    "type": "object",
    "nullable": True,
    "description": "null when the instance verifiably has no GPU-to-GPU link beyond PCIe. "
    "Bandwidth is per GPU and bidirectional, as vendors quote it.",
    "required": [*NVLINK_FIELDS, "basis"],
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
        "basis": _basis_of(NVLINK_FIELDS),
    },
}

FABRIC = {
    "type": "object",
    "description": "The back-end network GPU traffic between nodes uses. Bandwidth is the sum "
    "of back-end NIC line rates per node; null for `ethernet`, whose only network is the "
    "general one (`network_gbits_per_s`).",
    "required": [*FABRIC_FIELDS, "basis"],
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
        "basis": _basis_of(FABRIC_FIELDS),
    },
}

PURCHASE_MODE = {
    "type": "object",
    "description": "One way the type can be bought, known from a source: a curated mode, or a "
    "current price of that kind and term (whose source it then carries; its `verified_at` is "
    "the price's date, null when undated). A kind no source states is not listed. Commitment "
    "plans (AWS Savings Plans and the like) are `reserved` with their term.",
    "required": [
        "kind",
        "term_months",
        "min_hours",
        "max_hours",
        "min_gpus",
        "source_url",
        "verified_at",
    ],
    "properties": {
        "kind": {"type": "string", "enum": list(PURCHASE_KINDS)},
        "term_months": {
            "type": "integer",
            "minimum": 0,
            "nullable": True,
            "description": "Reserved term or commitment in months; 0 for the other kinds; null "
            "for a reserved mode whose source names no term.",
        },
        "min_hours": NULLABLE_INT | {"description": "Shortest booking in hours; null: not stated."},
        "max_hours": NULLABLE_INT | {"description": "Longest booking in hours; null: not stated."},
        "min_gpus": NULLABLE_INT | {"description": "Smallest purchase in GPUs; null: not stated."},
        "source_url": {"type": "string", "format": "uri"},
        "verified_at": {"type": "string", "format": "date", "nullable": True},
    },
}

COLLECTIVE_RESULT = {
    "type": "object",
    "description": "One published collective benchmark (nccl-tests or the like) run on the type: "
    "the bus bandwidth it reported at one message size and node count, with its source.",
    "required": [
        "collective",
        "nodes",
        "gpus",
        "message_bytes",
        "busbw_gbytes_per_s",
        "basis",
        "source_url",
        "verified_at",
        "notes",
    ],
    "properties": {
        "collective": {"type": "string", "enum": list(COLLECTIVES)},
        "nodes": {"type": "integer", "minimum": 1},
        "gpus": {"type": "integer", "minimum": 1, "description": "GPUs in the run, all nodes."},
        "message_bytes": {"type": "integer", "minimum": 1},
        "busbw_gbytes_per_s": {
            "type": "number",
            "minimum": 0,
            "exclusiveMinimum": True,
            "description": "Bus bandwidth as nccl-tests reports it (busbw), GB/s.",
        },
        "basis": {"type": "string", "enum": ["provider", "third-party"]},
        "source_url": {"type": "string", "format": "uri"},
        "verified_at": {"type": "string", "format": "date"},
        "notes": {"type": "string", "description": "The run's configuration, in English."},
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
        "network_gbits_per_s",
        "network_shared",
        "network_basis",
        "fabric_generation",
        "gpu_link",
        "gpu_link_basis",
        "price",
        "prices",
        "purchase_modes",
        "collective_results",
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
        "network_gbits_per_s": NULLABLE_INT
        | {
            "description": "The instance's general network (VPC, storage, internet) in Gb/s, "
            "apart from the back-end `fabric`; null when no source states it. A type whose only "
            "network is this one has fabric technology `ethernet` and no fabric bandwidth."
        },
        "network_shared": NULLABLE_BOOL
        | {
            "description": "true where the provider runs the back-end fabric and the general "
            "network over the same network cards (AWS EFA and ENA, Alibaba eRDMA on the VPC "
            "baseline), so the two kinds of traffic share their bandwidth. null when "
            "network_gbits_per_s is."
        },
        "network_basis": BASIS
        | {"nullable": True, "description": "The basis of network_gbits_per_s; null when unknown."},
        "fabric_generation": {
            "type": "string",
            "nullable": True,
            "enum": [*sum(FABRIC_GENERATIONS.values(), ()), None],
            "description": "The back-end fabric's generation, for the two fabrics whose "
            "generations perform differently: AWS EFA (efa-v1 to efa-v4) and Google's "
            "GPUDirect-TCPX (tcpx) and GPUDirect-TCPXO (tcpxo); null when no source states it "
            "or for another fabric.",
        },
        "gpu_link": {
            "type": "string",
            "enum": ["none", "nvlink", "infinity-fabric", "unknown"],
            "description": "The GPU-to-GPU link inside the node: none is a verified absence "
            "(PCIe only), where `nvlink` is null; unknown where no source says.",
        },
        "gpu_link_basis": BASIS
        | {"nullable": True, "description": "The basis of gpu_link; null when unknown."},
        "price": PRICE | {"nullable": True},
        "prices": {"type": "array", "items": PRICE},
        "purchase_modes": {
            "type": "array",
            "items": PURCHASE_MODE,
            "description": "Every sourced way to buy the type, on-demand first; empty when no "
            "source on record says.",
        },
        "collective_results": {
            "type": "array",
            "items": COLLECTIVE_RESULT,
            "description": "Published collective benchmarks run on the type, by collective, "
            "nodes, GPUs and message size; empty when none is on record.",
        },
        "sources": {"type": "array", "items": {"type": "string", "format": "uri"}},
        "verified_at": {"type": "string", "format": "date", "nullable": True},
        "url": {"type": "string", "format": "uri"},
    },
}


def _readiness_value(fact: str) -> dict:
    if fact in READINESS_FLAGS:
        return {"type": "boolean"}
    if fact == "fabrics":
        kinds = ["infiniband", "roce", "efa", "erdma", "tcpx", "ethernet"]
        return {"type": "array", "items": {"type": "string", "enum": kinds}, "minItems": 1}
    if fact == "max_self_serve_gpus":
        return {"type": "integer", "minimum": 1}
    return {"type": "number", "minimum": 0}


READINESS_DESCRIPTIONS = {
    "fabrics": "The kinds of inter-node fabric the provider offers.",
    "max_self_serve_gpus": "The most GPUs a new account can run at once without talking to "
    "sales: quota or cluster limit, as stated.",
    "gpudirect_rdma": "GPUDirect RDMA between nodes out of the box.",
    "sharp": "SHARP in-network reduction on the fabric.",
    "topology_aware_scheduling": "Topology-aware scheduling (Slurm topology or Kubernetes).",
    "managed_slurm": "A managed Slurm offering.",
    "managed_kubernetes": "A managed Kubernetes offering with GPU nodes.",
    "nccl_tests_published": "NCCL or RCCL test results published by the provider.",
    "egress_usd_per_gb": "Internet egress in USD per GB, first paid tier (rounded half-even to "
    "4 decimals).",
}


#: The facts of instance types that a provider's summary is computed from (offerings.pages.
#: readiness): the kinds its listed types have, GPUDirect RDMA as its RDMA types have it.
TYPE_FACTS = ("fabrics", "gpudirect_rdma")
TYPE_FACT_NOTE = (
    " Computed from the provider's listed instance types when it has any: `source_url` is then "
    "the list of those types on this site (each with its own source), `basis` the weakest of "
    "the facts it rests on, `verified_at` the oldest of their checks, `from_types` how many "
    "types it rests on and how many have each value, and `stated` the provider's own statement "
    "when that says otherwise (about a family the catalog does not list, say). `value` null: "
    "every listed type unknown, beside a statement."
)


def _readiness_entry(fact: str) -> dict:
    properties = {
        "value": _readiness_value(fact),
        "basis": BASIS,
        "source_url": {"type": "string", "format": "uri"},
        "verified_at": {"type": "string", "format": "date"},
    }
    return {"type": "object", "required": list(properties), "properties": properties}


def _readiness_fact(fact: str) -> dict:
    schema = {
        **_readiness_entry(fact),
        "nullable": True,
        "description": READINESS_DESCRIPTIONS[fact] + " null: unknown (no source on record).",
    }
    if fact in TYPE_FACTS:
        value = _readiness_value(fact)
        if fact == "gpudirect_rdma":  # the provider's RDMA types differ, or some are unknown
            value = {"oneOf": [value, {"type": "string", "enum": ["varies"]}]}
        schema["description"] += TYPE_FACT_NOTE
        schema["properties"] = {
            **schema["properties"],
            "value": {**value, "nullable": True},
            "basis": {**BASIS, "nullable": True},
            "verified_at": {"type": "string", "format": "date", "nullable": True},
            "from_types": {
                "type": "object",
                "required": ["types", "counts"],
                "properties": {
                    "types": {"type": "integer", "minimum": 1},
                    "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                },
            },
            "stated": {**_readiness_entry(fact), "nullable": True},
        }
    return schema


PROVIDER = {
    "type": "object",
    "required": ["slug", "name", "url", "readiness"],
    "properties": {
        "slug": {"type": "string"},
        "name": {"type": "string"},
        "url": {"type": "string", "format": "uri", "description": "The provider page."},
        "readiness": {
            "type": "object",
            "description": "Network readiness: every fact, each with its basis, source and date, "
            "or null when unknown. Facts, not scores: null is unknown, never no.",
            "required": list(READINESS_FACTS),
            "properties": {fact: _readiness_fact(fact) for fact in READINESS_FACTS},
            "additionalProperties": False,
        },
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
    "headers": {"Retry-After": {"schema": {"type": "integer", "minimum": 1}}},
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["error", "retry_after"],
                "properties": {
                    "error": {"type": "string", "enum": ["rate_limited"]},
                    "retry_after": {"type": "integer", "minimum": 1},
                },
            }
        }
    },
}
