"""The OpenAPI 3 document of the whole JSON API, assembled from each subject's part (the filter
table's in offerings/table/openapi.py, the estimator's and the planner's in their packages), and
the view that serves it at `/api/openapi.json`."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from offerings.estimator import collectives_openapi
from offerings.estimator import openapi as estimator_openapi
from offerings.planner import openapi as planner_openapi
from offerings.table.openapi import (
    ERROR,
    INSTANCE,
    PROVIDER,
    RATE_LIMITED,
    listing_parameters,
)
from offerings.web.caching import absolute_url


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
                                        # `next` is absent from a format=json download.
                                        "required": ["count", "results"],
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
            },
            "/api/providers": {
                "get": {
                    "operationId": "listProviders",
                    "summary": "Every provider with its network-readiness facts",
                    "description": "One result per provider, by slug (public price catalogs "
                    "such as SkyPilot's are not providers and are left out). Takes no "
                    "parameters.",
                    "responses": {
                        "200": {
                            "description": "The providers",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["results"],
                                        "properties": {
                                            "results": {"type": "array", "items": PROVIDER}
                                        },
                                    }
                                }
                            },
                        },
                        "429": RATE_LIMITED,
                    },
                }
            },
            "/api/plan": planner_openapi.path_item(
                listing_parameters(),
                estimator_openapi.estimate_parameters(listing_parameters()),
                ERROR,
                RATE_LIMITED,
            ),
            "/api/estimate": estimator_openapi.path_item(listing_parameters(), ERROR, RATE_LIMITED),
            "/api/collectives": collectives_openapi.path_item(ERROR, RATE_LIMITED),
        },
    }


@require_safe
def api_openapi(request: HttpRequest) -> JsonResponse:
    return JsonResponse(document(absolute_url(request, "/")))
