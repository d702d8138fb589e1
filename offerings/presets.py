"""Pre-filtered views of the table for the questions buyers ask most."""

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from offerings.schemas import RDMA_FABRICS


@dataclass(frozen=True)
class Preset:
    slug: str
    label: str
    query: str


PRESETS = (
    Preset("nvlink-infiniband", _("NVLink + InfiniBand"), "nvlink=true&fabric=infiniband"),
    Preset("nvlink-single-node", _("NVLink, single node"), "nvlink=true&gpu_count_min=2"),
    Preset(
        "any-rdma",
        _("Any RDMA fabric"),
        "&".join(f"fabric={technology}" for technology in RDMA_FABRICS),
    ),
    Preset("nvswitch-8", _("8-GPU NVSwitch nodes"), "nvswitch=true&gpu_count_min=8"),
    Preset("pcie-only", _("PCIe-only multi-GPU"), "nvlink=false&gpu_count_min=2"),
)
