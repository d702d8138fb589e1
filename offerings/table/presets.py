"""Pre-filtered views of the table for the questions buyers ask most."""

from dataclasses import dataclass

from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from offerings.schemas import RDMA_FABRICS


@dataclass(frozen=True)
class Preset:
    slug: str
    label: str
    query: str
    # The URL name of a page of its own that shows the table with `query` applied.
    page: str = ""

    @property
    def href(self) -> str:
        """Where the preset's link goes: its own page or the filter page, with its query."""
        return (reverse(self.page) if self.page else "") + f"?{self.query}"


PRESETS = (
    # The buyer's first question, answered by a page of its own (the same table and filters).
    Preset(
        "nvlink-or-infiniband",
        _("NVLink or InfiniBand"),
        "interconnect=nvlink-or-infiniband",
        page="offerings:nvlink-infiniband",
    ),
    Preset("nvlink-infiniband", _("NVLink + InfiniBand"), "nvlink=true&fabric=infiniband"),
    # NVLink nodes to rent for a job that fits one node: without an RDMA fabric, so no row here
    # charges for InfiniBand and its like that a single node never uses.
    Preset(
        "nvlink-single-node",
        _("NVLink, single node"),
        "nvlink=true&gpu_count_min=2&rdma=false",
    ),
    # The multi-node trap: fast inside the node, several nodes bookable, but TCP between them.
    Preset(
        "nvlink-no-rdma",
        _("NVLink but no RDMA between nodes"),
        "nvlink=true&rdma=false&multi_node=true",
    ),
    Preset(
        "any-rdma",
        _("Any RDMA fabric"),
        "&".join(f"fabric={technology}" for technology in RDMA_FABRICS),
    ),
    Preset("nvswitch-8", _("8-GPU NVSwitch nodes"), "nvswitch=true&gpu_count_min=8"),
    Preset("pcie-only", _("PCIe-only multi-GPU"), "nvlink=false&gpu_count_min=2"),
)
