"""The interconnect figures the site states in prose, each with the page that states it.

The explainer, the FAQ and the catalog lint read these numbers from here, so the text cannot
drift from the rule the catalog is checked against. Units follow the README: NVLink in GB/s per
GPU, both directions added, as NVIDIA quotes it; InfiniBand in Gb/s per port, one direction.
`tests/content/test_content.py` fails when a page states a bandwidth that is not here, and when
the shipped catalog disagrees with these figures.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """One stated number: its value, its unit and where the vendor says so."""

    value: int
    unit: str
    source_url: str


# -- NVLink, per GPU, bidirectional GB/s --------------------------------------------------------

V100_PAGE = "https://www.nvidia.com/en-us/data-center/v100/"
A100_DATASHEET = (
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
H100_PAGE = "https://www.nvidia.com/en-us/data-center/h100/"
H200_PAGE = "https://www.nvidia.com/en-us/data-center/h200/"
DGX_B200_PAGE = "https://www.nvidia.com/en-us/data-center/dgx-b200/"
GB200_NVL72_PAGE = "https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
NVLINK_PAGE = "https://www.nvidia.com/en-us/data-center/nvlink/"

NVLINK = {
    2: Figure(300, "GB/s", V100_PAGE),
    3: Figure(600, "GB/s", A100_DATASHEET),
    4: Figure(900, "GB/s", H100_PAGE),
    5: Figure(1800, "GB/s", NVLINK_PAGE),
}
# The GPUs each generation ships on (the catalog's `gpus.toml` agrees; see the tests).
NVLINK_GPUS = {
    2: ("V100",),
    3: ("A100",),
    4: ("H100", "H200"),
    5: ("B200", "GB200", "B300"),
}
# What `lint_catalog` checks every NVLink link against: generation -> GB/s per GPU.
NVLINK_GBYTES_PER_GPU = {generation: figure.value for generation, figure in NVLINK.items()}

# AMD Infinity Fabric (xGMI) on MI300X: 7 peer links, aggregate per GPU, bidirectional GB/s.
MI300X_AZURE = (
    "https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/"
    "ndmi300xv5-series"
)
# MI355X (CDNA 4): seven links at 153.6 GB/s, 1,075.2 GB/s peer aggregate (AMD's CDNA 4 white
# paper); the catalog stores whole GB/s.
CDNA4_WHITEPAPER = (
    "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/"
    "amd-cdna-4-architecture-whitepaper.pdf"
)
INFINITY_FABRIC = {
    "mi300x": Figure(896, "GB/s", MI300X_AZURE),
    "mi355x": Figure(1075, "GB/s", CDNA4_WHITEPAPER),
}
INFINITY_FABRIC_GBYTES_PER_GPU = {
    "mi300x": INFINITY_FABRIC["mi300x"].value,
    "mi325x": INFINITY_FABRIC["mi300x"].value,
    "mi355x": INFINITY_FABRIC["mi355x"].value,
}

# PCIe x16, bidirectional GB/s, as the same datasheets compare it with NVLink.
PCIE_X16 = {
    4: Figure(64, "GB/s", A100_DATASHEET),
    5: Figure(128, "GB/s", H100_PAGE),
}

# -- NVLink domain sizes ------------------------------------------------------------------------

# GPUs in one NVLink domain inside a server: a bridged pair, 4 or 8 on a board, 16 on two boards
# (GCP a2-megagpu-16g), and the rack-scale domain of a GB200 NVL72.
SERVER_DOMAIN_SIZES = (2, 4, 8, 16)
NVL72_DOMAIN = Figure(72, "GPUs", GB200_NVL72_PAGE)
NVL72_GPUS_PER_NODE = 4

# -- InfiniBand, per port, Gb/s -----------------------------------------------------------------

AZURE_NDM_A100_V4 = (
    "https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/"
    "ndma100v4-series"
)
AZURE_ND_H100_V5 = (
    "https://learn.microsoft.com/en-us/azure/virtual-machines/sizes/gpu-accelerated/ndh100v5-series"
)
NVIDIA_NDR_OVERVIEW = "https://docs.nvidia.com/dgx-superpod/design-guide-cabling-data-centers/latest/ndr-overview.html"
CONNECTX8_MANUAL = "https://docs.nvidia.com/networking/display/connectx8supernic/introduction"

INFINIBAND = {
    "HDR": Figure(200, "Gb/s", AZURE_NDM_A100_V4),
    "NDR": Figure(400, "Gb/s", NVIDIA_NDR_OVERVIEW),
    "XDR": Figure(800, "Gb/s", CONNECTX8_MANUAL),
}
INFINIBAND_GBITS_PER_PORT = {rate: figure.value for rate, figure in INFINIBAND.items()}

# An HGX node with one NDR port per GPU, as on Azure ND H100 v5: 8 x 400 Gb/s.
HGX_NICS = 8
HGX_NDR_NODE = Figure(HGX_NICS * INFINIBAND["NDR"].value, "Gb/s", AZURE_ND_H100_V5)

# -- everything a page may state ----------------------------------------------------------------


def stated_figures() -> dict[str, Figure]:
    """Every figure by a stable name; the content templates and the FAQ read them as `fig.*`."""
    figures = {f"nvlink{gen}": figure for gen, figure in NVLINK.items()}
    figures |= {f"pcie{gen}": figure for gen, figure in PCIE_X16.items()}
    figures |= {rate.lower(): figure for rate, figure in INFINIBAND.items()}
    figures["mi300x"] = INFINITY_FABRIC["mi300x"]
    figures["nvl72"] = NVL72_DOMAIN
    figures["hgx_ndr_node"] = HGX_NDR_NODE
    # Derived: one direction of a bidirectional NVLink figure; bits to bytes for the network.
    figures["nvlink4_one_way"] = Figure(NVLINK[4].value // 2, "GB/s", NVLINK[4].source_url)
    figures["ndr_bytes"] = Figure(
        INFINIBAND["NDR"].value // 8, "GB/s", INFINIBAND["NDR"].source_url
    )
    figures["hgx_ndr_node_bytes"] = Figure(HGX_NDR_NODE.value // 8, "GB/s", HGX_NDR_NODE.source_url)
    return figures


def allowed_bandwidths() -> dict[str, set[int]]:
    """The bandwidth values a page may print, by unit: exactly the stated figures."""
    allowed: dict[str, set[int]] = {"GB/s": set(), "Gb/s": set()}
    for figure in stated_figures().values():
        if figure.unit in allowed:
            allowed[figure.unit].add(figure.value)
    return allowed
