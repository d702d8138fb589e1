"""Issue 32, item 3: the MCP server at /mcp, end to end.

The site's ASGI app (`gpucatalog.asgi.application`, Django and the MCP server on one origin)
runs under uvicorn in a thread on a free port; the MCP SDK's own client talks to it over
streamable HTTP, as an assistant would. The catalog is committed (transactional tests), since
the server's threads read it through their own connections. The client checks each structured
result against the tool's output schema.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import uvicorn
from mcp import Client

from offerings.table.parameters import known_parameters

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "search_instances",
    "get_instance",
    "compare_instances",
    "plan_cluster",
    "estimate_job",
    "expected_collective",
    "list_providers",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def site(catalog, settings):
    """The whole site under uvicorn; yields its base URL."""
    settings.SITE_URL = "https://gpucatalog.example"
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    from gpucatalog import asgi

    asgi.mcp_application = asgi.mcp_app()  # built under this test's settings
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(asgi.application, host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def run(coroutine):
    """The client's coroutine on an event loop of its own, in a thread of its own: the browser
    tests' Playwright keeps a loop running in this thread for the whole session."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _session(url: str, calls):
    async with Client(f"{url}/mcp") as client:
        return await calls(client)


def call(site: str, name: str, arguments: dict):
    async def calls(client):
        return await client.call_tool(name, arguments)

    return run(_session(site, calls))


def test_an_mcp_client_initializes_and_lists_read_only_tools_with_both_schemas(site):
    async def calls(client):
        return (await client.list_tools()).tools

    listed = {tool.name: tool for tool in run(_session(site, calls))}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema["type"] == "object"
        assert tool.annotations.read_only_hint is True
    search = listed["search_instances"].input_schema["properties"]
    # Every filter of GET /api/instances, by its API name (not the download or display options).
    assert set(search) == known_parameters() - {"format", "currency"}
    assert "USD" in search["max_gpu_hour"]["description"]
    assert "GB/s" in search["nvlink_bw_min"]["description"]
    assert listed["plan_cluster"].input_schema["required"] == ["gpus"]
    assert set(listed["estimate_job"].input_schema["required"]) == {"params_b", "mode"}


def test_search_finds_h100_infiniband_rows_with_their_sources_and_bases(site, catalog):
    result = call(site, "search_instances", {"gpu": ["h100-sxm"], "fabric": ["infiniband"]})
    assert not result.is_error, result.content
    data = result.structured_content
    assert data["count"] == len(data["results"]) >= 1
    assert data["table_url"].startswith("https://gpucatalog.example/?")
    for row in data["results"]:
        assert row["gpu"] == "h100-sxm"
        assert row["fabric"]["technology"] == "infiniband"
        assert "basis" in row["fabric"]  # each known field's basis (none given in this catalog)
        assert row["sources"]
        assert row["url"].startswith("https://gpucatalog.example/instances/")
        for price in row["prices"]:
            assert price["source_url"]
            assert price["basis"] in ("provider", "third-party")
            assert "observed_at" in price


def test_a_tool_answers_what_the_api_answers(site, catalog, client):
    row = call(site, "get_instance", {"instance": "aws/ib-8x"}).structured_content
    served = client.get("/api/instances?provider=aws&q=ib.8x").json()["results"]
    assert row == next(r for r in served if r["slug"] == "ib-8x")


def test_compare_plan_estimate_collectives_and_providers_answer(site, catalog):
    compared = call(site, "compare_instances", {"instances": ["aws/ib-8x", "aws/efa-8x"]})
    assert not compared.is_error, compared.content
    assert [r["slug"] for r in compared.structured_content["results"]] == ["ib-8x", "efa-8x"]
    plan = call(site, "plan_cluster", {"gpus": 16, "gpu": ["h100-sxm"]})
    assert not plan.is_error, plan.content
    assert plan.structured_content["results"]
    assert plan.structured_content["assumptions"]["gpus"] == 16
    estimate = call(site, "estimate_job", {"params_b": 7, "mode": "train-ddp", "nodes": [1, 2]})
    assert not estimate.is_error, estimate.content
    assert estimate.structured_content["count"] >= 1
    collective = call(site, "expected_collective", {"instance": "aws/ib-8x", "nodes": 2})
    assert not collective.is_error, collective.content
    assert "busbw_gbytes_per_s" in collective.structured_content
    providers = call(site, "list_providers", {})
    assert not providers.is_error, providers.content
    assert {p["slug"] for p in providers.structured_content["results"]} >= {"aws", "gcp"}


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("search_instances", {"max_gpu_hour": -1}, "max_gpu_hour"),
        ("search_instances", {"gpus": ["h100-sxm"]}, "gpus"),  # not an argument of the tool
        ("search_instances", {"fabric": ["token-ring"]}, "fabric"),
        ("search_instances", {"page": 99}, "page"),
        ("get_instance", {"instance": "nope/nope"}, "nope/nope"),
        ("get_instance", {}, "instance"),
        ("compare_instances", {"instances": ["aws/ib-8x"]}, "instances"),
        ("compare_instances", {"instances": ["aws/ib-8x", "aws/ib-8x"]}, "instances"),
        ("plan_cluster", {}, "gpus"),
        ("plan_cluster", {"gpus": 0}, "gpus"),
        ("estimate_job", {"params_b": 7, "mode": "pretend"}, "mode"),
        ("estimate_job", {"mode": "train-ddp"}, "params_b"),
        ("expected_collective", {"instance": "aws/ib-8x", "nodes": 0}, "nodes"),
        ("expected_collective", {"instance": "aws/no-such-type"}, "instance"),
        ("list_providers", {"provider": "aws"}, "provider"),
    ],
)
def test_bad_arguments_are_a_tool_error_naming_the_argument(site, tool, arguments, named):
    result = call(site, tool, arguments)
    assert result.is_error
    text = " ".join(part.text for part in result.content)
    assert named in text
    assert "Error executing tool" not in text or named in text


def test_mcp_is_rate_limited_per_client_like_the_api(site, settings):
    settings.RATELIMIT_ENABLE = True
    settings.API_RATE = "3/m"
    from django.core.cache import caches

    caches["ratelimit"].clear()
    statuses = []
    with httpx.Client() as http:
        for _ in range(5):
            response = http.post(
                f"{site}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Accept": "application/json, text/event-stream"},
            )
            statuses.append(response.status_code)
    assert statuses[-1] == 429
    assert 429 not in statuses[:3]


def test_computed_tool_results_count_against_the_clients_render_rate(site, settings):
    """A call answered from the kept results costs nothing; one that must be computed is a
    render, counted per client against RENDER_RATE like a page that misses the cache."""
    settings.RATELIMIT_ENABLE = True
    settings.API_RATE = "100/m"
    settings.RENDER_RATE = "2/m"
    settings.PAGE_CACHE_SECONDS = 300
    from django.core.cache import cache, caches

    cache.clear()
    caches["ratelimit"].clear()

    async def calls(client):
        results = []
        for count in (1, 2, 4):
            results.append(await client.call_tool("search_instances", {"gpu_count_min": count}))
        results.append(await client.call_tool("search_instances", {"gpu_count_min": 1}))
        return results

    first, second, third, again = run(_session(site, calls))
    assert not first.is_error
    assert not second.is_error
    assert third.is_error
    text = " ".join(part.text for part in third.content)
    assert "Rate limited" in text
    assert "RENDER_RATE" in text
    assert "Retry after" in text
    assert not again.is_error  # kept: no render, so not refused
    assert again.structured_content == first.structured_content


def test_the_site_is_served_beside_it(site):
    with httpx.Client() as http:
        page = http.get(f"{site}/")
        api = http.get(f"{site}/api/instances?gpu=h100-sxm")
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert page.headers["content-security-policy"]
    assert api.status_code == 200
    assert api.json()["count"] >= 1


def test_the_host_check_names_this_site(settings):
    from offerings.agents.server import _security

    settings.ALLOWED_HOSTS = [".example.com"]
    settings.SITE_URL = "https://www.example.com"
    allowed = _security().allowed_hosts
    assert {"example.com", "www.example.com", "www.example.com:*"} <= set(allowed)
    settings.ALLOWED_HOSTS, settings.SITE_URL, settings.DEBUG = [], None, True
    assert "localhost" in _security().allowed_hosts
    settings.ALLOWED_HOSTS = ["*"]
    assert _security().enable_dns_rebinding_protection is False


def test_a_tool_result_is_kept_under_the_data_version_and_rebuilt_after_a_write(
    catalog, settings, django_assert_num_queries
):
    from django.core.cache import cache

    from offerings.agents.tools import TOOLS, kept_result
    from offerings.models import Provider

    settings.PAGE_CACHE_SECONDS = 300
    cache.clear()
    spec = next(tool for tool in TOOLS if tool.name == "list_providers")
    first = kept_result(spec.name, {}, spec.body)
    with django_assert_num_queries(1):  # the version read, then the kept result
        assert kept_result(spec.name, {}, spec.body) == first
    provider = Provider.objects.get(slug="aws")
    Provider.objects.filter(pk=provider.pk).update(name="Amazon Web Services (renamed)")
    after = kept_result(spec.name, {}, spec.body)
    assert {"slug": "aws", "name": "Amazon Web Services (renamed)"}.items() <= next(
        p for p in after["results"] if p["slug"] == "aws"
    ).items()


def test_a_tool_error_is_raised_again_not_kept(catalog, settings):
    from django.core.cache import cache

    from offerings.agents.tools import TOOLS, ArgumentError, kept_result

    settings.PAGE_CACHE_SECONDS = 300
    cache.clear()
    spec = next(tool for tool in TOOLS if tool.name == "get_instance")
    for _ in range(2):
        with pytest.raises(ArgumentError):
            kept_result(spec.name, {"instance": "no-such/type"}, spec.body)
