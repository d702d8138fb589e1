"""The MCP server at /mcp: the official SDK's `MCPServer` over streamable HTTP.

`build_server()` registers `tools.TOOLS` with input schemas made from the OpenAPI parameters of
each tool's endpoint (`arguments_of`) and output schemas made from its 200 response; an argument
that is not in the schema is refused, not ignored. `mcp_app()` is the SDK's ASGI app wrapped in
the API's rate limit (`API_RATE` per client IP, the same counter store as the API; a result that
has to be computed counts against `RENDER_RATE` too, `tools.count_render`), which
`gpucatalog/asgi.py` serves at /mcp beside Django. The server is stateless (each POST answers on
its own, as JSON), so any web process can answer any request.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from pydantic import ConfigDict, Field

from offerings.agents import tools
from offerings.openapi import document
from offerings.web.caching import site_url
from offerings.web.middleware import rate_limited, retry_after

RATE_GROUP = "gpucatalog:mcp"
INSTRUCTIONS = (
    "gpucatalog compares multi-GPU cloud instance types by their interconnects: NVLink inside a "
    "node, InfiniBand, RoCE, AWS EFA or Google TCPX between nodes. Every fact and price carries "
    "its source URL, its basis (the provider states it, the vendor's platform forces it, or a "
    "third party says it) and its date; null means unknown. Prices are USD references, not "
    "quotes. Start with search_instances (the API's filters by name), then get_instance or "
    "compare_instances; plan_cluster and estimate_job answer 'how many nodes and at what cost'."
)


# -- arguments from the OpenAPI document ----------------------------------------------------------


def _annotation(schema: dict) -> Any:
    """A Python type for one OpenAPI parameter schema (`"true"/"false"` strings are booleans)."""
    kind = schema.get("type")
    if kind == "array":  # each item's bounds on the item
        item = schema["items"]
        bounds = _bounds(item)
        return list[Annotated[_annotation(item), Field(**bounds)] if bounds else _annotation(item)]
    if kind == "string" and schema.get("enum") == ["true", "false"]:
        return bool
    if kind == "string" and schema.get("enum"):
        return Literal[tuple(schema["enum"])]
    return {"integer": int, "number": float, "boolean": bool}.get(kind, str)


def _bounds(schema: dict) -> dict:
    bounds = {}
    if "minimum" in schema:
        bounds["gt" if schema.get("exclusiveMinimum") else "ge"] = schema["minimum"]
    if "maximum" in schema:
        bounds["le"] = schema["maximum"]
    if schema.get("type") == "string" and "maxLength" in schema:
        bounds["max_length"] = schema["maxLength"]
    return bounds


def _operations() -> dict[str, dict]:
    """The GET operation of each API path, from the OpenAPI document (built once per server)."""
    return {path: item["get"] for path, item in document(site_url("/"))["paths"].items()}


def arguments_of(operation: dict) -> list[inspect.Parameter]:
    """The keyword parameters of a tool taking an API operation's query parameters, as the
    OpenAPI document states them (type, bounds, description, required)."""
    parameters = []
    for parameter in operation.get("parameters", []):
        name = parameter["name"]
        if name in tools.NOT_TOOL_ARGUMENTS:
            continue
        schema = parameter["schema"]
        python = _annotation(schema)
        bounds = {} if schema.get("type") == "array" else _bounds(schema)
        field = Field(description=parameter.get("description") or None, **bounds)
        required = parameter.get("required", False)
        annotation = Annotated[python if required else python | None, field]
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if required else None,
                annotation=annotation,
            )
        )
    return parameters


OWN_ARGUMENTS = {
    "get_instance": [
        inspect.Parameter(
            "instance",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[
                str,
                Field(
                    description="The instance type: its id or provider/slug, e.g. "
                    "'aws/p5-48xlarge'.",
                    max_length=200,
                ),
            ],
        )
    ],
    "compare_instances": [
        inspect.Parameter(
            "instances",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[
                list[Annotated[str, Field(max_length=200)]],
                Field(
                    description="Two to four instance types, each an id or provider/slug.",
                    min_length=2,
                    max_length=4,
                ),
            ],
        )
    ],
}


# -- output schemas from the OpenAPI document -----------------------------------------------------


def json_schema(schema: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: `nullable: true` becomes a `null` type."""
    if isinstance(schema, list):
        return [json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {
        key: json_schema(value)
        for key, value in schema.items()
        if key not in ("nullable", "example")
    }
    # OpenAPI 3.0's boolean exclusive bounds are JSON Schema's numeric ones.
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if converted.get(bound) is True:
            converted[bound] = converted.pop(limit)
        elif converted.get(bound) is False:
            del converted[bound]
    if schema.get("nullable"):
        if "type" in converted:
            converted["type"] = [converted["type"], "null"]
        if "enum" in converted:
            converted["enum"] = [*converted["enum"], None]
        if "type" not in converted:
            converted = {"anyOf": [converted, {"type": "null"}]}
    if isinstance(converted.get("properties"), dict):
        converted["properties"] = {
            name: json_schema(value) for name, value in schema["properties"].items()
        }
    return converted


def _response(operation: dict) -> dict:
    return json_schema(operation["responses"]["200"]["content"]["application/json"]["schema"])


def _listing_output(operation: dict, *extra: str) -> dict:
    """A paged endpoint's answer as a tool gives it: `next` (a URL) becomes `page` and
    `next_page` (numbers); the results and the rest as the endpoint states them."""
    schema = _response(operation)
    properties = dict(schema["properties"])
    properties.pop("next", None)
    properties["page"] = {"type": "integer", "minimum": 1}
    properties["next_page"] = {"type": ["integer", "null"], "minimum": 2}
    for name in extra:
        properties[name] = {"type": "string"}
    required = [n for n in schema.get("required", []) if n != "next"] + ["page", "next_page"]
    return {"type": "object", "properties": properties, "required": required + list(extra)}


def output_schemas(operations: dict[str, dict]) -> dict[str, dict]:
    instance = _response(operations["/api/instances"])["properties"]["results"]["items"]
    return {
        "search_instances": _listing_output(operations["/api/instances"], "table_url"),
        "get_instance": instance,
        "compare_instances": {
            "type": "object",
            "properties": {
                "results": {"type": "array", "items": instance, "minItems": 2, "maxItems": 4},
                "compare_url": {"type": "string"},
            },
            "required": ["results", "compare_url"],
        },
        "plan_cluster": _listing_output(operations["/api/plan"]),
        "estimate_job": _listing_output(operations["/api/estimate"]),
        "expected_collective": _response(operations["/api/collectives"]),
        "list_providers": _response(operations["/api/providers"]),
    }


# -- the server -----------------------------------------------------------------------------------


def _tool(spec: tools.ToolSpec, operations: dict[str, dict], output_schema: dict) -> Tool:
    @tools.database_work
    def call(**arguments: Any) -> dict[str, Any]:
        return tools.kept_result(spec.name, arguments, spec.body)

    if spec.name in OWN_ARGUMENTS:
        parameters = OWN_ARGUMENTS[spec.name]
    else:
        parameters = arguments_of(operations[spec.path]) if spec.path else []
    call.__name__ = spec.name
    call.__doc__ = spec.description
    call.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])
    call.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": dict[str, Any]}
    tool = Tool.from_function(
        call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=ToolAnnotations(
            title=spec.title, read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
        structured_output=True,
    )
    # An argument the tool does not take is an error naming it, not a silent no-op.
    strict = type(
        f"{spec.name}Arguments",
        (tool.fn_metadata.arg_model,),
        {"model_config": ConfigDict(arbitrary_types_allowed=True, extra="forbid")},
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters["additionalProperties"] = False
    tool.fn_metadata.output_schema = output_schema
    return tool


def build_server() -> MCPServer:
    operations = _operations()
    schemas = output_schemas(operations)
    return MCPServer(
        name="gpucatalog",
        title="gpucatalog",
        instructions=INSTRUCTIONS,
        website_url=settings.SITE_URL or None,
        tools=[_tool(spec, operations, schemas[spec.name]) for spec in tools.TOOLS],
    )


def _security() -> TransportSecuritySettings:
    """Host checks against DNS rebinding: the Host header must name this site: an ALLOWED_HOSTS
    entry (`.example.com` as `example.com` only: the SDK matches names, not suffixes) or
    SITE_URL's host; with DEBUG and no ALLOWED_HOSTS, Django's local defaults."""
    if "*" in settings.ALLOWED_HOSTS:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = {h.lstrip(".") for h in settings.ALLOWED_HOSTS}
    if settings.SITE_URL:
        hosts.add(urlsplit(settings.SITE_URL).hostname or "")
    if settings.DEBUG and not settings.ALLOWED_HOSTS:
        hosts |= {"localhost", "127.0.0.1", "[::1]"}
    allowed = []
    for bare in sorted(hosts - {""}):
        allowed += [bare, f"{bare}:*"]
    origins = [f"{scheme}://{host}" for host in allowed for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed, allowed_origins=origins
    )


def _limited(client: str) -> int | None:
    """Seconds to wait when this client is over API_RATE on /mcp, else None: the API's limiter,
    for a request Django never sees."""
    return retry_after(tools.client_request(client), RATE_GROUP, settings.API_RATE, "MCP request")


def mcp_app():
    """The SDK's ASGI app for /mcp, behind the API's rate limit per client."""
    app = build_server().streamable_http_app(
        streamable_http_path="/mcp",
        json_response=True,
        stateless_http=True,
        transport_security=_security(),
    )
    limited = sync_to_async(_limited, thread_sensitive=False)

    async def rate_limited_app(scope, receive, send) -> None:
        client = scope.get("client")
        ip = client[0] if client else "127.0.0.1"
        if scope["type"] == "http":
            tools.calling_client.set(ip)
        if scope["type"] == "http" and scope.get("method") == "POST":
            wait = await limited(ip)
            if wait is not None:  # the API's 429, sent as ASGI messages
                response = rate_limited(wait)
                headers = [(k.lower().encode(), v.encode()) for k, v in response.items()]
                body = response.content
                headers.append((b"content-length", str(len(body)).encode()))
                await send({"type": "http.response.start", "status": 429, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return rate_limited_app
