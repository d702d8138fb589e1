"""What the catalog accepts from any source: curated fixtures and provider scrapers.

Frozen pydantic models with units in field names. Fixtures (TOML under `fixtures/`) are parsed
into `CatalogFile`; scrapers produce `ScrapedOffer`. Anything that fails here never reaches the
database, and the error names the file and the field.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    field_validator,
    model_validator,
)

SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, max_length=120)]
ProviderSlug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+$", max_length=40)]
CurrencyCode = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
Url = Annotated[AnyHttpUrl, Field(description="http(s) URL of the source")]
Money = Annotated[Decimal, Field(ge=0, max_digits=14, decimal_places=6, allow_inf_nan=False)]
Geo = Literal["na", "sa", "eu", "me", "af", "asia", "oc"]

HOURS_PER_MONTH = Decimal(730)


# The fabrics that are RDMA (InfiniBand, RoCE v2, AWS EFA, Alibaba eRDMA) and those that are
# not (Google's GPUDirect-TCPX/TCPXO is GPU-direct over TCP; plain Ethernet is TCP/IP). The one
# definition: the model's constraints, the lint, the presets, the content and the filters read it.
RDMA_FABRICS: tuple[str, ...] = ("infiniband", "roce", "efa", "erdma")
NON_RDMA_FABRICS: tuple[str, ...] = ("tcpx", "ethernet")
FabricKind = Literal["infiniband", "roce", "efa", "erdma", "tcpx", "ethernet"]
# The two fabrics whose generations perform differently, and each one's generations: AWS EFA
# (AWS's EFA page lists each type under "Nitro v3 (EFA v1)" ... "Nitro v6 (EFA v4)") and
# Google's GPUDirect-TCPX and its successor GPUDirect-TCPXO (both `tcpx` as a technology).
# Any other fabric has no generation on record ("").
FABRIC_GENERATIONS: dict[str, tuple[str, ...]] = {
    "efa": ("efa-v1", "efa-v2", "efa-v3", "efa-v4"),
    "tcpx": ("tcpx", "tcpxo"),
}
FabricGenerationName = Literal["efa-v1", "efa-v2", "efa-v3", "efa-v4", "tcpx", "tcpxo"]

# How an instance type can be bought, in the order pages list them. Commitment plans (AWS
# Savings Plans and the like) are `reserved` with their term; `sales-only`: only through sales.
PURCHASE_KINDS: tuple[str, ...] = ("on-demand", "spot", "reserved", "capacity-block", "sales-only")

# A provider's network readiness: the checks a buyer makes before renting a cluster, in the order
# the API and the pages list them. Six are yes/no facts; `fabrics` is a list of fabric kinds,
# `max_self_serve_gpus` a GPU count (quota or cluster limit, as stated), `egress_usd_per_gb` the
# internet egress price of the first paid tier.
READINESS_FLAGS: tuple[str, ...] = (
    "gpudirect_rdma",
    "sharp",
    "topology_aware_scheduling",
    "managed_slurm",
    "managed_kubernetes",
    "nccl_tests_published",
)
READINESS_FACTS: tuple[str, ...] = (
    "fabrics",
    "max_self_serve_gpus",
    *READINESS_FLAGS,
    "egress_usd_per_gb",
)


def instance_slug(name: str) -> str:
    """Turn a provider's instance name into the contract's slug (`p5.48xlarge` -> `p5-48xlarge`)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class Sourced(Frozen):
    source_url: Url
    verified_at: date

    @field_validator("verified_at")
    @classmethod
    def _not_in_future(cls, value: date) -> date:
        if value > date.today():
            raise ValueError("verified_at is in the future")
        return value


class ReadinessFactIn(Sourced):
    """One readiness fact of a provider: its value, its basis, where it is stated and when."""

    basis: Basis
    notes: str = ""


class FlagFactIn(ReadinessFactIn):
    value: StrictBool


class FabricsFactIn(ReadinessFactIn):
    value: tuple[FabricKind, ...] = Field(min_length=1)

    @field_validator("value")
    @classmethod
    def _each_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(value) != len(set(value)):
            raise ValueError("a fabric kind is listed twice")
        return value


class GpuCountFactIn(ReadinessFactIn):
    value: StrictInt = Field(gt=0, le=10_000_000)


class UsdPerGbFactIn(ReadinessFactIn):
    # A string in the fixture ("0.09"), so the figure is the one the source states.
    value: Decimal = Field(ge=0, le=100, max_digits=10, decimal_places=4, allow_inf_nan=False)


class ReadinessIn(Frozen):
    """`[provider.readiness.<fact>]` tables; a fact left out is unknown."""

    fabrics: FabricsFactIn | None = None
    max_self_serve_gpus: GpuCountFactIn | None = None
    gpudirect_rdma: FlagFactIn | None = None
    sharp: FlagFactIn | None = None
    topology_aware_scheduling: FlagFactIn | None = None
    managed_slurm: FlagFactIn | None = None
    managed_kubernetes: FlagFactIn | None = None
    nccl_tests_published: FlagFactIn | None = None
    egress_usd_per_gb: UsdPerGbFactIn | None = None

    def stated(self) -> dict[str, ReadinessFactIn]:
        """The facts a source states, by name, in the API's order."""
        return {
            name: getattr(self, name) for name in READINESS_FACTS if getattr(self, name) is not None
        }


class ProviderIn(Sourced):
    slug: ProviderSlug
    name: str = Field(min_length=1, max_length=100)
    name_zh: str = Field(default="", max_length=100)
    website: Url
    kind: Literal["hyperscaler", "specialist", "marketplace"]
    home_currency: CurrencyCode = "USD"
    notes: str = ""
    # Loaded into rows of their own, each with its digest: not part of the provider row's.
    readiness: ReadinessIn = Field(default_factory=ReadinessIn, exclude=True)


class RegionIn(Frozen):
    code: str = Field(min_length=1, max_length=64)
    name: str = Field(default="", max_length=120)
    name_zh: str = Field(default="", max_length=120)
    geo: Geo | Literal[""] = ""


class GpuIn(Sourced):
    slug: Slug
    vendor: Literal["nvidia", "amd", "intel"]
    name: str = Field(min_length=1, max_length=80)
    architecture: str = ""
    form_factor: Literal["sxm", "pcie", "oam", "superchip"]
    memory_gib: int = Field(gt=0, le=4096)
    memory_type: str = ""
    memory_bandwidth_gbytes_per_s: int | None = Field(default=None, gt=0)
    bf16_dense_tflops: Decimal | None = Field(default=None, gt=0, allow_inf_nan=False)
    pcie_generation: int | None = Field(default=None, ge=1, le=7)
    nvlink_generation: int | None = Field(default=None, ge=1, le=6)


# Where a fact comes from: the provider states it, it follows from the vendor's platform
# specification (offerings.platform), or a third party says it. A curated fixture states the
# basis of its table's facts (`basis`) with exceptions per field (`basis_of`).
Basis = Literal["provider", "platform", "third-party"]
# A price is stated by someone: the provider or a third party; no platform rule gives one.
PriceBasis = Literal["provider", "third-party"]


class BasisMixin(Frozen):
    basis: Basis | None = Field(default=None, exclude=True)
    basis_of: dict[str, Basis] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="after")
    def _basis_names_fields(self) -> BasisMixin:
        unknown = set(self.basis_of) - set(type(self).model_fields)
        if unknown:
            raise ValueError(f"basis_of names no field of this table: {sorted(unknown)}")
        return self


class GpuLinkIn(BasisMixin, Sourced):
    """The GPU-to-GPU link; leave a figure out when no source states it."""

    technology: Literal["none", "nvlink", "infinity-fabric", "unknown"]
    generation: int | None = Field(default=None, ge=1, le=6)
    topology: Literal["nvswitch", "bridge", "mesh", "hybrid-cube-mesh", "unknown"] | None = None
    domain_size: int | None = Field(default=None, ge=2, le=1024)
    bandwidth_gbytes_per_s: int | None = Field(default=None, gt=0, le=100_000)

    @model_validator(mode="after")
    def _none_means_nothing_else(self) -> GpuLinkIn:
        details = (self.generation, self.topology, self.domain_size, self.bandwidth_gbytes_per_s)
        if self.technology == "none" and any(v is not None for v in details):
            raise ValueError("technology 'none' cannot carry generation/topology/domain/bandwidth")
        if self.technology != "none" and self.topology is None:
            raise ValueError("topology is required unless technology is 'none' (use 'unknown')")
        return self


class FabricIn(BasisMixin, Sourced):
    """The back-end network GPU traffic between nodes uses, and beside it the instance's general
    network (VPC, storage, internet); leave a figure out when no source states it.

    A type whose only network is the general one has technology `ethernet` and no back-end
    figures: its Gb/s go in `network_gbits_per_s`. Where the provider runs both over the same
    network cards (AWS EFA and ENA, Alibaba's eRDMA on the VPC baseline), both fields carry their
    stated figures (often one and the same) and `network_shared` says the two share them.
    """

    technology: Literal["infiniband", "roce", "efa", "erdma", "tcpx", "ethernet", "unknown"]
    port_speed_gbits_per_s: int | None = Field(default=None, gt=0, le=10_000)
    nics: int | None = Field(default=None, gt=0, le=64)
    bandwidth_gbits_per_s: int | None = Field(default=None, gt=0, le=100_000)
    rdma: bool | None = None
    gpudirect_rdma: bool | None = None
    rail_optimized: bool | None = None
    multi_node: bool | None = None
    max_nodes: int | None = Field(default=None, ge=1)
    sales_only: bool | None = None
    cluster_source_url: Url | None = None
    network_gbits_per_s: int | None = Field(default=None, gt=0, le=100_000)
    network_shared: bool | None = None
    # Only for EFA (efa-v1 .. efa-v4) and TCPX (tcpx, tcpxo); "" where no source states it.
    generation: FabricGenerationName | Literal[""] = ""

    @model_validator(mode="after")
    def _consistent(self) -> FabricIn:
        backend = (self.bandwidth_gbits_per_s, self.nics, self.port_speed_gbits_per_s)
        if self.technology == "ethernet" and any(v is not None for v in backend):
            raise ValueError(
                "an ethernet type has no back-end network: give its general network as "
                "network_gbits_per_s, not bandwidth_gbits_per_s, nics or port_speed_gbits_per_s"
            )
        if self.network_shared and (
            self.bandwidth_gbits_per_s is None or self.network_gbits_per_s is None
        ):
            raise ValueError(
                "network_shared says both networks run over the same cards: give "
                "bandwidth_gbits_per_s and network_gbits_per_s"
            )
        if self.technology in NON_RDMA_FABRICS and (self.rdma or self.gpudirect_rdma):
            raise ValueError(f"{self.technology} is not RDMA: rdma/gpudirect_rdma must not be true")
        if self.technology in RDMA_FABRICS and self.rdma is False:
            raise ValueError(f"{self.technology} is an RDMA fabric: rdma cannot be false")
        if self.multi_node is False and self.max_nodes not in (None, 1):
            raise ValueError("max_nodes above 1 contradicts multi_node = false")
        if self.generation and self.generation not in FABRIC_GENERATIONS.get(self.technology, ()):
            owner = next(
                tech for tech, gens in FABRIC_GENERATIONS.items() if self.generation in gens
            )
            raise ValueError(
                f"generation {self.generation!r} is a generation of technology {owner!r}, "
                f"not {self.technology!r}"
            )
        return self


class PurchaseModeIn(Sourced):
    """One way to buy an instance type, as its source states it; leave out what it does not say."""

    kind: Literal["on-demand", "spot", "reserved", "capacity-block", "sales-only"]
    # A reserved term or commitment plan (12, 36 months); only reserved modes have one, and a
    # reserved mode whose source names no term leaves it out.
    term_months: int | None = Field(default=None, ge=1, le=120)
    min_hours: int | None = Field(default=None, gt=0, le=876_000)
    max_hours: int | None = Field(default=None, gt=0, le=876_000)
    min_gpus: int | None = Field(default=None, gt=0, le=1_000_000)
    notes: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> PurchaseModeIn:
        if self.term_months is not None and self.kind != "reserved":
            raise ValueError("term_months only applies to reserved modes")
        if (
            self.min_hours is not None
            and self.max_hours is not None
            and self.max_hours < self.min_hours
        ):
            raise ValueError("max_hours is less than min_hours")
        return self

    @property
    def stored_term(self) -> int | None:
        """The term as stored: 0 for kinds without one, None for a reserved term not stated."""
        return self.term_months if self.kind == "reserved" else 0


# The collectives nccl-tests measures, by the names of its binaries without `_perf`.
COLLECTIVES: tuple[str, ...] = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "reduce",
    "sendrecv",
)


class CollectiveResultIn(Sourced):
    """One published collective benchmark (nccl-tests or the like) run on a catalog type."""

    provider: ProviderSlug
    instance: Slug
    collective: Literal[
        "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"
    ]
    nodes: int = Field(gt=0, le=100_000)
    gpus: int = Field(gt=0, le=1_000_000, description="GPUs in the run, all nodes together")
    message_bytes: int = Field(gt=0, le=2**50)
    busbw_gbytes_per_s: Decimal = Field(gt=0, max_digits=10, decimal_places=3)
    basis: Literal["provider", "third-party"]
    notes: str = ""

    @model_validator(mode="after")
    def _gpus_cover_nodes(self) -> CollectiveResultIn:
        if self.gpus < self.nodes:
            raise ValueError("a run has at least one GPU per node")
        return self


class PriceIn(Frozen):
    """A curated price, in the currency the provider charges."""

    region: str = Field(min_length=1, max_length=64)
    kind: Literal["on-demand", "spot", "reserved", "capacity-block"]
    term_months: int = Field(default=0, ge=0, le=120)
    price_per_hour: Money | None = None
    term_total: Money | None = Field(
        default=None, description="A reserved term's upfront total; becomes hourly / 730 / months"
    )
    currency: CurrencyCode
    # When the source shows the price was read; None: the source shows no date ("date unknown").
    observed_at: datetime | None = None
    source_url: Url
    # Who states the price at `source_url`: the provider (its own page, API or price list) or a
    # third party (a public catalog or a post that copies providers' prices). No platform rule
    # gives a price.
    basis: PriceBasis
    available: bool | None = None

    @model_validator(mode="after")
    def _term_and_amount(self) -> PriceIn:
        if (self.kind == "reserved") != (self.term_months > 0):
            raise ValueError("term_months is required for reserved prices and only for them")
        if (self.price_per_hour is None) == (self.term_total is None):
            raise ValueError("give exactly one of price_per_hour and term_total")
        if self.term_total is not None and self.kind != "reserved":
            raise ValueError("term_total only applies to reserved prices")
        if self.observed_at is not None and self.observed_at.tzinfo is None:
            raise ValueError("observed_at needs a UTC offset (e.g. 2026-11-29T00:00:00Z)")
        return self

    @property
    def hourly(self) -> Decimal:
        """The price per instance-hour: a term total spread over 730 hours a month."""
        if self.price_per_hour is not None:
            return self.price_per_hour
        return self.term_total / (HOURS_PER_MONTH * self.term_months)


class InstanceIn(Sourced):
    name: str = Field(min_length=1, max_length=120)
    slug: Slug | None = None
    gpu: Slug
    # The basis of the GPU model itself: third-party when the provider never names it.
    gpu_basis: Basis = "provider"
    gpu_count: int = Field(gt=0, le=1024)
    # The rack-scale system the provider names the instance part of; platform rules read it.
    rack: Literal["", "nvl72"] = Field(default="", exclude=True)
    vcpus: int | None = Field(default=None, gt=0)
    ram_gib: Decimal | None = Field(default=None, gt=0, allow_inf_nan=False)
    local_nvme_gb: int | None = Field(default=None, ge=0)
    billing_granularity: Literal["second", "minute", "hour", "month", "unknown"] = "unknown"
    minimum_term_hours: int | None = Field(default=None, ge=0)
    notes: str = ""
    setup_notes: str = ""
    # Other names a buyer may type: a former name, the description a source used before the SKU.
    aliases: tuple[str, ...] = ()
    nvlink: GpuLinkIn
    fabric: FabricIn
    prices: tuple[PriceIn, ...] = ()
    purchase_modes: tuple[PurchaseModeIn, ...] = ()

    @property
    def resolved_slug(self) -> str:
        return self.slug or instance_slug(self.name)

    @model_validator(mode="after")
    def _domain_fits(self) -> InstanceIn:
        link = self.nvlink
        if (
            link.domain_size is not None
            and link.domain_size > self.gpu_count
            and link.domain_size % self.gpu_count
        ):
            raise ValueError("an NVLink domain larger than the node must span whole nodes")
        keys = [(p.region, p.kind, p.term_months) for p in self.prices]
        if len(keys) != len(set(keys)):
            raise ValueError("two prices for the same region, kind and term")
        modes = [(m.kind, m.stored_term) for m in self.purchase_modes]
        if len(modes) != len(set(modes)):
            raise ValueError("two purchase modes of the same kind and term")
        return self


class ProviderCatalog(Frozen):
    """One `fixtures/providers/<slug>.toml` file."""

    provider: ProviderIn
    regions: tuple[RegionIn, ...] = ()
    instances: tuple[InstanceIn, ...] = ()

    @model_validator(mode="after")
    def _references(self) -> ProviderCatalog:
        codes = [r.code for r in self.regions]
        if len(codes) != len(set(codes)):
            raise ValueError("duplicate region codes")
        slugs = [i.resolved_slug for i in self.instances]
        duplicates = {s for s in slugs if slugs.count(s) > 1}
        if duplicates:
            raise ValueError(f"duplicate instance slugs: {sorted(duplicates)}")
        for instance in self.instances:
            for price in instance.prices:
                if price.region not in codes:
                    raise ValueError(f"{instance.name}: price region {price.region!r} not listed")
        return self


class ExchangeRateIn(Frozen):
    currency: CurrencyCode
    rate_date: date
    usd_per_unit: Decimal = Field(gt=0, allow_inf_nan=False)
    source_url: Url


class GpuCatalog(Frozen):
    """`fixtures/gpus.toml`."""

    gpus: tuple[GpuIn, ...]


class ExchangeRateCatalog(Frozen):
    """`fixtures/exchange_rates.toml`."""

    rates: tuple[ExchangeRateIn, ...] = ()


# -- what scrapers hand to the one upsert --------------------------------------------------------


class ScrapedOffer(Frozen):
    """One price a scraper read: a provider SKU x region x kind x term, in the currency charged.

    `instance_slug` is the curated instance type the SKU maps to through the scraper's explicit
    mapping table, or None when it maps to none: such a row goes to the review queue with
    `parsed`, never into the catalog.
    """

    sku: str = Field(min_length=1, max_length=200)
    instance_slug: Slug | None
    # The instance's provider, given only by a price source (its rows span providers).
    provider: ProviderSlug | Literal[""] = ""
    region: str = Field(min_length=1, max_length=64)
    region_name: str = Field(default="", max_length=120)
    geo: Geo | Literal[""] = ""
    kind: Literal["on-demand", "spot", "reserved", "capacity-block"]
    term_months: int = Field(default=0, ge=0, le=120)
    price_per_hour: Decimal = Field(gt=0, allow_inf_nan=False)
    currency: CurrencyCode
    available: bool | None = None
    source_url: Url
    # When the source shows the price was current (read only when the batch is `dated`).
    observed_at: datetime | None = None
    parsed: dict = Field(default_factory=dict)

    @model_validator(mode="after")
    def _term_only_reserved(self) -> ScrapedOffer:
        if (self.kind == "reserved") != (self.term_months > 0):
            raise ValueError("term_months is required for reserved prices and only for them")
        return self


class RejectedRow(Frozen):
    """A row a scraper or the upsert refused, with the reason; stored on the refresh run.

    Where the row's offer is known (`instance_slug`, `region`, `kind`, `term_months`) the offer
    keeps its previous price and is not counted as missing, so bad data never retires it.
    """

    sku: str = ""
    reason: str = Field(min_length=1)
    instance_slug: str | None = None
    provider: str = ""  # as on ScrapedOffer: a price source's rows name their provider
    region: str = ""
    kind: str = ""
    term_months: int = 0


class ScrapeBatch(Frozen):
    """Everything one scraper run produced for one provider."""

    offers: tuple[ScrapedOffer, ...] = ()
    rejected: tuple[RejectedRow, ...] = ()
    warnings: tuple[str, ...] = ()
    # The rows carry their own `observed_at` (None: their source shows no date), as a price
    # source's do (the date of the file it read); otherwise they are observed at the run's time,
    # or a replay's recording date.
    dated: bool = False
    # Rows read from each file or endpoint (by its name) where a source has several: the
    # row-count guard holds for each part, so one file cut short cannot hide among the others.
    parts: dict[str, int] = {}
