"""The estimator's model: hand-computed numbers, limits, monotonicity, calibration, bad input.

Pure unit tests: no database. Arithmetic is written out next to each expected number.
"""

import json
import math
from dataclasses import replace
from itertools import pairwise
from types import SimpleNamespace

import pytest

from offerings.estimator.calibration import (
    ALL_POINTS,
    CALIBRATION_POINTS,
    HELD_OUT,
    RECORDED_RUNS,
    calibration_report,
    fit_constants,
    fit_efficiency,
    held_out_errors,
)
from offerings.estimator.collectives import plan
from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    EFFICIENCY,
    FORMULAS,
    JOB_KEYS,
    NETWORK_CALL_LATENCY_US,
    FabricSpec,
    GpuLinkSpec,
    InstanceSpec,
    Job,
    parse_job,
)
from offerings.estimator.estimation import (
    choose_inference_row,
    estimate,
    estimate_inference,
    estimate_training,
    rank_key,
    tier,
)
from offerings.estimator.nccl import expect

GIB = 2**30

HGX_H100 = GpuLinkSpec("nvlink", "nvswitch", 4, 8, 900)
HGX_A100 = GpuLinkSpec("nvlink", "nvswitch", 3, 8, 600)
NVL72 = GpuLinkSpec("nvlink", "nvswitch", 5, 72, 1800)
NO_LINK = GpuLinkSpec("none")
IB_3200 = FabricSpec("infiniband", 3200, True, None)


def make(
    gpus: int = 8,
    link: GpuLinkSpec = HGX_H100,
    fabric: FabricSpec = IB_3200,
    memory_gib: float | None = 80,
    tflops: float | None = 1000.0,
    pcie: int | None = 5,
    price: float | None = 40.0,
    id: int = 1,
) -> InstanceSpec:
    return InstanceSpec(
        id=id,
        name=f"test-{id}",
        gpu_count=gpus,
        gpu_memory_gib=memory_gib,
        bf16_dense_tflops=tflops,
        pcie_generation=pcie,
        link=link,
        fabric=fabric,
        price_per_hour_usd=price,
        provider="acme",
        url=f"https://example.test/{id}",
    )


# ------------------------------------------------------------------------------------------
# Hand-computed numbers
# ------------------------------------------------------------------------------------------


def test_ddp_on_one_nvswitch_node_matches_hand_arithmetic() -> None:
    constants = DEFAULT_CONSTANTS.with_efficiency(nvlink_sharp=1.0)
    job = Job(params_b=1, mode="train-ddp", tokens_per_step=1_048_576, mfu=0.5)
    row = estimate_training(make(), job, nodes=1, constants=constants)

    # S = 1e9 params x 2 bytes = 2e9 B; B_intra = 900 / 2 x 1.0 = 450 GB/s; m = 8, D = 1.
    # NVLS all-reduce: 2 x 7/8 x 2e9 / 450e9 = 0.00777778 s, plus NCCL's one NVLS latency of
    # 23 us (no base latency for NVLS) = 0.00780078 s. (Before NCCL's protocol model, issue 31:
    # 14 ring steps of 3.4 us and an 8.4 us base, 0.00783378 s.)
    assert row.comm_intra_s == pytest.approx(0.00780078, rel=1e-5)
    assert row.comm_inter_s == 0
    assert row.comm_s == pytest.approx(0.00780078, rel=1e-5)
    # compute = 6 x 1e9 x 1,048,576 / (8 x 1000e12 x 0.5) = 6.291456e15 / 4e15 = 1.572864 s
    assert row.compute_s == pytest.approx(1.572864, rel=1e-9)
    # step = 1.572864 + 0.00780078 = 1.58066478 s; efficiency = 1.572864 / 1.58066478
    assert row.step_s == pytest.approx(1.58066478, rel=1e-6)
    assert row.efficiency == pytest.approx(0.9950649, rel=1e-6)
    # cost per step = 1 node x $40/h x 1.58066478 s / 3600 = $0.01756294
    # per billion tokens = 0.01756294 / 1,048,576 x 1e9 = $16.7493
    assert row.cost_per_step_usd == pytest.approx(0.01756294, rel=1e-6)
    assert row.cost_per_billion_tokens_usd == pytest.approx(16.7493, rel=1e-5)
    # Memory, DDP: 1e9 x (2 + 2 + 12) B = 16e9 B = 14.901 GiB per GPU; limit 0.8 x 80 = 64 GiB
    assert row.memory_per_gpu_gib == pytest.approx(14.90116, rel=1e-6)
    assert row.memory_limit_gib == pytest.approx(64.0)
    assert row.fits
    assert row.intra_gbytes_per_s_per_gpu == pytest.approx(450.0)
    assert row.inter_gbytes_per_s_per_gpu is None
    assert row.intra_link == "nvlink-sharp"


def test_fsdp_on_two_infiniband_nodes_matches_hand_arithmetic() -> None:
    constants = DEFAULT_CONSTANTS.with_efficiency(nvlink_sharp=1.0, infiniband=0.5)
    job = Job(params_b=10, mode="train-fsdp", overlap=0.5, micro_batch_tokens=131_072)
    row = estimate_training(make(), job, nodes=2, constants=constants)

    # S = 10e9 x 2 = 20e9 B; G = 16 GPUs, m = 8 GPUs per node, D = 2 nodes.
    # B_intra = 450 GB/s; B_inter = 3200 Gb/s / 8 / 8 GPUs x 0.5 = 25 GB/s per GPU.
    assert row.intra_gbytes_per_s_per_gpu == pytest.approx(450.0)
    assert row.inter_gbytes_per_s_per_gpu == pytest.approx(25.0)
    # k = max(1, ceil(4,194,304 / (16 GPUs x 131,072))) = 2 micro-batches per step.
    assert row.micro_batches == 2
    # FSDP = per micro-batch two parameter all-gathers (forward, backward) and one gradient
    # reduce-scatter: 6 calls. NCCL runs both as one ring through all 16 GPUs (changed with the
    # collective model of issue 31: before, a pass crossed the network with (D-1)/D of the
    # message, which only in-network reduction achieves), and a ring reduces on the GPUs, so the
    # NVSwitch runs at the plain NVLink factor (0.76): B_link = 450 x 0.76 = 342 GB/s.
    # link per call = 15/16 x 20e9 / 342e9 + (16 - 2) steps x 3.4e-6 = 0.05487216 s
    assert row.comm_intra_s == pytest.approx(6 * 0.05487216, rel=1e-6)
    # network per call = 15/16 x 20e9 / (8 x 25e9) + 1 step x 14e-6 = 0.093764 s (NCCL's
    # Simple network step; 9.6 us in the older tuning table used before issue 31)
    assert row.comm_inter_s == pytest.approx(6 * 0.093764, rel=1e-6)
    # a call, as NCCL's model: the slower stage's bytes (0.09375 s) + every step's latency
    # (14 x 3.4 + 14 us) + 8.4e-6 base + 72e-6 for a Simple call crossing InfiniBand (the fitted
    # per-call network latency) = 0.093892 s; 6 calls = 0.563352 s (Simple wins: LL and LL128
    # move this much at a quarter and 92% of its bandwidth)
    assert row.comm_s == pytest.approx(0.563352, rel=1e-6)
    # compute = 6 x 10e9 x 4,194,304 / (16 x 1000e12 x 0.4) = 2.5165824e17 / 6.4e15 = 39.3216
    assert row.compute_s == pytest.approx(39.3216, rel=1e-9)
    # step = 39.3216 + (1 - 0.5) x 0.563352 = 39.603276 s
    assert row.step_s == pytest.approx(39.603276, rel=1e-7)
    # cost = 2 nodes x $40/h x 39.603276 / 3600 = $0.88007280 per step
    assert row.cost_per_step_usd == pytest.approx(0.8800728, rel=1e-6)
    # FSDP memory: 10e9 x (2 + 2 + 12) / 16 GPUs = 1e10 B = 9.3132 GiB per GPU
    assert row.memory_per_gpu_gib == pytest.approx(9.313226, rel=1e-6)
    assert (row.group_gpus, row.groups, row.bottleneck) == (8, 2, "compute")


def test_fsdp_gathers_and_scatters_for_every_micro_batch_at_the_default_size() -> None:
    constants = DEFAULT_CONSTANTS.with_efficiency(nvlink_sharp=1.0, infiniband=0.5)
    job = Job(params_b=10, mode="train-fsdp")  # micro_batch_tokens 16,384 by default
    row = estimate_training(make(), job, nodes=2, constants=constants)
    # k = ceil(4,194,304 / (16 x 16,384)) = 16: 48 calls of the 0.093764 s network stage.
    assert row.micro_batches == 16
    assert row.comm_inter_s == pytest.approx(48 * 0.093764, rel=1e-6)
    # comm = 48 x 0.093892 (a call, above) = 4.506816 s: 16 times one set of calls.
    assert row.comm_s == pytest.approx(4.506816, rel=1e-6)
    # One node: k = ceil(4,194,304 / (8 x 16,384)) = 32, NVLink only: 96 ring calls of
    # 7/8 x 20e9 / (450e9 x 0.76) + 7 x 3.4e-6 s, each + 8.4e-6.
    one = estimate_training(make(), job, nodes=1, constants=constants)
    assert one.micro_batches == 32
    ring = 7 / 8 * 20e9 / (450e9 * 0.76) + 7 * 3.4e-6
    assert one.comm_s == pytest.approx(96 * (ring + 8.4e-6), rel=1e-6)


def test_ddp_all_reduces_once_per_step_whatever_the_micro_batches() -> None:
    job = Job(params_b=1, mode="train-ddp")
    many = estimate_training(make(), replace(job, micro_batch_tokens=1024), nodes=2)
    one = estimate_training(make(), replace(job, micro_batch_tokens=10**9), nodes=2)
    assert (many.micro_batches, one.micro_batches) == (256, 1)
    assert many.comm_s == one.comm_s
    assert many.step_s == one.step_s


def test_micro_batches_are_at_least_one_and_round_a_partial_one_up() -> None:
    job = Job(params_b=1, mode="train-fsdp", tokens_per_step=1_048_576)
    # 1,048,576 / (24 x 16,384) = 2.67: a partial third micro-batch is a whole one.
    assert job.micro_batches(24) == 3
    assert job.micro_batches(8) == 8
    assert job.micro_batches(1024) == 1  # 0.0625 of a micro-batch: still one
    assert estimate_inference(make(), Job(params_b=1, mode="inference"), 1).micro_batches is None


def test_inference_need_is_weights_plus_kv_cache() -> None:
    job = Job(params_b=70, mode="inference", context_tokens=32_768, batch=1)
    row = estimate_inference(make(), job, nodes=1)
    # weights 70e9 x 2 = 140e9 B = 130.385 GiB; KV 32,768 x 1 x 327,680 B = 10 GiB exactly
    assert row.needed_gib == pytest.approx(140e9 / GIB + 10, rel=1e-9)
    # One 8-GPU NVSwitch domain: 8 x 80 GiB x 0.9 = 576 GiB usable, so it fits.
    assert row.fits
    assert row.domain_gpus == 8
    assert row.tp_fabric_s_per_token is None


def test_tensor_parallel_cost_per_token_matches_hand_arithmetic() -> None:
    constants = DEFAULT_CONSTANTS.with_efficiency(infiniband=0.5)
    # P = 12 x 128^2 x L^3 with L = 40: 196,608 x 64,000 = 12,582,912,000 parameters.
    job = Job(params_b=12.582912, mode="inference", context_tokens=4096, batch=1)
    one_gpu = make(
        gpus=1, link=NO_LINK, memory_gib=16, fabric=FabricSpec("infiniband", 400, True, None)
    )
    row = estimate_inference(one_gpu, job, nodes=1, constants=constants)
    # need = 12,582,912,000 x 2 B + 4096 x 327,680 B = 25,165,824,000 + 1,342,177,280 B
    #      = 26,508,001,280 B = 24.688 GiB; one GPU holds 16 x 0.9 = 14.4 GiB -> 2 nodes.
    assert row.needed_gib == pytest.approx(26_508_001_280 / GIB)
    assert not row.fits
    assert row.nodes_needed == 2
    # Layers 40, hidden 128 x 40 = 5120; message = 1 x 5120 x 2 B = 10,240 B.
    # m = 1, D = 2; B_inter = 400 / 8 / 1 x 0.5 = 25 GB/s. NCCL picks LL for 10 KB (its
    # lowest latency): a quarter of the bandwidth, 6.25 GB/s, 2.7 us a network step, base 6.6.
    # ring all-reduce: 2 x 1/2 x 10,240 B / 6.25e9 = 1.6384e-6 s + 2D = 4 steps x 2.7e-6
    # = 12.4384e-6 s over the network; the call adds the 6.6e-6 base and half of InfiniBand's
    # fitted 72 us per-call latency (NCCL counts a network's latency twice for Simple, once for
    # LL) = 55.0384e-6 s. (Before issue 31's protocol model: 2 steps at 2.7 us and a 3.6 us
    # base, no network latency, 9.4096e-6 s.)
    # per token = 2 all-reduces x 40 layers = 80 x ...
    assert row.tp_fabric_s_per_token == pytest.approx(80 * 12.4384e-6, rel=1e-9)
    assert row.tp_comm_s_per_token == pytest.approx(80 * 55.0384e-6, rel=1e-9)


# ------------------------------------------------------------------------------------------
# Limiting cases
# ------------------------------------------------------------------------------------------


def test_one_gpu_has_no_communication_at_all() -> None:
    row = estimate_training(make(gpus=1, link=NO_LINK), Job(params_b=0.5, mode="train-ddp"), 1)
    assert (row.comm_intra_s, row.comm_inter_s, row.comm_s) == (0, 0, 0)
    assert row.efficiency == 1.0
    assert row.step_s == row.compute_s


def test_one_node_has_no_inter_node_term() -> None:
    for mode in ("train-ddp", "train-fsdp"):
        row = estimate_training(make(), Job(params_b=1, mode=mode), nodes=1)
        assert row.comm_inter_s == 0
        assert row.groups == 1
        assert row.inter_link is None
        assert row.comm_intra_s > 0


def test_one_node_needs_no_fabric_data() -> None:
    unknown_fabric = FabricSpec("unknown", None, None, None)
    row = estimate_training(make(fabric=unknown_fabric), Job(params_b=1, mode="train-ddp"), 1)
    assert row.fits
    assert row.missing == ()
    assert row.step_s is not None


def test_pcie_only_nodes_sync_far_slower_than_nvswitch_nodes() -> None:
    job = Job(params_b=7, mode="train-ddp")
    nvswitch = estimate_training(make(link=HGX_H100), job, nodes=1)
    pcie = estimate_training(make(link=NO_LINK, pcie=5), job, nodes=1)
    assert pcie.intra_link == "pcie"
    # 450 x 1.05 GB/s against 63 x 0.5 GB/s per GPU: fifteen times slower.
    assert pcie.comm_s / nvswitch.comm_s > 10


def test_bridge_pairs_make_the_node_wide_ring_cross_pcie() -> None:
    bridged = GpuLinkSpec("nvlink", "bridge", 3, 2, 600)
    row = estimate_training(make(link=bridged, pcie=4), Job(params_b=1, mode="train-ddp"), 1)
    assert row.intra_link == "pcie"
    assert row.intra_gbytes_per_s_per_gpu == pytest.approx(31.5 * EFFICIENCY["pcie"])
    two_gpus = estimate_training(make(gpus=2, link=bridged), Job(params_b=1, mode="train-ddp"), 1)
    assert two_gpus.intra_link == "nvlink"  # a 2-GPU instance is all bridge


def test_nvl72_counts_as_one_nvlink_domain_up_to_72_gpus() -> None:
    job = Job(params_b=70, mode="train-fsdp")
    gb200 = make(gpus=4, link=NVL72, fabric=FabricSpec("infiniband", 1600, True, None))
    for nodes in (1, 2, 4, 8, 18):
        row = estimate_training(gb200, job, nodes)
        # N nodes x 4 GPUs <= 72: everything at NVLink speed, no fabric stage.
        assert row.group_gpus == 4 * nodes
        assert row.groups == 1
        assert row.comm_inter_s == 0
        assert row.intra_gbytes_per_s_per_gpu == pytest.approx(900 * EFFICIENCY["nvlink5-sharp"])
    beyond = estimate_training(gb200, job, 36)
    # 144 GPUs = two 72-GPU domains joined by the fabric.
    assert (beyond.group_gpus, beyond.groups) == (72, 2)
    assert beyond.comm_inter_s > 0


def test_nvl72_inference_domain_grows_with_the_nodes_booked() -> None:
    job = Job(params_b=1000, mode="inference", context_tokens=8192)
    gb200 = make(
        gpus=4, link=NVL72, memory_gib=186, fabric=FabricSpec("infiniband", 1600, True, None)
    )
    # 1e12 x 2 B + 8192 x 327,680 B = 1,864.6 GiB; one node holds 4 x 186 x 0.9 = 669.6 GiB.
    assert not estimate_inference(gb200, job, 1).fits
    row = estimate_inference(gb200, job, 4)  # 16 GPUs: 2,678 GiB usable
    assert row.fits
    assert row.domain_gpus == 16


def test_a_domain_larger_than_the_node_only_spans_nodes_through_nvswitch() -> None:
    # A 1-GPU slice of an 8-GPU mesh server: the other GPUs belong to other tenants.
    odd = GpuLinkSpec("nvlink", "hybrid-cube-mesh", 2, 8, 300)
    the_plan = plan(
        make(
            gpus=1,
            link=odd,
            fabric=FabricSpec("ethernet", None, True, None, network_gbits_per_s=25),
        ),
        2,
    )
    assert (the_plan.group_gpus, the_plan.groups) == (1, 2)


# ------------------------------------------------------------------------------------------
# Monotonicity
# ------------------------------------------------------------------------------------------

LINKS = {
    "hgx-h100": HGX_H100,
    "hgx-a100": HGX_A100,
    "pcie": NO_LINK,
    "bridge": GpuLinkSpec("nvlink", "bridge", 3, 2, 600),
}
FABRICS = ("infiniband", "roce", "efa", "tcpx", "ethernet")


@pytest.mark.parametrize("mode", ["train-ddp", "train-fsdp"])
@pytest.mark.parametrize("fabric", FABRICS)
def test_more_fabric_bandwidth_never_slows_a_step(mode: str, fabric: str) -> None:
    job = Job(params_b=13, mode=mode)
    for nodes in (1, 2, 3, 8, 64):
        # Plain Ethernet has no back-end: its nodes talk over the general network.
        steps = [
            estimate_training(
                make(
                    fabric=FabricSpec(fabric, gbps, True, None)
                    if fabric != "ethernet"
                    else FabricSpec(fabric, None, True, None, network_gbits_per_s=gbps)
                ),
                job,
                nodes,
            ).step_s
            for gbps in (10, 100, 400, 800, 1600, 3200, 6400)
        ]
        assert all(a >= b for a, b in pairwise(steps)), (nodes, steps)


@pytest.mark.parametrize("mode", ["train-ddp", "train-fsdp"])
def test_more_nvlink_bandwidth_never_slows_a_step(mode: str) -> None:
    job = Job(params_b=13, mode=mode)
    for nodes in (1, 2, 16):
        steps = [
            estimate_training(
                make(link=GpuLinkSpec("nvlink", "nvswitch", 4, 8, bandwidth)), job, nodes
            ).step_s
            for bandwidth in (100, 300, 600, 900, 1800)
        ]
        assert all(a >= b for a, b in pairwise(steps)), (nodes, steps)


def test_faster_pcie_never_slows_a_step() -> None:
    job = Job(params_b=3, mode="train-ddp")
    steps = [estimate_training(make(link=NO_LINK, pcie=gen), job, 1).step_s for gen in (3, 4, 5, 6)]
    assert all(a > b for a, b in pairwise(steps))


@pytest.mark.parametrize("mode", ["train-ddp", "train-fsdp"])
@pytest.mark.parametrize(
    "instance",
    [
        make(),
        make(
            link=NO_LINK, fabric=FabricSpec("ethernet", None, True, None, network_gbits_per_s=100)
        ),
        make(link=LINKS["bridge"], fabric=FabricSpec("efa", 400, True, None)),
        make(gpus=4, link=NVL72, fabric=FabricSpec("infiniband", 1600, True, None)),
        make(gpus=1, link=NO_LINK, fabric=FabricSpec("tcpx", 200, True, None)),
    ],
    ids=["hgx-ib", "pcie-ethernet", "bridge-efa", "nvl72-ib", "single-gpu-tcpx"],
)
def test_more_nodes_never_raise_efficiency(mode: str, instance: InstanceSpec) -> None:
    # Node counts that split the step into whole micro-batches (or one): a count that leaves a
    # partial micro-batch pays for a whole one, so 3 nodes (2.67 micro-batches, run as 3) can
    # be less efficient than 4 (2).
    job = Job(params_b=8, mode=mode, tokens_per_step=1_048_576)
    node_counts = [1, 2, 4, 8, 16, 32, 64, 128]
    efficiencies = [estimate_training(instance, job, n).efficiency for n in node_counts]
    assert all(a >= b for a, b in pairwise(efficiencies)), efficiencies
    # With one micro-batch per step at every size, no node count is an exception.
    single = replace(job, micro_batch_tokens=1_048_576)
    node_counts = [1, 2, 3, 4, 8, 16, 17, 18, 19, 32, 64, 128]
    efficiencies = [estimate_training(instance, single, n).efficiency for n in node_counts]
    assert all(a >= b for a, b in pairwise(efficiencies)), efficiencies


def test_overlap_hides_communication_but_never_compute() -> None:
    instance = make(
        link=NO_LINK, fabric=FabricSpec("ethernet", None, True, None, network_gbits_per_s=100)
    )
    rows = [
        estimate_training(instance, Job(params_b=7, mode="train-fsdp", overlap=o), 4)
        for o in (0.0, 0.5, 1.0)
    ]
    assert rows[0].step_s > rows[1].step_s > rows[2].step_s
    assert rows[2].step_s == pytest.approx(rows[2].compute_s)


# ------------------------------------------------------------------------------------------
# Fit, availability, unknowns, ranking
# ------------------------------------------------------------------------------------------


def test_multi_node_without_self_serve_booking_does_not_fit() -> None:
    job = Job(params_b=1, mode="train-ddp")
    single = make(fabric=FabricSpec("infiniband", 3200, False, None))
    assert estimate_training(single, job, 1).fits
    row = estimate_training(single, job, 2)
    assert not row.fits
    assert "no self-serve multi-node" in row.reason
    assert row.cost_per_billion_tokens_usd is None
    unstated = estimate_training(make(fabric=FabricSpec("infiniband", 3200, None, None)), job, 2)
    assert not unstated.fits
    assert "not stated" in unstated.reason


def test_nodes_beyond_max_nodes_do_not_fit() -> None:
    capped = make(fabric=FabricSpec("infiniband", 3200, True, 4))
    job = Job(params_b=1, mode="train-ddp")
    assert estimate_training(capped, job, 4).fits
    row = estimate_training(capped, job, 8)
    assert not row.fits
    assert "largest self-serve cluster of 4 nodes" in row.reason


def test_memory_decides_fits_with_the_reason() -> None:
    # DDP replicates 16 bytes per parameter: 7e9 x 16 = 104.3 GiB > 0.8 x 80 GiB.
    ddp = estimate_training(make(), Job(params_b=7, mode="train-ddp"), 1)
    assert not ddp.fits
    assert "104.3 GiB per GPU (replicated on each of 8 GPUs)" in ddp.reason
    # FSDP shards it over the 8 GPUs: 13.0 GiB each.
    assert estimate_training(make(), Job(params_b=7, mode="train-fsdp"), 1).fits


def test_unknown_inputs_are_named_never_guessed() -> None:
    job = Job(params_b=1, mode="train-ddp")
    unknown_link = estimate_training(make(link=GpuLinkSpec("unknown")), job, 1)
    assert unknown_link.comm_s is None
    assert unknown_link.step_s is None
    assert unknown_link.missing == ("GPU-to-GPU link (NVLink or PCIe only)",)
    assert unknown_link.verdict.startswith("cannot estimate")
    no_fabric_rate = estimate_training(make(fabric=FabricSpec("efa", None, True, None)), job, 2)
    assert "fabric bandwidth" in no_fabric_rate.missing
    assert no_fabric_rate.comm_inter_s is None
    no_tflops = estimate_training(make(tflops=None), job, 1)
    assert "dense BF16 TFLOPS" in no_tflops.missing
    assert no_tflops.cost_per_billion_tokens_usd is None
    no_domain = GpuLinkSpec("nvlink", "mesh", 3, None, 600)
    assert "NVLink domain size" in estimate_training(make(link=no_domain), job, 1).missing


def test_nvswitch_without_a_stated_domain_covers_the_node() -> None:
    link = GpuLinkSpec("nvlink", "nvswitch", 4, None, 900)
    row = estimate_training(make(link=link), Job(params_b=1, mode="train-ddp"), 1)
    assert row.intra_link == "nvlink-sharp"
    assert row.missing == ()


def test_results_rank_by_cost_per_billion_tokens_with_null_cost_last() -> None:
    instances = [
        make(id=1, price=80.0),
        make(id=2, price=None),
        make(id=3, price=20.0),
        make(id=4, price=40.0, link=NO_LINK),
    ]
    result = estimate(instances, Job(params_b=1, mode="train-ddp", nodes=(1, 2)))
    costs = [r.cost_per_billion_tokens_usd for r in result.results]
    priced = [c for c in costs if c is not None]
    assert priced == sorted(priced)
    assert costs[len(priced) :] == [None] * (len(costs) - len(priced))
    assert result.results[0].instance["id"] == 3
    assert {r.instance["id"] for r in result.results[len(priced) :]} == {2}


def test_results_rank_in_three_tiers_with_ties_by_numeric_instance_id_then_nodes() -> None:
    single_node = FabricSpec("infiniband", 3200, False, None)
    instances = [
        make(id=10, price=40.0),  # the same cost as id 9: after it (10 > 9, not "10" < "9")
        make(id=9, price=40.0),
        make(id=2, price=None),  # fits, no price: tier 2
        make(id=3, price=5.0, link=GpuLinkSpec("unknown")),  # cannot be estimated: tier 3
        make(id=1, price=1.0, fabric=single_node),  # 1 node tier 1; 2 nodes cannot be booked
    ]
    result = estimate(instances, Job(params_b=1, mode="train-ddp", nodes=(1, 2)))
    order = [(r.instance["id"], r.nodes) for r in result.results]
    assert order == [
        (1, 1),  # tier 1, the cheapest
        (9, 1),
        (10, 1),
        (9, 2),
        (10, 2),
        (2, 1),  # tier 2, by id then nodes
        (2, 2),
        (1, 2),  # tier 3: does not fit (no multi-node booking) ...
        (3, 1),  # ... or cannot be estimated (unknown link), by id then nodes
        (3, 2),
    ]
    assert [tier(r) for r in result.results] == [1, 1, 1, 1, 1, 2, 2, 3, 3, 3]
    tier_three = result.results[7:]
    assert all(r.reason or r.missing for r in tier_three)
    assert tier_three[1].fits  # its memory fits, but its step cannot be estimated


def test_inference_has_one_row_per_instance_at_the_smallest_node_count_that_fits() -> None:
    job = Job(params_b=1000, mode="inference", context_tokens=8192, nodes=(1, 2, 4, 8))
    rack = FabricSpec("infiniband", 1600, True, None)
    gb200 = make(id=1, gpus=4, link=NVL72, memory_gib=186, fabric=rack)
    unbookable = make(
        id=2, gpus=4, link=NVL72, memory_gib=186, fabric=FabricSpec("infiniband", 1600)
    )
    hgx = make(id=3)
    rows = {r.instance["id"]: r for r in estimate([gb200, unbookable, hgx], job).results}
    assert len(estimate([gb200, unbookable, hgx], job).results) == 3
    # 1,864.6 GiB: 669.6 GiB per node, 2 nodes 1,339.2, 4 nodes 2,678.4 GiB.
    assert (rows[1].nodes, rows[1].fits) == (4, True)
    # The same rack without stated multi-node booking: the row where only booking stops it.
    assert (rows[2].nodes, rows[2].fits) == (4, False)
    assert rows[2].reason == (
        "4 nodes: self-serve multi-node booking is not stated for this instance"
    )
    # An 8-GPU node's domain never grows: the smallest node count, with the domain's reason.
    assert (rows[3].nodes, rows[3].fits) == (1, False)
    assert "one NVLink domain of 8 GPUs holds 576.0 GiB usable" in rows[3].reason
    rows_by_hand = [estimate_inference(hgx, job, n) for n in job.nodes]
    assert choose_inference_row(rows_by_hand) == rows_by_hand[0]


def test_verdict_names_the_node_count_where_communication_takes_over() -> None:
    slow = make(
        link=NO_LINK, fabric=FabricSpec("ethernet", None, True, None, network_gbits_per_s=25)
    )
    job = Job(params_b=7, mode="train-fsdp", tokens_per_step=262_144, nodes=(1, 2, 4, 8, 16))
    rows = {r.nodes: r for r in estimate([slow], job).results}
    assert rows[1].efficiency >= 0.5
    bound = [n for n, r in rows.items() if r.efficiency < 0.5]
    assert bound
    last_good = max(n for n, r in rows.items() if r.efficiency >= 0.5)
    verdict = rows[max(bound)].verdict
    assert verdict.startswith(f"communication-bound beyond {last_good} node")
    assert "GB/s per GPU (TCP over the general network)" in verdict


def test_inference_rows_name_domains_that_hold_the_model_and_cost_tp_otherwise() -> None:
    job = Job(params_b=70, mode="inference", context_tokens=32_768, nodes=(1,))
    hgx = make(id=1)
    pcie = make(
        id=2,
        link=NO_LINK,
        memory_gib=48,
        fabric=FabricSpec("ethernet", None, True, None, network_gbits_per_s=100),
    )
    small = make(id=3, gpus=1, link=NO_LINK, memory_gib=80, price=3.0)
    rows = {r.instance["id"]: r for r in estimate([hgx, pcie, small], job).results}
    assert rows[1].fits
    assert rows[1].verdict.startswith("fits one NVLink domain of 8 GPUs")
    # PCIe-only: a domain is one GPU (43.2 GiB usable); the node's 8 GPUs hold it over PCIe.
    assert not rows[2].fits
    assert rows[2].nodes_needed == 1
    assert rows[2].tp_comm_s_per_token > 0
    assert "over PCIe" in rows[2].verdict
    # One 80 GiB GPU per node: 140.4 GiB needs 2 nodes and tensor parallelism over the fabric.
    assert rows[3].nodes_needed == 2
    assert rows[3].tp_fabric_s_per_token > 0
    assert "tensor-parallel traffic over InfiniBand" in rows[3].verdict
    ranked = estimate([hgx, pcie, small], job).results
    assert ranked[0].instance["id"] == 1  # the only one that fits comes first


def test_result_serialises_to_json_with_the_contract_fields() -> None:
    result = estimate([make()], Job(params_b=1, mode="train-fsdp", nodes=(1, 2)))
    data = json.loads(json.dumps(result.to_dict()))
    row = data["results"][0]
    for name in (
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
    ):
        assert name in row
    assert set(row["instance"]) == {"id", "provider", "name", "url"}
    for name in JOB_KEYS:
        assert name in data["assumptions"]
    assert data["assumptions"]["efficiency_factors"] == EFFICIENCY
    assert data["assumptions"]["formulas"] == list(FORMULAS)


# ------------------------------------------------------------------------------------------
# Calibration against published nccl-tests results
# ------------------------------------------------------------------------------------------


def test_default_efficiency_factors_are_the_fit_to_the_published_results() -> None:
    fitted = fit_constants()
    for kind, value in EFFICIENCY.items():
        assert fitted.efficiency[kind] == pytest.approx(value, abs=0.01), kind
    for kind, value in NETWORK_CALL_LATENCY_US.items():
        assert fitted.network_call_latency_us[kind] == pytest.approx(value, abs=1), kind


def test_the_calibration_holds_the_results_the_docs_count_and_no_job_changes_them() -> None:
    # docs/estimator.md: 36 results recorded in the module (18 fitted, 3 held out by source and
    # configuration, the rest other message sizes of fitted runs) and 255 in published_runs.toml
    # (67 fitted, 187 held out, 1 another size of a fitted run: dstack's a3-highgpu-8g runs,
    # the GPUDirect-TCPX factor's, moved from held out to fitted with the TCPX/TCPXO split).
    assert len(CALIBRATION_POINTS) == 36
    assert sum(point.fitted for point in CALIBRATION_POINTS) == 18
    assert sum(point.held_out for point in CALIBRATION_POINTS) == 3
    assert len(RECORDED_RUNS) == 255
    assert sum(point.fitted for point in RECORDED_RUNS) == 67
    assert sum(point.held_out for point in RECORDED_RUNS) == 187
    # A collective's cost does not depend on the job: micro-batches change how many
    # collectives a step runs, so the fit to all_reduce_perf results stands as it is.
    before = [row.model_busbw_gbytes_per_s for row in calibration_report()]
    estimate([make()], Job(params_b=70, mode="train-fsdp", micro_batch_tokens=1))
    assert [row.model_busbw_gbytes_per_s for row in calibration_report()] == before


def test_every_calibration_point_records_its_source_and_configuration() -> None:
    keys = [p.key for p in CALIBRATION_POINTS]
    assert len(keys) == len(set(keys))
    for point in CALIBRATION_POINTS:
        assert point.source_url.startswith("https://")
        assert point.configuration
        assert point.published_busbw_gbytes_per_s > 0
        assert point.kind in EFFICIENCY


# Stated error: fitted points within 25% (plain TCP Ethernet within 40%: two reports, 5 and
# 2.4 GB/s, which no single factor joins more tightly); other sizes of a fitted run from 512 MiB
# up within 35%, and never more than 20% optimistic (the two-node H200 run over InfiniBand is the
# most optimistic, +17% at 512 MiB: with InfiniBand refitted to 0.92 on a ring, NVLS tree on two
# nodes comes out bound by NVLink, which measures lower). Smaller sizes and the held-out points
# are reported as they come out (docs/estimator.md), not bounded here: they measure the model.
@pytest.mark.parametrize("row", calibration_report(), ids=lambda r: r.key)
def test_published_nccl_tests_results_are_reproduced_within_the_stated_error(row) -> None:
    point = next(p for p in CALIBRATION_POINTS if p.key == row.key)
    if point.fitted:
        assert abs(row.error) <= (0.40 if point.kind == "ethernet" else 0.25)
    elif not point.held_out and point.message_bytes >= 512 * 2**20 and point.nodes <= 64:
        # (GB200 racks at 1 GiB: NCCL's NVLS latency does not grow with the ranks, so two racks
        # (144 ranks) come out 23% fast and twenty (1,440) far more; docs/estimator.md lists
        # them among the misses.)
        limit = 0.25 if "gb200-nvl72-2racks" in point.key else 0.20
        assert -0.35 <= row.error <= limit


def test_held_out_errors_are_computed_from_the_held_out_points_alone() -> None:
    errors = held_out_errors()
    assert errors == HELD_OUT
    assert sum(e.points for e in errors.values()) == sum(p.held_out for p in ALL_POINTS) == 190
    assert {"efa", "infiniband", "roce", "tcpx", "tcpxo", "nvlink-sharp"} <= set(errors)
    # A held-out point is never fitted to, and the fit does not move when one is dropped.
    kept = [p for p in ALL_POINTS if not p.held_out]
    assert fit_efficiency(kept) == fit_efficiency()
    with pytest.raises(ValueError, match="a held-out point is not fitted to"):
        replace(CALIBRATION_POINTS[0], held_out=True)


def test_adding_the_stages_instead_of_pipelining_them_cannot_match_a_published_result() -> None:
    point = next(p for p in CALIBRATION_POINTS if p.key == "coreweave-h200-2x8-ib-1 GiB")
    # all_reduce_perf: algbw = busbw / (2 x 15/16) = 455.85 / 1.875 = 243.12 GB/s, so
    # t = 1 GiB / 243.12 GB/s = 4.4165 ms.
    measured_s = point.message_bytes / (455.85 / 1.875 * 1e9)
    at_line_rate = DEFAULT_CONSTANTS.with_efficiency(infiniband=1.0)
    result = expect(point.instance, "all_reduce", 2, point.message_bytes, constants=at_line_rate)
    link, network = (stage.seconds for stage in result.stages)
    # Even with InfiniBand at its full line rate, NVLink stage + fabric stage is too slow ...
    assert link + network > measured_s
    # ... while the slower stage alone (the model) leaves room for the measured time.
    assert result.time_s < measured_s


@pytest.mark.parametrize(
    ("key", "published"),
    [
        ("azure-nd-a100-v4-1x8-1 GiB", 228.10),  # NVLink 3 ring, one node
        ("azure-nd-h100-v5-1x8-1 GiB", 466.35),  # NVLink 4 with NVSwitch SHARP, one node
        ("aws-p5-16x8-efa-1 GiB", 269.23),  # 16 nodes over EFA
        ("azure-nd96asr-v4-2x8-ib-2 GiB", 184.32),  # 2 nodes over InfiniBand, a ring
        ("gcp-a3-mega-2x8-tcpxo-1 GiB", 297.86),  # 2 nodes over GPUDirect-TCPXO
    ],
)
def test_key_published_results_are_reproduced_within_ten_percent(
    key: str, published: float
) -> None:
    row = next(r for r in calibration_report() if r.key == key)
    assert row.published_busbw_gbytes_per_s == published
    assert row.model_busbw_gbytes_per_s == pytest.approx(published, rel=0.10)


def test_one_gb200_rack_at_1_gib_comes_out_at_most_15_percent_fast() -> None:
    # NVLink 5 with NVLink SHARP, one NVL72 rack (72 ranks) at 1 GiB: NCCL's own tuning model
    # gives NVLS one 23 us latency whatever the ranks, and the model follows it (issue 31), so
    # this rack comes out about 11% fast (the 16 GiB run it was fitted to is within 2%); the
    # ring-step latencies used before made it 2% slow by charging 142 NVLink steps.
    row = next(r for r in calibration_report() if r.key == "coreweave-gb200-nvl72-1rack-1 GiB")
    assert row.published_busbw_gbytes_per_s == 681.17
    assert 0 < row.error <= 0.15


# ------------------------------------------------------------------------------------------
# Input validation
# ------------------------------------------------------------------------------------------


def q(**values: str | list[str]) -> dict[str, list[str]]:
    return {k: v if isinstance(v, list) else [v] for k, v in values.items()}


def test_valid_parameters_parse_with_the_contract_defaults() -> None:
    job, errors = parse_job(q(params_b="70", mode="train-fsdp"))
    assert errors == {}
    assert job == Job(params_b=70.0, mode="train-fsdp")
    assert job.nodes == (1, 2, 4, 8, 16)
    assert (job.bytes_per_param, job.tokens_per_step, job.mfu, job.overlap) == (2, 4194304, 0.4, 0)
    assert job.kv_bytes_per_token == 327_680


def test_repeated_nodes_are_sorted_and_deduplicated_and_empty_values_mean_absent() -> None:
    job, errors = parse_job(
        q(params_b="7", mode="train-ddp", nodes=["8", "2", "8", ""], mfu="", overlap="0.25")
    )
    assert errors == {}
    assert job.nodes == (2, 8)
    assert job.mfu == 0.4
    assert job.overlap == 0.25


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        (q(mode="train-ddp"), "params_b", "This field is required."),
        (q(params_b="-7", mode="train-ddp"), "params_b", "Must be greater than 0."),
        (q(params_b="0", mode="train-ddp"), "params_b", "Must be greater than 0."),
        (q(params_b="1e9", mode="train-ddp"), "params_b", "Must be at most 100000."),
        (q(params_b="1e400", mode="train-ddp"), "params_b", "Enter a number."),
        (q(params_b="nan", mode="train-ddp"), "params_b", "Enter a number."),
        (q(params_b="inf", mode="train-ddp"), "params_b", "Enter a number."),
        (q(params_b="1_000", mode="train-ddp"), "params_b", "Enter a number."),
        (q(params_b="seven", mode="train-ddp"), "params_b", "Enter a number."),
        (q(params_b=["7", "8"], mode="train-ddp"), "params_b", "Give this parameter once."),
        (q(params_b="7"), "mode", "This field is required."),
        (
            q(params_b="7", mode="pretrain"),
            "mode",
            "Choose one of: train-ddp, train-fsdp, inference.",
        ),
        (q(params_b="7", mode="train-ddp", bytes_per_param="0"), "bytes_per_param", None),
        (q(params_b="7", mode="train-ddp", bytes_per_param="17"), "bytes_per_param", None),
        (q(params_b="7", mode="train-ddp", tokens_per_step="4.5"), "tokens_per_step", None),
        (q(params_b="7", mode="train-ddp", tokens_per_step="0"), "tokens_per_step", None),
        (
            q(params_b="7", mode="train-ddp", tokens_per_step="9" * 40),
            "tokens_per_step",
            "Enter a whole number.",
        ),
        (q(params_b="7", mode="train-ddp", nodes="0"), "nodes", None),
        (q(params_b="7", mode="train-ddp", nodes="2000"), "nodes", None),
        (q(params_b="7", mode="train-ddp", nodes="two"), "nodes", None),
        (q(params_b="7", mode="train-ddp", mfu="0"), "mfu", "Must be greater than 0."),
        (q(params_b="7", mode="train-ddp", mfu="1.5"), "mfu", "Must be at most 1."),
        (q(params_b="7", mode="train-ddp", overlap="-0.1"), "overlap", "Must be at least 0."),
        (q(params_b="7", mode="inference", context_tokens="-1"), "context_tokens", None),
        (q(params_b="7", mode="inference", batch="0"), "batch", None),
        (q(params_b="7", mode="inference", kv_bytes_per_token="x"), "kv_bytes_per_token", None),
    ],
)
def test_bad_input_gets_a_message_at_its_field(params, field: str, message: str | None) -> None:
    job, errors = parse_job(params)
    assert job is None
    assert field in errors
    assert all(isinstance(m, str) and m for m in errors[field])
    if message is not None:
        assert message in errors[field]


def test_all_bad_fields_are_reported_together() -> None:
    _, errors = parse_job(q(params_b="-1", mode="x", mfu="2", nodes=["0", "5000"]))
    assert set(errors) == {"params_b", "mode", "mfu", "nodes"}
    assert len(errors["nodes"]) == 2


@pytest.mark.parametrize(
    "text", ["", " ", "--1", "1e", "0x10", "١٢", "1" * 10_000, "\x00", "1e-400", "+", "."]
)
def test_parse_job_never_raises(text: str) -> None:
    params = {name: [text] for name in JOB_KEYS}
    job, errors = parse_job(params)
    assert job is None or errors == {}


def test_absurd_but_valid_sizes_give_finite_numbers_not_overflows() -> None:
    job, errors = parse_job(
        q(
            params_b="100000",
            mode="train-fsdp",
            tokens_per_step=str(10**12),
            nodes=["1", "1024"],
            bytes_per_param="16",
        )
    )
    assert errors == {}
    rows = estimate([make(), make(id=2, gpus=4, link=NVL72)], job).results
    for row in rows:
        assert not row.fits
        for value in (row.compute_s, row.comm_s, row.step_s, row.memory_per_gpu_gib):
            assert value is not None
            assert math.isfinite(value)
    inference, _ = parse_job(
        q(params_b="100000", mode="inference", context_tokens="100000000", batch="1000000")
    )
    for row in estimate([make()], inference).results:
        assert not row.fits
        assert math.isfinite(row.needed_gib)


def test_training_rows_without_an_estimate_rank_after_every_estimated_row():
    priced_unknown = SimpleNamespace(
        cost_per_billion_tokens_usd=None,
        cost_per_hour_usd=1.0,
        step_s=None,
        fits=True,
        instance={"id": 1},
        nodes=1,
    )
    estimated = SimpleNamespace(
        cost_per_billion_tokens_usd=5000.0,
        cost_per_hour_usd=90.0,
        step_s=100.0,
        fits=True,
        instance={"id": 2},
        nodes=1,
    )
    ranked = sorted([priced_unknown, estimated], key=rank_key)
    assert ranked == [estimated, priced_unknown]
    # for inference the hourly price is the ranking cost of a fitting row
    inference = sorted([estimated, priced_unknown], key=lambda r: rank_key(r, inference=True))
    assert inference[0] is priced_unknown
