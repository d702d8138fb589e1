"""Published nccl-tests results the collective model is fitted to, and held to.

Each CalibrationPoint records where a result was published, the configuration it ran (GPUs per
node, nodes, link and fabric as the model describes them, collective, message size, algorithm)
and the bus bandwidth it reported. `model_busbw` runs the collective model (offerings.estimator.
nccl.expect) at that configuration, so a factor is fitted "through the model", not by dividing
two numbers. 36 points are written here (the first fit's, with configurations the page
translates); the rest come from published_runs.toml beside this module (`recorded_runs`).

Split by source and configuration, never by message size of a fitted run: a point is fitted, or
held out (never fitted to; the answers' error bands come from these), or another message size of
a fitted run (reported only). docs/estimator.md names the fitted sources.

`fit_constants()` fits, in turn: one efficiency factor per link kind (least squares on
log(model / published), runs of 128 MiB and larger, intra-node kinds first, then the fabrics and
the tree and SHARP multipliers); the ports a rack-spanning NVLink domain leaves through; and the
per-call network latency of InfiniBand, EFA and TCPX (runs below 256 MiB, where latency weighs;
the two thresholds overlap so that the one 128 MiB TCP report fits Ethernet's factor). The
defaults in offerings.estimator.core are this fit rounded; tests/estimator/test_core.py re-runs
it and compares.

Selection: results from vendors' own repositories and maintainers' threads first, then public
user reports whose configuration is fully stated. Left out on purpose: runs their authors reported
as broken (NVIDIA/nccl#2409 RoCE, NVIDIA/nccl#527 multi-node EFA v1 "slow bus bandwidth"), prose
figures, runs without a message size, and on-premises hardware whose links are not stated.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal
from pathlib import Path

from offerings.estimator.core import (
    DEFAULT_CONSTANTS,
    UNCALIBRATED_KINDS,
    Constants,
    FabricSpec,
    GpuLinkSpec,
    InstanceSpec,
)
from offerings.estimator.nccl import band_kind, expect
from offerings.schemas import CollectiveResultIn

GIB = 2**30

_NO_FABRIC = FabricSpec(technology="unknown")


def _node(
    gpus: int,
    link: GpuLinkSpec,
    fabric: FabricSpec = _NO_FABRIC,
    pcie_generation: int | None = None,
) -> InstanceSpec:
    return InstanceSpec(
        id="calibration",
        name="calibration",
        gpu_count=gpus,
        gpu_memory_gib=None,
        bf16_dense_tflops=None,
        pcie_generation=pcie_generation,
        link=link,
        fabric=fabric,
    )


_A100_HGX = GpuLinkSpec("nvlink", "nvswitch", 3, 8, 600)
_H100_HGX = GpuLinkSpec("nvlink", "nvswitch", 4, 8, 900)
_GB200_NVL72 = GpuLinkSpec("nvlink", "nvswitch", 5, 72, 1800)
_MI300X = GpuLinkSpec("infinity-fabric", "mesh", None, 8, 896)
_V100_SXM2 = GpuLinkSpec("nvlink", "hybrid-cube-mesh", 2, 8, 300)
_NONE = GpuLinkSpec("none")
_CW_GB200_IB = FabricSpec("infiniband", 1600, True, None)
_COREWEAVE_NCCL_TESTS = "https://github.com/coreweave/nccl-tests/blob/0120901ac7a1e6425640a57540e142070452f8a2/README.md"


@dataclass(frozen=True)
class CalibrationPoint:
    """One published all_reduce_perf (or equivalent) result and the configuration it ran."""

    key: str
    kind: str  # the efficiency factor this point fits
    source_url: str
    configuration: str
    instance: InstanceSpec
    nodes: int
    message_bytes: int
    published_busbw_gbytes_per_s: float
    ring_only: bool = False  # NCCL_ALGO=Ring in the test: no in-switch reduction (NVLS)
    fitted: bool = True  # False: not fitted to (another size of a fitted run, or held out)
    # Kept apart by source and configuration: never fitted to, and the error band of an answer
    # on its link kind is its error (another size of a fitted run is not held out).
    held_out: bool = False
    collective: str = "all_reduce"
    algorithm: str = "auto"  # as the run set NCCL_ALGO; "auto" when it did not

    def __post_init__(self) -> None:
        if self.held_out and self.fitted:
            raise ValueError(f"{self.key}: a held-out point is not fitted to")

    note: str = ""
    # The catalog type the run used, as "provider/slug", where the source names one: its detail
    # page shows the result (load_catalog stores it through `catalog_results`). "provider" basis:
    # the provider published it; anyone else's is third party.
    catalog_instance: str = ""
    basis: str = "third-party"


CALIBRATION_POINTS: tuple[CalibrationPoint, ...] = (
    # --- NVLink rings (no in-switch reduction) -----------------------------------------------
    *(
        CalibrationPoint(
            key=f"azure-nd-a100-v4-1x8-{label}",
            kind="nvlink",
            source_url="https://github.com/Azure/AI-benchmarking-guide/blob/3bb66cacc25632d8ece36bc1d5128c5ea886a60b/Azure_Results/ND_A100_v4_results.md",
            configuration="Azure ND A100 v4: 1 VM, 8 x A100 SXM4 80GB, NVLink 3 via NVSwitch; "
            f"NCCL 2.18.5, AllReduce in-place, {label}",
            instance=_node(8, _A100_HGX),
            nodes=1,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            fitted=fitted,
            note="A100 has no NVLink SHARP, so this is a ring whatever the page header says.",
            catalog_instance="azure/standard-nd96amsr-a100-v4",
            basis="provider",
        )
        for label, size, busbw, fitted in (
            ("1 GiB", GIB, 228.10, True),
            ("8 GiB", 8 * GIB, 231.58, False),
        )
    ),
    CalibrationPoint(
        key="aws-p4d-1x8",
        kind="nvlink",
        source_url="https://github.com/NVIDIA/nccl/issues/527",
        configuration="AWS p4d.24xlarge: 1 node, 8 x A100 SXM4 40GB, NVLink 3 via NVSwitch; "
        "NCCL 2.9.9, all_reduce_perf, 1 GiB",
        instance=_node(8, _A100_HGX),
        nodes=1,
        message_bytes=1 * GIB,
        published_busbw_gbytes_per_s=230.77,
        catalog_instance="aws/p4d-24xlarge",
    ),
    *(
        CalibrationPoint(
            key=f"azure-nd-gb200-v6-1x4-ring-{label}",
            kind="nvlink",
            source_url="https://github.com/Azure/AI-benchmarking-guide/blob/2a370be6de9586d365feed77e014a73f25198f4d/Azure_Results/ND_GB200_v6_results.md",
            configuration="Azure ND GB200 v6: 1 VM, 4 x GB200 of an NVL72 rack, NVLink 5; "
            f"NCCL 2.25.1, AllReduce Ring algorithm, in-place, {label}",
            instance=_node(4, _GB200_NVL72),
            nodes=1,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            ring_only=True,
            fitted=fitted,
            catalog_instance="azure/standard-nd128isr-ndr-gb200-v6",
            basis="provider",
        )
        for label, size, busbw, fitted in (
            ("1 GiB", GIB, 646.87, True),
            ("8 GiB", 8 * GIB, 679.61, False),
        )
    ),
    # --- NVLink with NVSwitch SHARP (NVLS) ----------------------------------------------------
    *(
        CalibrationPoint(
            key=f"azure-nd-h100-v5-1x8-{label}",
            kind="nvlink-sharp",
            source_url="https://github.com/Azure/AI-benchmarking-guide/blob/f350e7e65b82cfcb9220b32b582bc34342d9c1a6/Azure%20Results/ND_H100_v5_results.md",
            configuration="Azure ND H100 v5: 1 VM, 8 x H100 SXM 80GB, NVLink 4 via NVSwitch; "
            f"NCCL 2.18.5, AllReduce NVLS algorithm, in-place, {label}",
            instance=_node(8, _H100_HGX),
            nodes=1,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            fitted=fitted,
            note="NVIDIA/nccl-tests#212 (sjeaugey): with NVLink SHARP 8 GPUs reach ~480 GB/s "
            "busbw; without it (NCCL_ALGO=RING) ~370 GB/s, 80% of the 450 GB/s line rate.",
            catalog_instance="azure/standard-nd96isr-h100-v5",
            basis="provider",
        )
        for label, size, busbw, fitted in (
            ("1 GiB", GIB, 466.35, True),
            ("8 GiB", 8 * GIB, 478.87, False),
        )
    ),
    CalibrationPoint(
        key="h200-1x8-nccl-tests-272",
        kind="nvlink-sharp",
        source_url="https://github.com/NVIDIA/nccl-tests/issues/272",
        configuration="8 x H200 on NVLink 4 (one server); NCCL 2.20.3, all_reduce_perf -b 64k "
        "-e 4G, peak busbw",
        instance=_node(8, _H100_HGX),
        nodes=1,
        message_bytes=4 * GIB,
        published_busbw_gbytes_per_s=475.0,
        fitted=False,
        held_out=True,
    ),
    # --- Infinity Fabric ------------------------------------------------------------------------
    CalibrationPoint(
        key="mi300x-1x8",
        kind="infinity-fabric",
        source_url="https://github.com/stas00/ml-engineering/blob/master/network/README.md#peer-to-peer-bandwidth",
        configuration="8 x MI300X (Infinity Fabric mesh, 7 x 64 GB/s per direction per GPU); "
        "all_reduce_bench.py (torch.distributed over RCCL), 4 GB payload",
        instance=_node(8, _MI300X),
        nodes=1,
        message_bytes=4 * GIB,
        published_busbw_gbytes_per_s=312.912,
        note="Not nccl-tests: a torch benchmark reporting busbw with nccl-tests' formula. The "
        "only Infinity Fabric result found.",
    ),
    # --- PCIe -----------------------------------------------------------------------------------
    CalibrationPoint(
        key="rtx5090-1x8-pcie5",
        kind="pcie",
        source_url="https://github.com/NVIDIA/nccl/issues/1639",
        configuration="8 x RTX 5090 on PCIe 5.0 (one server, 2 x Xeon 8480+); all_reduce_perf "
        "-b 1g -e 8g -g 8, max busbw",
        instance=_node(8, _NONE, pcie_generation=5),
        nodes=1,
        message_bytes=8 * GIB,
        published_busbw_gbytes_per_s=28.0,
        note="sjeaugey in the thread: on PCI systems the CPU and memory decide; 28 GB/s with 8 "
        "GPUs is good. Consumer GPUs: data-center PCIe nodes may do somewhat better.",
    ),
    CalibrationPoint(
        key="rtx5090-1x4-pcie5",
        kind="pcie",
        source_url="https://github.com/NVIDIA/nccl/issues/1639",
        configuration="4 x RTX 5090 on PCIe 5.0 (same server); all_reduce_perf, max busbw",
        instance=_node(4, _NONE, pcie_generation=5),
        nodes=1,
        message_bytes=8 * GIB,
        published_busbw_gbytes_per_s=35.0,
    ),
    # --- AWS EFA (p5.48xlarge: 8 x H100, 32 x 100 Gb/s EFA v2 = 3,200 Gb/s) -------------------
    *(
        CalibrationPoint(
            key=f"aws-p5-{nodes}x8-efa-{label}",
            kind="efa",
            source_url="https://github.com/crazyguitar/aws-gpu-communication-benchmark/blob/4fdb5a4fab8b2e173e2c7e87d9faddd9f54ddfea/data/nccl_all_reduce.csv",
            configuration=f"AWS ml.p5.48xlarge (SageMaker HyperPod): {nodes} nodes x 8 H100, "
            "EFA 32 x 100 Gb/s; all_reduce_perf -b 32M -e 8192M with the aws-ofi-nccl tuner, "
            f"out-of-place, {label}",
            instance=_node(8, _H100_HGX, FabricSpec("efa", 3200, True, None, generation="efa-v2")),
            nodes=nodes,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            fitted=size == GIB,
            note="Launch configuration: k8s/nccl_all_reduce_perf.yaml in the same repository. "
            "ml.p5.48xlarge is SageMaker's name for the p5.48xlarge node.",
            catalog_instance="aws/p5-48xlarge",
        )
        for label, size, table in (
            ("1 GiB", GIB, ((2, 435.14), (4, 280.30), (8, 274.47), (16, 269.23), (32, 220.08))),
            ("8 GiB", 8 * GIB, ((2, 477.71), (4, 356.99), (8, 355.36), (16, 356.27), (32, 321.10))),
        )
        for nodes, busbw in table
    ),
    # --- InfiniBand -----------------------------------------------------------------------------
    *(
        CalibrationPoint(
            key=f"coreweave-h200-2x8-ib-{label}",
            kind="infiniband",
            source_url="https://docs.skypilot.co/en/latest/examples/performance/coreweave_infiniband.html",
            configuration=f"CoreWeave (SkyPilot example): 2 nodes x 8 H200, InfiniBand; "
            f"all_reduce_perf out-of-place, {label}",
            instance=_node(8, _H100_HGX, FabricSpec("infiniband", 3200, True, None)),
            nodes=2,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            fitted=size == GIB,
            note="8 x 400 Gb/s NDR per node is CoreWeave's HGX reference design, not stated on "
            "the page (interconnect_facts.md marks it unverified). Two-node runs only.",
            catalog_instance="coreweave/nvidia-hgx-h200",
        )
        for label, size, busbw in (("512 MiB", GIB // 2, 421.59), ("1 GiB", GIB, 455.85))
    ),
    # --- GPUDirect-TCPX(O) ----------------------------------------------------------------------
    *(
        CalibrationPoint(
            key=f"gcp-a3-mega-2x8-tcpxo-{label}",
            kind="tcpxo",
            source_url="https://github.com/lessizzmore/create-a3mega-ztan-fork/blob/02dd8f455c43ced1cf442ef29334bda97149264b/ztan-NCCL-test-result",
            configuration=f"GCP a3-megagpu-8g: 2 nodes x 8 H100, GPUDirect-TCPXO 8 x 200 Gb/s; "
            f"all_reduce_perf -b 8 -e 8G, out-of-place, {label}",
            instance=_node(8, _H100_HGX, FabricSpec("tcpx", 1600, True, None, generation="tcpxo")),
            nodes=2,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            fitted=size == GIB,
            note="Machine type from the repository's name (an A3 Mega cluster recipe) and the "
            "H100 80GB HBM3 ranks, 8 per host.",
            catalog_instance="gcp/a3-megagpu-8g",
        )
        for label, size, busbw in (("1 GiB", GIB, 297.86), ("8 GiB", 8 * GIB, 338.82))
    ),
    # --- Added for issue 31: more fabrics, SHARP, GB200 across racks ---------------------------
    *(
        CalibrationPoint(
            key=f"coreweave-gb200-nvl72-1rack-{label}",
            kind="nvlink5-sharp",
            source_url=_COREWEAVE_NCCL_TESTS,
            configuration="CoreWeave GB200 NVL72: one rack, 18 nodes x 4 GB200 (72 GPUs in one "
            f"NVLink 5 domain); NCCL 2.26.2, all_reduce_perf, out-of-place, {label}",
            instance=_node(4, _GB200_NVL72, _CW_GB200_IB),
            nodes=18,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            fitted=fitted,
            catalog_instance="coreweave/nvidia-gb200-nvl72",
            basis="provider",
        )
        for label, size, busbw, fitted in (
            ("1 GiB", GIB, 681.17, True),
            ("8 GiB", 8 * GIB, 834.57, False),
        )
    ),
    *(
        CalibrationPoint(
            key=f"coreweave-gb200-nvl72-{racks}racks-{label}",
            kind="infiniband",
            source_url=_COREWEAVE_NCCL_TESTS,
            configuration=f"CoreWeave GB200 NVL72: {racks} racks, {nodes} nodes x 4 GB200, "
            "InfiniBand between racks; NCCL 2.26.2, all_reduce_perf, out-of-place, "
            f"{label}",
            instance=_node(4, _GB200_NVL72, _CW_GB200_IB),
            nodes=nodes,
            message_bytes=GIB,
            published_busbw_gbytes_per_s=busbw,
            fitted=False,
            note="Another size of a run fitted at 16 GiB (published_runs.toml).",
            catalog_instance="coreweave/nvidia-gb200-nvl72",
            basis="provider",
        )
        for racks, nodes, label, busbw in ((2, 36, "1 GiB", 596.10), (20, 360, "1 GiB", 218.85))
    ),
    *(
        CalibrationPoint(
            key=f"azure-nd96asr-v4-2x8-ib-{label}",
            kind="infiniband",
            source_url="https://github.com/Azure/aks-rdma-infiniband/blob/065a099dea170c6afde5982a981ac93e35e9ccfe/tests/expected-output.md",
            configuration="Azure Standard_ND96asr_v4 on AKS: 2 nodes x 8 A100 SXM4 40GB, "
            f"InfiniBand 8 x 200 Gb/s; all_reduce_perf, out-of-place, {label}",
            instance=_node(8, _A100_HGX, FabricSpec("infiniband", 1600, True, None)),
            nodes=2,
            message_bytes=size,
            published_busbw_gbytes_per_s=busbw,
            fitted=fitted,
            note="A100 has no NVLink SHARP and the run enables no CollNet: NCCL rings (or trees) "
            "between the nodes.",
            catalog_instance="azure/standard-nd96asr-a100-v4",
            basis="provider",
        )
        for label, size, busbw, fitted in (
            ("2 GiB", 2 * GIB, 184.32, True),
            ("8 GiB", 8 * GIB, 187.22, False),
            ("8 MiB", 8 * 2**20, 79.05, False),
        )
    ),
    CalibrationPoint(
        key="nccl-pr1112-p5-8x8-efa",
        kind="efa",
        source_url="https://github.com/NVIDIA/nccl/pull/1112",
        configuration="AWS p5.48xlarge: 8 nodes x 8 H100, EFA 32 x 100 Gb/s; NCCL 2.19.1, "
        "all_reduce_perf, out-of-place, 4 GiB",
        instance=_node(8, _H100_HGX, FabricSpec("efa", 3200, True, None, generation="efa-v2")),
        nodes=8,
        message_bytes=4 * GIB,
        published_busbw_gbytes_per_s=280.03,
        fitted=False,
        held_out=True,
        catalog_instance="aws/p5-48xlarge",
    ),
    CalibrationPoint(
        key="gcp-a3-highgpu-2x8-tcpx",
        kind="tcpx",
        source_url="https://github.com/GoogleCloudPlatform/ai-infra-cluster-provisioning/blob/461d3cb82927fa512fdbbef1cd6ae56486274237/sample_workloads/nccltest/README.md",
        configuration="GCP a3-highgpu-8g: 2 nodes x 8 H100, GPUDirect-TCPX 4 x 200 Gb/s; "
        "Google's example all_reduce_perf output, out-of-place, 1 GiB",
        instance=_node(8, _H100_HGX, FabricSpec("tcpx", 800, True, None, generation="tcpx")),
        nodes=2,
        message_bytes=GIB,
        published_busbw_gbytes_per_s=86.99,
        fitted=False,
        held_out=True,
        note="Two nodes inferred from the README's run instructions (cluster.nNodes=2).",
        catalog_instance="gcp/a3-highgpu-8g",
        basis="provider",
    ),
    # --- Plain Ethernet (NCCL socket transport) -------------------------------------------------
    CalibrationPoint(
        key="tcp-100g-4x8-v100",
        kind="ethernet",
        source_url="https://github.com/NVIDIA/nccl/issues/450",
        configuration="4 nodes x 8 V100-32G, 100 Gb/s TCP network; nccl-tests all_reduce 8M-128M, "
        "'best performance (bus-bw) between 4~6 GB/s': the midpoint, 5 GB/s, at 128 MiB",
        instance=_node(
            8, _V100_SXM2, FabricSpec("ethernet", None, True, None, network_gbits_per_s=100)
        ),
        nodes=4,
        message_bytes=128 * 2**20,
        published_busbw_gbytes_per_s=5.0,
        note="Intra-node link not stated; modelled as V100 SXM2 hybrid cube-mesh (it does not "
        "bind: the 100 Gb/s network does).",
    ),
    CalibrationPoint(
        key="tcp-32g-2x1-v100",
        kind="ethernet",
        source_url="https://github.com/NVIDIA/nccl/issues/209",
        configuration="2 nodes x 1 V100 over 32 Gb/s TCP; all_reduce_perf -b 1G -e 1G: 'not ... "
        "more than 60% of wire speed', i.e. 0.6 x 4 GB/s = 2.4 GB/s busbw (n = 2: busbw = algbw)",
        instance=_node(
            1,
            _NONE,
            FabricSpec("ethernet", None, True, None, network_gbits_per_s=32),
            pcie_generation=3,
        ),
        nodes=2,
        message_bytes=GIB,
        published_busbw_gbytes_per_s=2.4,
        note="A stated ratio, not a table value.",
    ),
)

#: The published runs recorded in published_runs.toml (beside this module): one GPU link per GPU
#: model as its platform has it (8 GPUs per board unless the run says otherwise; a GB200 or GB300
#: rack is one 72-GPU NVLink domain), the back-end as the run's source or the type states it.
RUN_LINKS: dict[str, GpuLinkSpec] = {
    "A100": _A100_HGX,
    "H100": _H100_HGX,
    "H200": _H100_HGX,
    "B200": GpuLinkSpec("nvlink", "nvswitch", 5, 8, 1800),
    "B300": GpuLinkSpec("nvlink", "nvswitch", 5, 8, 1800),
    "GB200": _GB200_NVL72,
    "GB300": _GB200_NVL72,
    "MI300X": _MI300X,
    "V100": _V100_SXM2,
}
RUNS_FILE = Path(__file__).with_name("published_runs.toml")

#: The fabric generation of the catalog types the recorded runs used, as the catalog's fixtures
#: state it with their sources (fixtures/providers/aws.toml: AWS's EFA documentation gives each
#: type's Nitro and EFA version; gcp.toml: Google's A3 pages name TCPX and TCPXO). A run on no
#: catalog type has none: unknown, as in the catalog.
RUN_FABRIC_GENERATIONS: dict[str, str] = {
    "aws/p3dn-24xlarge": "efa-v1",
    "aws/p4d-24xlarge": "efa-v1",
    "aws/p4de-24xlarge": "efa-v1",
    "aws/p5-48xlarge": "efa-v2",
    "aws/p5e-48xlarge": "efa-v2",
    "aws/p5en-48xlarge": "efa-v3",
    "gcp/a3-highgpu-8g": "tcpx",
    "gcp/a3-megagpu-8g": "tcpxo",
}


def _run_kind(spec: InstanceSpec, run: dict) -> str:
    """The factor a run measures, as an answer's error band names it (`nccl.band_kind`)."""
    result = expect(
        spec,
        run["collective"],
        run["nodes"],
        run["message_bytes"],
        run["algorithm"],
        sharp=run["algorithm"] == "sharp" or None,
    )
    kind = band_kind(result)
    if kind is None:
        raise ValueError(f"{run['key']}: the model cannot run this configuration")
    return kind


def recorded_runs(path: Path = RUNS_FILE) -> tuple[CalibrationPoint, ...]:
    """published_runs.toml as calibration points."""
    with path.open("rb") as handle:
        runs = tomllib.load(handle)["run"]
    points = []
    for run in runs:
        link = RUN_LINKS[run["gpu"]]
        if link.domain_size == 8 and run["gpus_per_node"] != 8:
            link = replace(link, domain_size=run["gpus_per_node"])
        fabric = (
            FabricSpec(
                run["fabric"],
                run["fabric_gbits_per_s"],
                True,
                None,
                generation=RUN_FABRIC_GENERATIONS.get(run.get("instance", "")),
            )
            if run["fabric"] != "none"
            else _NO_FABRIC
        )
        spec = _node(run["gpus_per_node"], link, fabric)
        algorithm = run["algorithm"]
        points.append(
            CalibrationPoint(
                key=run["key"],
                kind=_run_kind(spec, run),
                source_url=run["source_url"],
                configuration=(
                    f"{run['nodes']} x {run['gpus_per_node']} {run['gpu']}, "
                    f"{run['fabric'] if run['fabric'] != 'none' else 'one NVLink domain'}"
                    f"{' ' + str(run['fabric_gbits_per_s']) + ' Gb/s' if run['fabric'] != 'none' else ''}"
                    f"; {run['collective']}_perf, algorithm {algorithm}"
                    f"{', NCCL ' + run['nccl_version'] if run.get('nccl_version') else ''}"
                ),
                instance=spec,
                nodes=run["nodes"],
                message_bytes=run["message_bytes"],
                published_busbw_gbytes_per_s=run["busbw_gbytes_per_s"],
                fitted=run["split"] == "fit",
                held_out=run["split"] == "held-out",
                collective=run["collective"],
                algorithm=algorithm,
                catalog_instance=run.get("instance", ""),
                basis=run["basis"],
            )
        )
    return tuple(points)


#: The recorded runs, and every point the fit and the error bands use.
RECORDED_RUNS: tuple[CalibrationPoint, ...] = recorded_runs()
ALL_POINTS: tuple[CalibrationPoint, ...] = CALIBRATION_POINTS + RECORDED_RUNS

INTRA_KINDS = ("nvlink", "nvlink-sharp", "nvlink5-sharp", "infinity-fabric", "pcie")
INTER_KINDS = (
    "infiniband",
    "efa",
    "tcpx",
    "tcpxo",
    "ethernet",
    "infiniband-sharp",
    "tree",
    "tree-efa",
)


def model_busbw(point: CalibrationPoint, constants: Constants = DEFAULT_CONSTANTS) -> float:
    """The model's bus bandwidth at the point's own configuration (`nccl.expect`), GB/s."""
    algorithm = "ring" if point.ring_only else point.algorithm
    result = expect(
        point.instance,
        point.collective,
        point.nodes,
        point.message_bytes,
        algorithm,
        sharp=algorithm == "sharp" or None,
        constants=constants,
    )
    busbw = result.busbw_gbytes_per_s
    if busbw is None:
        raise ValueError(f"calibration point {point.key} is missing model inputs")
    return busbw


def _loss(points: Sequence[CalibrationPoint], constants: Constants) -> float:
    return sum(
        math.log(model_busbw(p, constants) / p.published_busbw_gbytes_per_s) ** 2 for p in points
    )


#: Efficiency factors are fitted to runs of at least this size (bandwidth dominates); the per-call
#: latencies to runs below SMALL (`fit_latency`).
LARGE = 128 * 2**20


def fit_factor(
    kind: str,
    points: Iterable[CalibrationPoint] = ALL_POINTS,
    constants: Constants = DEFAULT_CONSTANTS,
) -> float:
    """The factor for `kind` minimising the squared log error of its points (to 0.0005)."""
    mine = [p for p in points if p.kind == kind and p.fitted and p.message_bytes >= LARGE]
    if not mine:
        raise ValueError(f"no calibration points for {kind}")

    def loss(factor: float) -> float:
        return _loss(mine, constants.with_efficiency(**{kind.replace("-", "_"): factor}))

    return _grid_minimum(loss, 0.05, 1.5, 0.0005)


def _grid_minimum(loss: Callable[[float], float], low: float, high: float, step: float) -> float:
    """The grid point from low to high in `step`s with the least loss: a coarse pass at 20
    steps, then every step within 20 of its best (the losses here have one minimum)."""

    def best_of(values: Iterable[float]) -> float:
        return min(values, key=lambda value: (loss(value), value))

    count = round((high - low) / step)
    coarse = best_of(low + i * step for i in range(0, count + 1, 20))
    start = max(0, round((coarse - low) / step) - 20)
    return round(best_of(low + i * step for i in range(start, min(count, start + 40) + 1)), 6)


def fit_efficiency(
    points: Sequence[CalibrationPoint] = ALL_POINTS,
    constants: Constants = DEFAULT_CONSTANTS,
) -> dict[str, float]:
    """Fit every calibrated kind (intra first, then fabrics); copy the uncalibrated ones."""
    fitted = dict(constants.efficiency)
    current = constants
    for kind in (*INTRA_KINDS, *INTER_KINDS):
        fitted[kind] = fit_factor(kind, points, current)
        current = replace(current, efficiency=dict(fitted))
    # UNCALIBRATED_KINDS: RoCE as InfiniBand, eRDMA as RoCE (reasons stated there).
    fitted["roce"] = fitted["infiniband"]
    fitted["erdma"] = fitted["roce"]
    return fitted


#: Fabrics whose per-call network latency is fitted (to fitted runs below 256 MiB); the others
#: take InfiniBand's (NETWORK_CALL_LATENCY_US in core says why).
LATENCY_KINDS = ("infiniband", "efa", "tcpx", "tcpxo")
SMALL = 256 * 2**20


def fit_latency(
    kind: str,
    points: Iterable[CalibrationPoint] = ALL_POINTS,
    constants: Constants = DEFAULT_CONSTANTS,
) -> float:
    """The per-call network latency for `kind` (microseconds, to 1) minimising the squared log
    error of its fitted runs below 256 MiB."""
    mine = [p for p in points if p.kind == kind and p.fitted and p.message_bytes < SMALL]
    if not mine:
        raise ValueError(f"no small-message calibration points for {kind}")

    def loss(latency: float) -> float:
        table = dict(constants.network_call_latency_us) | {kind: latency}
        return _loss(mine, replace(constants, network_call_latency_us=table))

    return _grid_minimum(loss, 0.0, 1000.0, 1.0)


def fit_exit_channels(
    points: Iterable[CalibrationPoint] = ALL_POINTS,
    constants: Constants = DEFAULT_CONSTANTS,
) -> int:
    """The number of GPUs' ports a multi-node NVLink domain's traffic leaves through (1 to 72)
    minimising the squared log error of the fitted runs that span several such domains."""
    mine = [
        p
        for p in points
        if p.fitted
        and (p.instance.link.domain_size or 0) > p.instance.gpu_count
        and p.nodes * p.instance.gpu_count > p.instance.link.domain_size
    ]
    if not mine:
        raise ValueError("no calibration points span several NVLink domains")
    return min(
        range(1, 73),
        key=lambda n: (_loss(mine, replace(constants, domain_exit_channels=n)), n),
    )


def fit_constants(
    points: Sequence[CalibrationPoint] = ALL_POINTS,
    constants: Constants = DEFAULT_CONSTANTS,
) -> Constants:
    """Efficiency factors on the large messages, then the per-call network latencies on the
    small ones, then the factors again with those latencies (they move little after that)."""
    current = constants
    for _round in range(2):
        current = replace(current, efficiency=fit_efficiency(points, current))
        current = replace(current, domain_exit_channels=fit_exit_channels(points, current))
        table = dict(current.network_call_latency_us)
        for kind in LATENCY_KINDS:
            table[kind] = fit_latency(kind, points, replace(current, network_call_latency_us=table))
        for follower in ("roce", "erdma", "ethernet", "infiniband-sharp"):
            table[follower] = table["infiniband"]
        current = replace(current, network_call_latency_us=table)
    return current


@dataclass(frozen=True)
class CalibrationRow:
    """Published vs modelled bus bandwidth for one point, with the relative error."""

    key: str
    kind: str
    configuration: str
    source_url: str
    published_busbw_gbytes_per_s: float
    model_busbw_gbytes_per_s: float

    @property
    def error(self) -> float:
        """(model - published) / published."""
        return self.model_busbw_gbytes_per_s / self.published_busbw_gbytes_per_s - 1


def calibration_report(
    points: Sequence[CalibrationPoint] = CALIBRATION_POINTS,
    constants: Constants = DEFAULT_CONSTANTS,
) -> list[CalibrationRow]:
    """Every point with the model's busbw under `constants`, for tests and the page."""
    return [
        CalibrationRow(
            key=p.key,
            kind=p.kind,
            configuration=p.configuration,
            source_url=p.source_url,
            published_busbw_gbytes_per_s=p.published_busbw_gbytes_per_s,
            model_busbw_gbytes_per_s=model_busbw(p, constants),
        )
        for p in points
    ]


#: The day the results above were read from their sources and recorded here.
RECORDED_ON = date(2026, 11, 30)


def catalog_results(
    points: Sequence[CalibrationPoint] = ALL_POINTS,
) -> list[CollectiveResultIn]:
    """The points run on a catalog type, as published collective results for its detail page
    (one per type, collective, size, node count and source: the first recorded)."""
    results = []
    seen = set()
    for point in points:
        if not point.catalog_instance:
            continue
        provider, slug = point.catalog_instance.split("/")
        run = (point.catalog_instance, point.collective, point.nodes, point.message_bytes)
        if (*run, point.source_url) in seen:
            continue
        seen.add((*run, point.source_url))
        notes = point.configuration + (f". {point.note}" if point.note else "")
        results.append(
            CollectiveResultIn(
                provider=provider,
                instance=slug,
                collective=point.collective,
                nodes=point.nodes,
                gpus=point.nodes * point.instance.gpu_count,
                message_bytes=point.message_bytes,
                busbw_gbytes_per_s=Decimal(str(point.published_busbw_gbytes_per_s)),
                basis=point.basis,
                notes=notes,
                source_url=point.source_url,
                verified_at=RECORDED_ON,
            )
        )
    return results


@dataclass(frozen=True)
class HeldOutErrors:
    """The model's errors on the points of one link kind kept apart from the fit."""

    kind: str
    points: int
    median_error: float  # of |model / published - 1|
    worst_error: float
    within_30_percent: float  # share of points
    # published / model at the 10th and 90th percentile: four in five results fell between
    low_ratio: float
    high_ratio: float


#: Fewer held-out results than this give no band: "four in five" of one or two says nothing.
BAND_POINTS_MIN = 5

#: The size classes of the error bands: an answer's band comes from held-out results of its class
#: (below SMALL, latency weighs; from SMALL up, bandwidth does).
SIZE_CLASSES = ("small", "large")


def size_class(message_bytes: int) -> str:
    return "small" if message_bytes < SMALL else "large"


def held_out_errors(
    points: Sequence[CalibrationPoint] = ALL_POINTS,
    constants: Constants = DEFAULT_CONSTANTS,
    sizes: str | None = None,
) -> dict[str, HeldOutErrors]:
    """Median, worst and 10th-90th percentile errors per link kind over the held-out points (of
    one size class, or all)."""
    by_kind: dict[str, list[float]] = {}
    for point in points:
        if point.held_out and sizes in (None, size_class(point.message_bytes)):
            ratio = point.published_busbw_gbytes_per_s / model_busbw(point, constants)
            by_kind.setdefault(point.kind, []).append(ratio)
    result = {}
    for kind, ratios in sorted(by_kind.items()):
        errors = [abs(1 / ratio - 1) for ratio in ratios]
        result[kind] = HeldOutErrors(
            kind=kind,
            points=len(ratios),
            median_error=statistics.median(errors),
            worst_error=max(errors),
            within_30_percent=sum(error <= 0.3 for error in errors) / len(errors),
            low_ratio=_percentile(ratios, 0.1),
            high_ratio=_percentile(ratios, 0.9),
        )
    return result


def _six(value: float) -> float:
    """Six significant digits, as every figure the API gives."""
    return float(f"{value:.6g}")


def _percentile(values: list[float], share: float) -> float:
    """The value at `share` of the way through `values`, sorted (nearest rank, from the low
    end for a low share and the high end for a high one, so 10th-90th holds four in five)."""
    ordered = sorted(values)
    if share <= 0.5:
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)]
    return ordered[min(len(ordered) - 1, math.floor(share * len(ordered)))]


def error_band(
    kind: str | None, busbw: float | None, message_bytes: int, ceiling: float | None = None
) -> dict | None:
    """The band an answer's bus bandwidth sits in: busbw times the 10th and 90th percentile of
    published / model over the held-out results of its link kind (`nccl.band_kind`) at
    messages of its size class, so four in five of them fell inside, widened to hold busbw
    itself where those results all lie to one side of the model; never above `ceiling` (what the
    hardware reaches at line rate with no latency). With fewer than BAND_POINTS_MIN such results
    the bounds are unknown, and say so."""
    if kind is None or busbw is None:
        return None
    sizes = size_class(message_bytes)
    errors = HELD_OUT_BY_SIZE[sizes].get(kind)
    band = {
        "kind": kind,
        "message_sizes": sizes,
        "held_out_points": errors.points if errors else 0,
        "median_error": round(errors.median_error, 4) if errors else None,
        "worst_error": round(errors.worst_error, 4) if errors else None,
        "low_gbytes_per_s": None,
        "high_gbytes_per_s": None,
        "fitted": kind not in UNCALIBRATED_KINDS,
    }
    if errors is None or errors.points < BAND_POINTS_MIN:
        return band
    # The band always holds the answer itself: where the model sits to one side of the
    # held-out results of its link (all of them above it, say), it reaches from the answer to
    # where four in five of them fell, rather than lying beside it.
    high = max(busbw * errors.high_ratio, busbw)
    if ceiling is not None:
        high = min(high, max(ceiling, busbw))
    return band | {
        "low_gbytes_per_s": _six(min(busbw * errors.low_ratio, busbw)),
        "high_gbytes_per_s": _six(high),
    }


#: Computed once at import from the recorded points and the shipped factors: a pure function of
#: constants in this file and core.py, not of the data.
HELD_OUT: dict[str, HeldOutErrors] = held_out_errors()
HELD_OUT_BY_SIZE: dict[str, dict[str, HeldOutErrors]] = {
    sizes: held_out_errors(sizes=sizes) for sizes in SIZE_CLASSES
}
