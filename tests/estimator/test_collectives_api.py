"""`GET /api/collectives` and the collective model behind it (offerings.estimator.nccl).

The figures are checked by hand arithmetic on the model's formulas; the wiring (facts with their
bases, SHARP from the provider's readiness, published results, the error band, bad input) on
catalog rows.
"""

import math
import re
from datetime import date
from decimal import Decimal

import pytest

from offerings.estimator.calibration import HELD_OUT, HELD_OUT_BY_SIZE
from offerings.estimator.core import DEFAULT_CONSTANTS, FabricSpec, GpuLinkSpec, InstanceSpec, Job
from offerings.estimator.estimation import estimate_training
from offerings.estimator.nccl import expect
from offerings.models import CollectiveResult, ProviderReadiness
from tests.estimator.test_views import make_cluster

GIB = 2**30
SOURCE = "https://example.com/readiness"


@pytest.fixture
def cluster(db):
    return make_cluster()


def publish_efa_run(cluster) -> CollectiveResult:
    """A published two-node all_reduce on the EFA type, as a curator would record it."""
    return CollectiveResult.objects.create(
        instance=cluster["efa"],
        collective="all_reduce",
        nodes=2,
        gpus=16,
        message_bytes=GIB,
        busbw_gbytes_per_s=Decimal("435.1"),
        basis="third-party",
        source_url="https://example.com/run",
        verified_at=date(2026, 11, 30),
    )


def get(client, query: str):
    return client.get(f"/api/collectives?{query}")


def spec(gpus=8, link=None, fabric=None, pcie=5) -> InstanceSpec:
    return InstanceSpec(
        id=1,
        name="t",
        gpu_count=gpus,
        gpu_memory_gib=80,
        bf16_dense_tflops=1000,
        pcie_generation=pcie,
        link=link or GpuLinkSpec("nvlink", "nvswitch", 3, 8, 600),
        fabric=fabric or FabricSpec("infiniband", 1600, True, None),
    )


# -- the model ---------------------------------------------------------------------------------


def test_a_ring_all_reduce_moves_the_whole_message_over_the_network_even_at_two_nodes():
    # A100 (no NVLink SHARP) x 8 per node, 2 nodes, InfiniBand 1600 Gb/s: G = 16.
    result = expect(spec(), "all_reduce", 2, GIB, "ring")
    network = next(stage for stage in result.stages if stage.name == "network")
    # network bytes = 2 x 15/16 x S per node, at 8 GPUs x 1600/8/8 GB/s x InfiniBand's factor
    factor = DEFAULT_CONSTANTS.efficiency["infiniband"]
    assert network.bytes == pytest.approx(2 * 15 / 16 * GIB)
    assert network.bandwidth_gbytes_per_s == pytest.approx(8 * 25 * factor)
    # NCCL's steps: 2D = 4 of them cross the network, 14 us each (Simple).
    assert network.seconds == pytest.approx(2 * 15 / 16 * GIB / (200e9 * factor) + 4 * 14.0e-6)
    # busbw = S / t x 2 x 15/16 = at most the node's network bandwidth: no halving at 2 nodes
    assert result.busbw_gbytes_per_s < 200 * factor
    assert result.bottleneck == "network"


def test_nvls_halves_the_network_traffic_at_two_nodes_where_a_ring_does_not():
    h100 = GpuLinkSpec("nvlink", "nvswitch", 4, 8, 900)
    fabric = FabricSpec("infiniband", 3200, True, None)
    nvls = expect(spec(link=h100, fabric=fabric), "all_reduce", 2, GIB)
    ring = expect(spec(link=h100, fabric=fabric), "all_reduce", 2, GIB, "ring")
    assert nvls.algorithm == "nvls"  # auto, on an NVSwitch with NVLink SHARP
    nvls_net = next(s for s in nvls.stages if s.name == "network")
    ring_net = next(s for s in ring.stages if s.name == "network")
    assert nvls_net.bytes == pytest.approx(GIB)  # 2 (D-1)/D x S = S
    assert ring_net.bytes == pytest.approx(2 * 15 / 16 * GIB)
    assert nvls.busbw_gbytes_per_s > ring.busbw_gbytes_per_s


def test_all_gather_at_two_nodes_moves_about_the_whole_message_per_node():
    result = expect(spec(), "all_gather", 2, GIB)
    assert result.algorithm == "ring"
    network = next(stage for stage in result.stages if stage.name == "network")
    assert network.bytes == pytest.approx(15 / 16 * GIB)
    # busbw = algbw x (G-1)/G: bounded by the node's network bandwidth
    assert result.busbw_gbytes_per_s <= 8 * 25 * DEFAULT_CONSTANTS.efficiency["infiniband"]


def test_alltoall_sends_each_gpus_share_for_other_nodes_over_the_network():
    result = expect(spec(), "alltoall", 4, GIB)
    assert result.algorithm == "p2p"
    link, network = result.stages
    assert link.bytes == pytest.approx(7 / 32 * GIB)  # (m-1)/G x S per GPU
    assert network.bytes == pytest.approx(8 * 24 / 32 * GIB)  # m (G-m)/G x S per node


def test_sharp_sends_the_message_once_per_node_whatever_the_node_count():
    at = {n: expect(spec(), "all_reduce", n, GIB, "sharp", sharp=True) for n in (2, 16)}
    for result in at.values():
        network = next(s for s in result.stages if s.name == "network")
        assert network.bytes == pytest.approx(GIB)
        assert network.kind == "infiniband-sharp"


def test_a_rack_spanning_domain_leaves_through_a_limited_number_of_channels():
    nvl72 = GpuLinkSpec("nvlink", "nvswitch", 5, 72, 1800)
    result = expect(spec(gpus=4, link=nvl72), "all_reduce", 36, GIB)  # two racks
    assert (result.plan.group_gpus, result.plan.groups) == (72, 2)
    network = next(s for s in result.stages if s.name == "network")
    per_gpu = 1600 / 8 / 4 * DEFAULT_CONSTANTS.efficiency["infiniband"]
    channels = DEFAULT_CONSTANTS.domain_exit_channels
    assert channels < 72
    assert network.bandwidth_gbytes_per_s == pytest.approx(channels * per_gpu)


def test_small_messages_are_bound_by_latency():
    result = expect(spec(), "all_reduce", 8, 2**20)
    assert result.bottleneck == "latency"
    assert expect(spec(), "all_reduce", 8, GIB).bottleneck == "network"


def test_auto_picks_the_faster_of_ring_and_tree_and_says_what_it_weighed():
    small = expect(spec(), "all_reduce", 64, 2**20)
    large = expect(spec(), "all_reduce", 64, 4 * GIB)
    assert set(small.considered) == set(large.considered) == {"ring", "tree"}
    assert small.algorithm == "tree"  # log2 D latency steps win on a small message
    assert large.algorithm == "ring"  # a tree moves 2 S, a ring 2 (G-1)/G S


H100_HGX = GpuLinkSpec("nvlink", "nvswitch", 4, 8, 900)
B200_HGX = GpuLinkSpec("nvlink", "nvswitch", 5, 8, 1800)


def test_nccl_runs_the_fastest_protocol_the_hardware_allows():
    # 8 KB on one H100 node: a ring with LL (6.6 us base + 14 NVLink steps of 0.6 us) beats
    # NVLS (23 us, Simple only) and LL128 (14 us base + 14 x 1.9 us).
    tiny = expect(spec(link=H100_HGX), "all_reduce", 1, 8192)
    assert (tiny.algorithm, tiny.protocol) == ("ring", "ll")
    assert tiny.time_s == pytest.approx(
        (6.6 + 14 * 0.6) * 1e-6 + 2 * 7 / 8 * 8192 / (450e9 * 0.76 / 4), rel=1e-9
    )
    # 1 GiB: bandwidth decides, and NVLS (Simple) wins.
    assert expect(spec(link=H100_HGX), "all_reduce", 1, GIB).protocol == "simple"
    # A medium message on Hopper NVLink runs LL128 (92% of the bandwidth, 1.9 us a step): at
    # 4 MiB LL's ceiling (87.7 GB/s of bus bandwidth) costs more than LL128's longer steps.
    assert expect(spec(link=H100_HGX), "all_gather", 1, 4 * 2**20).protocol == "ll128"
    assert expect(spec(link=H100_HGX), "all_gather", 1, 2**20).protocol == "ll"


def test_ll128_is_left_off_where_nccl_leaves_it_off():
    # This NCCL enables LL128 on Volta to Hopper NVLink only: not on Blackwell, not over PCIe.
    assert expect(spec(link=B200_HGX), "all_gather", 1, 4 * 2**20).protocol != "ll128"
    pcie = GpuLinkSpec("none")
    assert expect(spec(link=pcie), "all_gather", 1, 4 * 2**20).protocol != "ll128"


@pytest.mark.parametrize(
    ("fabric", "protocols"),
    [
        # EFA's first generation delivers bytes out of order: aws-ofi-nccl runs Simple only.
        (FabricSpec("efa", 400, True, None, generation="efa-v1"), {"simple"}),
        (FabricSpec("efa", 400, True, None), {"simple"}),  # unknown generation: as the first
        (FabricSpec("efa", 3200, True, None, generation="efa-v2"), {"simple", "ll", "ll128"}),
        # GPUDirect-TCPX runs Simple only, TCPXO never LL; InfiniBand lets NCCL choose.
        (FabricSpec("tcpx", 800, True, None, generation="tcpx"), {"simple"}),
        (FabricSpec("tcpx", 1600, True, None, generation="tcpxo"), {"simple", "ll128"}),
        (FabricSpec("infiniband", 3200, True, None), {"simple", "ll", "ll128"}),
    ],
)
def test_the_network_decides_which_protocols_cross_it(fabric, protocols):
    from offerings.estimator.collectives import plan
    from offerings.estimator.nccl import protocols as allowed

    instance = spec(link=H100_HGX, fabric=fabric)
    assert set(allowed("ring", plan(instance, 2), instance)) == protocols
    assert allowed("nvls", plan(instance, 2), instance) == ("simple",)


def test_gpudirect_tcpx_runs_rings_only():
    # "TCPX only supports Ring algorithm" and is "not compatible with NVLS" (axlearn's A3 job
    # environment), so auto weighs nothing else there; TCPXO and InfiniBand weigh NVLS too.
    tcpx = spec(link=H100_HGX, fabric=FabricSpec("tcpx", 800, True, None, generation="tcpx"))
    result = expect(tcpx, "all_reduce", 4, GIB)
    assert (result.algorithm, set(result.considered)) == ("ring", {"ring"})
    tcpxo = spec(link=H100_HGX, fabric=FabricSpec("tcpx", 1600, True, None, generation="tcpxo"))
    assert set(expect(tcpxo, "all_reduce", 4, GIB).considered) == {"nvls", "ring"}


def test_the_bottleneck_counts_the_trees_corrected_bandwidth_as_transfer():
    # A tree at 1 MiB runs at about half its bandwidth (NCCL's correction): that is time the
    # bytes take, not latency, so it counts towards the stage that carries them.
    result = expect(spec(), "all_reduce", 4, 2**20, "tree")
    slowest = max(result.stages, key=lambda stage: stage.transfer_s)
    assert result.transfer_s > slowest.transfer_s
    expected = "latency" if result.transfer_s < result.time_s / 2 else slowest.name
    assert result.bottleneck == expected


def test_a_perfect_run_has_no_latency_at_all():
    from offerings.estimator.nccl import line_rate

    perfect = line_rate(DEFAULT_CONSTANTS)
    for table in perfect.nccl_latency_us.values():
        for row in table.values():
            assert set(row.values()) == {0.0}
    # ... and the defaults are copies: zeroing them left the module's tables alone.
    assert DEFAULT_CONSTANTS.nccl_latency_us["sharp"]["arity"]["simple"] == 0.4
    gb200 = spec(gpus=4, link=GpuLinkSpec("nvlink", "nvswitch", 5, 72, 1800))
    sharp = expect(gb200, "all_reduce", 36, 8192, "sharp", sharp=True, constants=perfect)
    assert sharp.time_s == pytest.approx(sharp.transfer_s)


def test_tcpxo_and_tcpx_have_their_own_factors_and_an_unknown_generation_takes_tcpx():
    factors = DEFAULT_CONSTANTS.efficiency
    assert factors["tcpxo"] > 1.5 * factors["tcpx"]  # A3 Mega's TCPXO: twice TCPX's share
    same_ports = 1600
    mega = spec(
        link=H100_HGX, fabric=FabricSpec("tcpx", same_ports, True, None, generation="tcpxo")
    )
    high = spec(link=H100_HGX, fabric=FabricSpec("tcpx", same_ports, True, None, generation="tcpx"))
    unknown = spec(link=H100_HGX, fabric=FabricSpec("tcpx", same_ports, True, None))
    busbw = {
        name: expect(instance, "all_gather", 2, 8 * GIB).busbw_gbytes_per_s
        for name, instance in (("mega", mega), ("high", high), ("unknown", unknown))
    }
    assert busbw["mega"] > 1.5 * busbw["high"]
    assert busbw["unknown"] == busbw["high"]


def test_the_estimators_step_communication_is_this_function():
    instance = spec(link=GpuLinkSpec("nvlink", "nvswitch", 4, 8, 900))
    ddp = estimate_training(instance, Job(params_b=7, mode="train-ddp"), nodes=4)
    assert ddp.comm_s == pytest.approx(expect(instance, "all_reduce", 4, 14 * 10**9).time_s)
    fsdp = estimate_training(instance, Job(params_b=7, mode="train-fsdp"), nodes=4)
    gather = expect(instance, "all_gather", 4, 14 * 10**9).time_s
    scatter = expect(instance, "reduce_scatter", 4, 14 * 10**9).time_s
    k = fsdp.micro_batches
    assert fsdp.comm_s == pytest.approx(k * (2 * gather + scatter))


# -- the API ------------------------------------------------------------------------------------


def test_the_api_answers_the_models_figures_with_the_facts_it_used(client, cluster):
    body = get(client, "instance=acme/ib-8x&nodes=2").json()
    assert body["cannot_estimate"] is False
    assert body["algorithm"] == "nvls"
    assert body["protocol"] == "simple"  # NVLS runs Simple only
    assert body["collective"] == "all_reduce"
    assert body["message_bytes"] == GIB
    assert (body["nodes"], body["gpus"]) == (2, 16)
    facts = {fact["fact"]: fact for fact in body["inputs"]}
    assert facts["fabric.bandwidth_gbits_per_s"]["value"] == 3200
    assert facts["nvlink.bandwidth_gbytes_per_s"]["value"] == 900.0
    assert body["bottleneck"] in ("link", "network")
    assert body["time_s"] * body["algbw_gbytes_per_s"] * 1e9 == pytest.approx(GIB, rel=1e-4)
    assert body["busbw_gbytes_per_s"] == pytest.approx(
        body["algbw_gbytes_per_s"] * 2 * 15 / 16, rel=1e-4
    )
    # the id works as well as provider/slug, and answers the same
    same = get(client, f"instance={cluster['ib'].pk}&nodes=2").json()
    assert same["busbw_gbytes_per_s"] == body["busbw_gbytes_per_s"]


def test_unknown_facts_answer_cannot_estimate_with_the_missing_fact(client, cluster):
    body = get(client, "instance=acme/mystery-8x&nodes=2").json()
    assert body["cannot_estimate"] is True
    assert body["busbw_gbytes_per_s"] is None
    assert "fabric technology" in body["missing"]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("instance=acme/pcie-8x&algorithm=nvls", "NVLS needs an NVSwitch"),
        ("instance=acme/efa-8x&nodes=2&algorithm=sharp", "this type has efa"),
        ("instance=acme/ib-8x&algorithm=tree", "runs between nodes"),
        ("instance=acme/ib-8x&nodes=2&collective=alltoall&algorithm=ring", "point-to-point"),
        ("instance=acme/ib-8x&nodes=2&collective=all_gather&algorithm=tree", "ring, NVLS or SHARP"),
    ],
)
def test_an_algorithm_the_hardware_cannot_run_says_why(client, cluster, query, reason):
    body = get(client, query).json()
    assert body["cannot_estimate"] is True
    assert reason in body["reason"]


def test_sharp_follows_the_providers_readiness(client, cluster):
    unknown = get(client, "instance=acme/ib-8x&nodes=4&algorithm=sharp").json()
    assert unknown["missing"] == ["whether the provider offers SHARP"]
    assert get(client, "instance=acme/ib-8x&nodes=4").json()["algorithm"] == "nvls"
    ProviderReadiness.objects.create(
        provider=cluster["ib"].provider,
        fact="sharp",
        flag=True,
        basis="provider",
        source_url=SOURCE,
        verified_at=date(2026, 12, 1),
    )
    # NCCL runs SHARP (CollNet) only when asked: `auto` still answers NVLS ...
    auto = get(client, "instance=acme/ib-8x&nodes=4&message_bytes=1073741825").json()
    assert auto["algorithm"] == "nvls"
    # ... and asked for, SHARP answers now that the provider offers it, citing that fact.
    body = get(client, "instance=acme/ib-8x&nodes=4&algorithm=sharp").json()
    assert body["algorithm"] == "sharp"
    sharp = next(fact for fact in body["inputs"] if fact["fact"] == "provider.sharp")
    assert (sharp["value"], sharp["source_url"]) == (True, SOURCE)


def test_the_error_band_holds_the_answer_even_where_held_out_runs_lie_to_one_side():
    from offerings.estimator.calibration import error_band

    # Every held-out GPUDirect-TCPX run from 256 MiB up measured above the model: the band
    # reaches from the answer up to where four in five of them fell, not beside it.
    errors = HELD_OUT_BY_SIZE["large"]["tcpx"]
    assert errors.low_ratio > 1
    band = error_band("tcpx", 40.0, GIB)
    assert band["low_gbytes_per_s"] == 40.0
    assert band["high_gbytes_per_s"] == pytest.approx(40.0 * errors.high_ratio, rel=1e-5)


def test_the_type_page_rounds_the_band_outwards():
    from offerings.estimator.collective_views import _outwards

    assert (_outwards(40.05, math.floor), _outwards(40.05, math.ceil)) == (40, 41)
    assert _outwards(None, math.floor) is None


def test_published_results_and_the_error_band_come_with_the_answer(client, cluster):
    publish_efa_run(cluster)
    body = get(client, "instance=acme/efa-8x&nodes=2").json()
    assert [r["busbw_gbytes_per_s"] for r in body["published"]] == [435.1]
    band = body["error_band"]
    large = HELD_OUT_BY_SIZE["large"]["efa"]
    busbw = body["busbw_gbytes_per_s"]
    assert (band["kind"], band["message_sizes"]) == ("efa", "large")
    assert band["held_out_points"] == large.points < HELD_OUT["efa"].points
    assert band["low_gbytes_per_s"] == pytest.approx(busbw * large.low_ratio, rel=1e-4)
    # the top is capped at what the hardware reaches at line rate with no latency
    assert band["low_gbytes_per_s"] <= band["high_gbytes_per_s"]
    assert band["high_gbytes_per_s"] <= busbw * large.high_ratio * (1 + 1e-5)
    # TCP over the general network has no held-out result: no band is invented
    tcp = get(client, "instance=acme/pcie-8x&nodes=2").json()["error_band"]
    assert tcp["held_out_points"] == 0
    assert tcp["low_gbytes_per_s"] is None


def test_a_node_count_the_provider_does_not_book_is_answered_with_a_warning(client, cluster):
    body = get(client, "instance=datacrunch/single-8x&nodes=2").json()
    assert body["cannot_estimate"] is False
    assert body["warnings"] == [
        "The provider does not book nodes of this type together on one fabric."
    ]


@pytest.mark.parametrize(
    ("query", "bad"),
    [
        ("", {"instance"}),
        ("instance=nope/none", {"instance"}),
        ("instance=acme/ib-8x,acme/efa-8x", {"instance"}),
        ("instance=acme/ib-8x&instance=acme/efa-8x", {"instance"}),
        ("instance=acme/ib-8x&nodes=0", {"nodes"}),
        ("instance=acme/ib-8x&nodes=1025", {"nodes"}),
        ("instance=acme/ib-8x&nodes=2.5", {"nodes"}),
        ("instance=acme/ib-8x&message_bytes=1e9", {"message_bytes"}),
        ("instance=acme/ib-8x&message_bytes=0", {"message_bytes"}),
        ("instance=acme/ib-8x&collective=broadcast&algorithm=fast", {"collective", "algorithm"}),
        ("instance=%00", {"instance"}),
    ],
)
def test_bad_parameters_answer_400_naming_each(client, cluster, query, bad):
    response = get(client, query)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_parameters"
    assert set(body["fields"]) == bad


def test_the_openapi_document_has_the_endpoint(client, db):
    paths = client.get("/api/openapi.json").json()["paths"]
    item = paths["/api/collectives"]["get"]
    names = {parameter["name"] for parameter in item["parameters"]}
    assert names == {"instance", "collective", "nodes", "message_bytes", "algorithm"}
    schema = item["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"busbw_gbytes_per_s", "error_band", "inputs", "published", "missing"} <= set(
        schema["properties"]
    )


def test_the_estimator_and_the_api_give_one_answer_whatever_sharp_is_offered(client, cluster):
    def both() -> tuple[float, float]:
        expected = get(client, "instance=acme/ib-8x&nodes=4&message_bytes=2000000000").json()
        results = client.get("/api/estimate?params_b=1&mode=train-ddp&nodes=4").json()["results"]
        row = next(r for r in results if r["instance"]["name"] == "ib.8x")
        return expected["time_s"], row["comm_s"]

    before = both()
    assert before[0] == pytest.approx(before[1], rel=1e-5)  # DDP: one all-reduce of 2 GB
    ProviderReadiness.objects.create(
        provider=cluster["ib"].provider,
        fact="sharp",
        flag=True,
        basis="provider",
        source_url=SOURCE,
        verified_at=date(2026, 12, 1),
    )
    after = both()
    # SHARP is opt-in in NCCL: neither the estimate nor `auto` turns to it because it is offered
    assert after == pytest.approx(before, rel=1e-9)


# -- the type's page ---------------------------------------------------------------------------


def _section(html: str, anchor: str) -> str:
    start = html.index(f'id="{anchor}"')
    return html[start : html.index("</section>", start)]


def test_the_type_page_shows_what_nccl_tests_should_show_at_each_bookable_node_count(
    client, cluster
):
    html = client.get("/instances/acme/efa-8x/").content.decode()
    section = _section(html, "expected-collectives")
    rows = re.findall(r"<tr>\s*<td data-label=\"Nodes\">(\d+)</td>", section)
    assert rows == ["1", "2", "4", "8", "16"]
    two = expect(
        spec(
            link=GpuLinkSpec("nvlink", "nvswitch", 4, 8, 900),
            fabric=FabricSpec("efa", 3200, True, None),
        ),
        "all_reduce",
        2,
        GIB,
    )
    assert f"{two.busbw_gbytes_per_s:.1f}" in section
    assert "nvls" in section
    # A type booked one node at a time shows one node
    single = _section(
        client.get("/instances/datacrunch/single-8x/").content.decode(), "expected-collectives"
    )
    assert re.findall(r"<td data-label=\"Nodes\">(\d+)</td>", single) == ["1"]
    # Unknown facts say which, never a figure
    mystery = _section(
        client.get("/instances/acme/mystery-8x/").content.decode(), "expected-collectives"
    )
    assert "unknown: GPU-to-GPU link (NVLink or PCIe only)" in mystery


def test_the_model_stands_beside_each_published_result_in_both_languages(client, cluster):
    publish_efa_run(cluster)
    modelled = get(client, "instance=acme/efa-8x&nodes=2").json()["busbw_gbytes_per_s"]
    for prefix, heading, label in (
        ("", "What nccl-tests should show", "Model (GB/s)"),
        ("/zh-hans", "nccl-tests 应当测出多少", "模型（GB/s）"),
    ):
        html = client.get(f"{prefix}/instances/acme/efa-8x/").content.decode()
        assert heading in html
        published = _section(html, "collectives")
        assert f'data-label="{label}">{modelled:.1f}</td>' in published


def test_a_node_uses_all_its_ports_and_only_a_rack_spanning_domain_is_capped():
    sixteen = spec(gpus=16, link=GpuLinkSpec("nvlink", "nvswitch", 3, 16, 600))
    result = expect(sixteen, "all_reduce", 2, GIB, "ring")
    network = next(s for s in result.stages if s.name == "network")
    per_gpu = 1600 / 8 / 16 * DEFAULT_CONSTANTS.efficiency["infiniband"]
    assert network.bandwidth_gbytes_per_s == pytest.approx(16 * per_gpu)  # not 9 ports


def test_too_few_held_out_results_give_no_band_rather_than_a_confident_one():
    from offerings.estimator.calibration import BAND_POINTS_MIN, error_band

    few = [
        (kind, errors)
        for kind, errors in HELD_OUT_BY_SIZE["large"].items()
        if errors.points < BAND_POINTS_MIN
    ]
    assert few  # one NVLink ring result is held out at 256 MiB and up
    kind, errors = few[0]
    band = error_band(kind, 100.0, GIB)
    assert band["held_out_points"] == errors.points
    assert band["low_gbytes_per_s"] is None
    assert band["high_gbytes_per_s"] is None
