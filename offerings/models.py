"""The catalog: providers, GPU models, instance types with their interconnects, regions, offers.

Units live in field names (`_gib`, `_gbytes_per_s` for NVLink, `_gbits_per_s` for fabrics).
NVLink bandwidth is per GPU and bidirectional, as NVIDIA quotes it. Fabric bandwidth is per node,
the sum of the back-end (GPU-facing) NIC line rates, front-end NICs excluded.

Unknown is a value: a nullable field that is NULL means "no source states it", never "none".
Where "none" is a fact of its own it has its own choice (`GpuLink.Technology.NONE`).
"""

from __future__ import annotations

import operator
from datetime import timedelta
from functools import reduce

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce, NullIf
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from offerings.platform import FABRIC_BASIS_FIELDS, LINK_FIELDS
from offerings.schemas import (
    COLLECTIVES,
    FABRIC_GENERATIONS,
    NON_RDMA_FABRICS,
    PURCHASE_KINDS,
    RDMA_FABRICS,
    READINESS_FACTS,
    READINESS_FLAGS,
)

# -- shared choices -------------------------------------------------------------------------------


class Geo(models.TextChoices):
    NORTH_AMERICA = "na", _("North America")
    SOUTH_AMERICA = "sa", _("South America")
    EUROPE = "eu", _("Europe")
    MIDDLE_EAST = "me", _("Middle East")
    AFRICA = "af", _("Africa")
    ASIA = "asia", _("Asia")
    OCEANIA = "oc", _("Oceania")


CURRENCY_CODE_RE = r"^[A-Z]{3}$"
SLUG_RE = r"^[a-z0-9]+(-[a-z0-9]+)*$"

# Every stored URL is shown as a link: http(s) only, never javascript:, data: or ftp:.
validate_http_url = URLValidator(schemes=["http", "https"])


def http_url_check(prefix: str, field: str = "source_url") -> models.CheckConstraint:
    """The database's own refusal of a non-http(s) URL: raw-SQL upserts skip model validation."""
    return models.CheckConstraint(
        condition=Q(**{field: ""}) | Q(**{f"{field}__iregex": r"^https?://"}),
        name=f"{prefix}_{field}_http",
        violation_error_message="Only http(s) links are stored.",
    )


class Curated(models.Model):
    """Provenance and curation state shared by every curated row."""

    source_url = models.URLField(
        max_length=500,
        blank=True,
        validators=[validate_http_url],
        help_text="Where the facts on this row are stated.",
    )
    verified_at = models.DateField(
        null=True,
        blank=True,
        help_text="The day someone last checked these facts against the source.",
    )
    locked_fields = ArrayField(
        models.CharField(max_length=64),
        default=list,
        blank=True,
        help_text="Fields that load_catalog and scrapers must not overwrite. "
        "Fields a curator edits in the admin are added here automatically.",
    )
    fixture_digest = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        help_text="SHA-256 of the fixture entry last loaded into this row.",
    )

    class Meta:
        abstract = True


class ProviderKind(models.TextChoices):
    HYPERSCALER = "hyperscaler", _("Hyperscaler")
    SPECIALIST = "specialist", _("Specialist GPU cloud")
    MARKETPLACE = "marketplace", _("Marketplace")
    # A public catalog that reads several providers' prices (SkyPilot's): its runs are recorded
    # under it, its offers belong to each instance's own provider, and it has no page of its own.
    PRICE_SOURCE = "price-source", _("Price source")


class GpuVendor(models.TextChoices):
    NVIDIA = "nvidia", "NVIDIA"
    AMD = "amd", "AMD"
    INTEL = "intel", "Intel"


class FormFactor(models.TextChoices):
    SXM = "sxm", _("SXM")
    PCIE = "pcie", _("PCIe")
    OAM = "oam", _("OAM")
    SUPERCHIP = "superchip", _("Superchip (Grace + GPU)")


class BillingGranularity(models.TextChoices):
    SECOND = "second", _("Per second")
    MINUTE = "minute", _("Per minute")
    HOUR = "hour", _("Per hour")
    MONTH = "month", _("Per month")
    UNKNOWN = "unknown", _("Unknown")


class LinkTechnology(models.TextChoices):
    NONE = "none", _("None (PCIe only)")
    NVLINK = "nvlink", _("NVLink")
    INFINITY_FABRIC = "infinity-fabric", _("Infinity Fabric (xGMI)")
    UNKNOWN = "unknown", _("Unknown")


class LinkTopology(models.TextChoices):
    NVSWITCH = "nvswitch", _("NVSwitch (all-to-all)")
    BRIDGE = "bridge", _("Bridge (pairs)")
    MESH = "mesh", _("Direct mesh")
    HYBRID_CUBE_MESH = "hybrid-cube-mesh", _("Hybrid cube-mesh")
    UNKNOWN = "unknown", _("Unknown")


class FactBasis(models.TextChoices):
    """Why the catalog believes a fact (see offerings.platform)."""

    PROVIDER = "provider", _("Stated by the provider")
    PLATFORM = "platform", _("Follows from the vendor's platform")
    THIRD_PARTY = "third-party", _("Third party")


def validate_basis_map(value, fields: tuple[str, ...]) -> None:
    """A basis map names fields of its row and gives each a known basis."""
    if not isinstance(value, dict):
        raise ValidationError(
            {"basis": 'Give an object of field name -> basis, e.g. {"technology": "provider"}.'}
        )
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ValidationError(
            {"basis": f"No such field: {', '.join(unknown)}. Fields: {', '.join(fields)}."}
        )
    wrong = sorted(name for name, basis in value.items() if basis not in FactBasis.values)
    if wrong:
        raise ValidationError(
            {"basis": f"{', '.join(wrong)}: a basis is one of {', '.join(FactBasis.values)}."}
        )


def basis_map_help(what: str) -> str:
    return (
        f"Field name -> basis (provider, platform or third-party) of each known {what} fact; "
        "an unknown field has no key."
    )


class FabricTechnology(models.TextChoices):
    INFINIBAND = "infiniband", _("InfiniBand")
    ROCE = "roce", _("RoCE v2")
    EFA = "efa", _("AWS EFA")
    ERDMA = "erdma", _("Alibaba eRDMA")
    TCPX = "tcpx", _("GPUDirect-TCPX/TCPXO (not RDMA)")
    ETHERNET = "ethernet", _("Ethernet (TCP/IP only)")
    UNKNOWN = "unknown", _("Unknown")


class FabricGeneration(models.TextChoices):
    """The generation of an EFA or TCPX fabric, as a source states it: the generations of these
    two perform differently (collective bandwidth), so the estimator can tell them apart."""

    UNKNOWN = "", _("Unknown or not applicable")
    EFA_V1 = "efa-v1", _("EFA v1")
    EFA_V2 = "efa-v2", _("EFA v2")
    EFA_V3 = "efa-v3", _("EFA v3")
    EFA_V4 = "efa-v4", _("EFA v4")
    TCPX = "tcpx", _("GPUDirect-TCPX")
    TCPXO = "tcpxo", _("GPUDirect-TCPXO")


class OfferKind(models.TextChoices):
    ON_DEMAND = "on-demand", _("On-demand")
    SPOT = "spot", _("Spot / interruptible")
    RESERVED = "reserved", _("Reserved")
    # An AWS EC2 Capacity Block: GPUs booked for a set window, paid upfront (hourly = the fee /
    # (instances x hours) of a stated block).
    CAPACITY_BLOCK = "capacity-block", _("Capacity Block")


class OfferOrigin(models.TextChoices):
    CATALOG = "catalog", "Curated catalog (fixtures)"
    SCRAPER = "scraper", "Provider API"
    CURATOR = "curator", "Entered by a curator"


class RunStatus(models.TextChoices):
    # Translated: the provider page shows the last run's status.
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    REJECTED = "rejected", _("Rejected (row-count guard)")
    SKIPPED = "skipped", _("Skipped (no API key)")


class ReviewStatus(models.TextChoices):
    NEW = "new", "New"
    MAPPED = "mapped", "Mapped to an instance type"
    IGNORED = "ignored", "Ignored (not a multi-GPU instance)"


# -- providers, GPUs, regions ---------------------------------------------------------------------


class Provider(Curated):
    Kind = ProviderKind

    # Other names a provider is known by, accepted wherever a provider slug is (Verda is
    # DataCrunch's new name). Filters, URLs and the scraper registry all read this one table.
    ALIASES = {"verda": "datacrunch"}

    slug = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=100)
    name_zh = models.CharField(
        max_length=100,
        blank=True,
        help_text="The name the provider goes by in Simplified Chinese (阿里云, 亚马逊云科技); empty "
        "where it uses its English name there too.",
    )
    website = models.URLField(max_length=300, validators=[validate_http_url])
    kind = models.CharField(max_length=20, choices=Kind.choices)
    home_currency = models.CharField(max_length=3, default="USD")
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            http_url_check("provider"),
            http_url_check("provider", "website"),
            models.CheckConstraint(
                condition=Q(slug__regex=r"^[a-z0-9]+$"),
                name="provider_slug_one_word",
                violation_error_message="A provider slug is one lower-case word of letters and digits.",
            ),
            models.CheckConstraint(
                condition=Q(home_currency__regex=CURRENCY_CODE_RE),
                name="provider_home_currency_iso",
                violation_error_message="Use a three-letter ISO currency code such as USD or CNY.",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=ProviderKind.values),
                name="provider_kind_valid",
                violation_error_message="Choose hyperscaler, specialist, marketplace or price source.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def local_name(self) -> str:
        """The name a reader of the page's language knows the provider by."""
        return localized(self.name, self.name_zh)


def localized(english: str, chinese: str, language: str | None = None) -> str:
    """`chinese` on a Chinese page (`language`, else the active one) when there is one, else
    `english`."""
    return chinese if chinese and (language or get_language()) == "zh-hans" else english


def localized_field(english: str, chinese: str):
    """`localized` in SQL, for the active language: the `chinese` column where it is not empty
    on a Chinese page, else the `english` one."""
    if get_language() == "zh-hans":
        return Coalesce(NullIf(chinese, models.Value("")), english)
    return F(english)


class Region(models.Model):
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="regions")
    code = models.CharField(max_length=64, help_text="The provider's own region code.")
    name = models.CharField(max_length=120, blank=True)
    name_zh = models.CharField(
        max_length=120,
        blank=True,
        help_text="The provider's own Simplified Chinese name of the region (华东2（上海）), if it "
        "gives one.",
    )
    geo = models.CharField(
        max_length=4, choices=Geo.choices, blank=True, help_text="Continent; blank if global."
    )

    class Meta:
        ordering = ["provider", "code"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "code"], name="region_unique_code"),
            models.CheckConstraint(
                condition=Q(geo="") | Q(geo__in=Geo.values),
                name="region_geo_valid",
                violation_error_message="Choose a continent code or leave it blank.",
            ),
            models.CheckConstraint(
                condition=~Q(code=""),
                name="region_code_not_empty",
                violation_error_message="A region needs the provider's code.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider.slug}/{self.code}"


class GpuModel(Curated):
    """A GPU as its vendor specifies it; `slug` follows the contract (`h100-sxm`, `a100-sxm-80gb`)."""

    Vendor = GpuVendor

    FormFactor = FormFactor

    slug = models.SlugField(max_length=40, unique=True)
    vendor = models.CharField(max_length=10, choices=Vendor.choices)
    name = models.CharField(max_length=80)
    architecture = models.CharField(max_length=40, blank=True)
    form_factor = models.CharField(max_length=10, choices=FormFactor.choices)
    memory_gib = models.PositiveIntegerField(help_text="Vendor's nominal memory per GPU.")
    memory_type = models.CharField(max_length=20, blank=True)
    memory_bandwidth_gbytes_per_s = models.PositiveIntegerField(null=True, blank=True)
    bf16_dense_tflops = models.DecimalField(
        max_digits=8, decimal_places=1, null=True, blank=True, help_text="Dense, no sparsity."
    )
    pcie_generation = models.PositiveSmallIntegerField(null=True, blank=True)
    nvlink_generation = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="NVLink generation the GPU supports; empty for none or non-NVIDIA.",
    )

    class Meta:
        verbose_name = "GPU model"
        verbose_name_plural = "GPU models"
        ordering = ["vendor", "slug"]
        constraints = [
            http_url_check("gpu"),
            models.CheckConstraint(
                condition=Q(slug__regex=SLUG_RE),
                name="gpu_slug_format",
                violation_error_message="A GPU slug is lower-case words joined by hyphens (e.g. h100-sxm).",
            ),
            models.CheckConstraint(
                condition=Q(memory_gib__gt=0),
                name="gpu_memory_positive",
                violation_error_message="GPU memory must be more than zero.",
            ),
            models.CheckConstraint(
                condition=Q(bf16_dense_tflops__isnull=True) | Q(bf16_dense_tflops__gt=0),
                name="gpu_tflops_positive",
                violation_error_message="TFLOPS must be more than zero, or empty when unknown.",
            ),
            models.CheckConstraint(
                condition=Q(nvlink_generation__isnull=True)
                | Q(nvlink_generation__gte=1, nvlink_generation__lte=6),
                name="gpu_nvlink_generation_range",
                violation_error_message="NVLink generations run from 1 to 6.",
            ),
            models.CheckConstraint(
                condition=Q(pcie_generation__isnull=True)
                | Q(pcie_generation__gte=1, pcie_generation__lte=7),
                name="gpu_pcie_generation_range",
                violation_error_message="PCIe generations run from 1 to 7.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def short_name(self) -> str:
        """The name without the vendor, for tight table cells (`H100 SXM5 80GB`)."""
        for prefix in ("NVIDIA ", "AMD Instinct ", "AMD ", "Intel "):
            if self.name.startswith(prefix):
                return self.name[len(prefix) :]
        return self.name


# -- instance types ------------------------------------------------------------------------------


class InstanceTypeQuerySet(models.QuerySet):
    def active(self) -> InstanceTypeQuerySet:
        """Instance types still offered (not retired)."""
        return self.filter(is_active=True)

    def visible(self) -> InstanceTypeQuerySet:
        """Active instance types a curator has not hidden: what the public pages list."""
        return self.active().filter(is_hidden=False)

    def for_table(self) -> InstanceTypeQuerySet:
        """Visible rows with what a table row shows, the row's chosen offer aside.

        Rows come in pages; FETCH_PEERS makes any relation a template reaches that is not
        selected here load once for the whole page, never once per row.
        """
        return (
            self.visible()
            .select_related("provider", "gpu", "gpu_link", "fabric")
            .fetch_mode(models.FETCH_PEERS)
        )

    def for_listing(self) -> InstanceTypeQuerySet:
        """Visible rows with every current offer (the API's `prices`) and curated purchase mode,
        in a fixed number of queries."""
        return self.for_table().prefetch_related(*listing_prefetches())

    def with_collective_results(self) -> InstanceTypeQuerySet:
        """Rows with their published collective results (`listed_collective_results`), in one
        more query."""
        return self.prefetch_related(collective_results_prefetch())


def listing_prefetches() -> tuple[models.Prefetch, ...]:
    """What `for_listing()` adds to a table row: every current offer and curated purchase mode
    (also applied to rows already loaded, with `prefetch_related_objects`)."""
    return (
        models.Prefetch(
            "offers",
            queryset=Offer.objects.current().select_related("region"),
            to_attr="current_offers",
        ),
        purchase_modes_prefetch(),
    )


def purchase_modes_prefetch() -> models.Prefetch:
    """A batch of types' curated purchase modes (`listed_purchase_modes`)."""
    return models.Prefetch(
        "purchase_modes", queryset=PurchaseMode.objects.all(), to_attr="listed_purchase_modes"
    )


def collective_results_prefetch() -> models.Prefetch:
    """The published collective results of a batch of types, in the order the pages list them."""
    return models.Prefetch(
        "collective_results",
        queryset=CollectiveResult.objects.order_by(
            "collective", "nodes", "gpus", "message_bytes", "source_url"
        ),
        to_attr="listed_collective_results",
    )


class InstanceType(Curated):
    BillingGranularity = BillingGranularity

    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="instance_types")
    name = models.CharField(max_length=120, help_text="As the provider spells it.")
    slug = models.SlugField(max_length=120)
    gpu = models.ForeignKey(
        GpuModel, on_delete=models.PROTECT, related_name="instance_types", verbose_name="GPU"
    )
    gpu_count = models.PositiveSmallIntegerField("GPU count")
    gpu_basis = models.CharField(
        "basis of the GPU model",
        max_length=12,
        choices=FactBasis.choices,
        default=FactBasis.PROVIDER,
        help_text="Third party when the provider never names the GPU (Alibaba gn8v).",
    )
    vcpus = models.PositiveIntegerField("vCPUs", null=True, blank=True)
    ram_gib = models.DecimalField(
        "RAM (GiB)", max_digits=8, decimal_places=1, null=True, blank=True
    )
    local_nvme_gb = models.PositiveIntegerField(
        null=True, blank=True, help_text="Local NVMe in GB (decimal), as providers state it."
    )
    billing_granularity = models.CharField(
        max_length=10, choices=BillingGranularity.choices, default=BillingGranularity.UNKNOWN
    )
    minimum_term_hours = models.PositiveIntegerField(
        null=True, blank=True, help_text="Shortest rental; 0 for none, empty when unknown."
    )
    notes = models.TextField(blank=True)
    setup_notes = models.TextField(
        blank=True, help_text="NCCL, EFA plugin, TCPX stack, placement groups, ..."
    )
    aliases = models.TextField(
        blank=True,
        help_text="Other names the type is known by (a former name, a description), one per "
        "line; the search finds them too.",
    )

    is_verified = models.BooleanField(default=False)
    is_hidden = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Kept by the database (statement triggers on offerings_offer, migration 0006), never by Python:
    # the row's default price (the cheapest current offer per GPU-hour, on-demand preferred, ties
    # by id) and the kinds of its current offers. The filter page sorts and counts on them
    # without looking at 150,000 offers; any price filter still chooses among the offers.
    best_offer = models.ForeignKey(
        "Offer",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.DO_NOTHING,
        related_name="+",
        help_text="Set by the database from the current offers.",
    )
    best_price_gpu_hour_usd = models.DecimalField(
        max_digits=14, decimal_places=6, null=True, blank=True, editable=False
    )
    offer_kinds = ArrayField(
        models.CharField(max_length=20), default=list, blank=True, editable=False
    )

    objects = InstanceTypeQuerySet.as_manager()

    # Columns the database keeps (see above): a save from Python never writes them back, so an
    # object loaded before its offers changed cannot put an old default price on the row.
    DATABASE_KEPT = frozenset({"best_offer", "best_price_gpu_hour_usd", "offer_kinds"})

    class Meta:
        ordering = ["provider__slug", "slug"]
        constraints = [
            http_url_check("instance"),
            models.UniqueConstraint(fields=["provider", "slug"], name="instance_unique_slug"),
            models.UniqueConstraint(fields=["provider", "name"], name="instance_unique_name"),
            models.CheckConstraint(
                condition=Q(slug__regex=SLUG_RE),
                name="instance_slug_format",
                violation_error_message="An instance slug is lower-case words joined by hyphens (p5.48xlarge becomes p5-48xlarge).",
            ),
            models.CheckConstraint(
                condition=Q(gpu_count__gt=0),
                name="instance_gpu_count_positive",
                violation_error_message="A multi-GPU instance has at least one GPU.",
            ),
            models.CheckConstraint(
                condition=Q(gpu_basis__in=FactBasis.values),
                name="instance_gpu_basis_valid",
                violation_error_message="Choose provider, platform or third-party.",
            ),
            models.CheckConstraint(
                condition=Q(vcpus__isnull=True) | Q(vcpus__gt=0),
                name="instance_vcpus_positive",
                violation_error_message="vCPUs must be more than zero, or empty when unknown.",
            ),
            models.CheckConstraint(
                condition=Q(ram_gib__isnull=True) | Q(ram_gib__gt=0),
                name="instance_ram_positive",
                violation_error_message="RAM must be more than zero, or empty when unknown.",
            ),
        ]
        indexes = [
            # The public table filters on visible, active rows and orders by GPU count.
            models.Index(
                fields=["gpu_count"],
                condition=Q(is_active=True, is_hidden=False),
                name="instance_listing_idx",
            ),
            # The default sort of the public table: visible rows by their default price.
            models.Index(
                F("best_price_gpu_hour_usd").asc(nulls_last=True),
                "id",
                condition=Q(is_active=True, is_hidden=False),
                name="instance_best_price_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider.name} {self.name}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding and kwargs.get("update_fields") is None and not args:
            kwargs["update_fields"] = [
                field.name
                for field in self._meta.concrete_fields
                if not field.primary_key and field.name not in self.DATABASE_KEPT
            ]
        elif kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = [
                name for name in kwargs["update_fields"] if name not in self.DATABASE_KEPT
            ]
        super().save(*args, **kwargs)


class GpuLink(Curated):
    """The instance's GPU-to-GPU link inside a node (or across the nodes of an NVL72 rack)."""

    FACT_FIELDS = LINK_FIELDS

    Technology = LinkTechnology

    Topology = LinkTopology

    instance = models.OneToOneField(
        InstanceType, on_delete=models.CASCADE, related_name="gpu_link", primary_key=True
    )
    technology = models.CharField(
        max_length=20, choices=Technology.choices, default=Technology.UNKNOWN
    )
    generation = models.PositiveSmallIntegerField(null=True, blank=True)
    topology = models.CharField(
        max_length=20,
        choices=Topology.choices,
        blank=True,
        help_text="Empty when technology is none.",
    )
    domain_size = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="GPUs in one NVLink domain; may exceed the node's GPUs (GB200 NVL72: 72).",
    )
    bandwidth_gbytes_per_s = models.PositiveIntegerField(
        null=True, blank=True, help_text="Per GPU, bidirectional (as vendors quote it), GB/s."
    )
    basis = models.JSONField(default=dict, blank=True, help_text=basis_map_help("link"))
    platform_rules = models.JSONField(
        default=dict,
        blank=True,
        help_text="Field name -> the platform rule (offerings.platform) a platform fact follows from.",
    )

    class Meta:
        verbose_name = "GPU link"
        verbose_name_plural = "GPU links"
        constraints = [
            http_url_check("gpulink"),
            models.CheckConstraint(
                condition=Q(technology__in=LinkTechnology.values),
                name="gpulink_technology_valid",
                violation_error_message="Choose none, nvlink, infinity-fabric or unknown.",
            ),
            models.CheckConstraint(
                condition=Q(topology="") | Q(topology__in=LinkTopology.values),
                name="gpulink_topology_valid",
                violation_error_message="Choose a listed topology.",
            ),
            # "None" is a verified absence: nothing else may be stated about the link.
            models.CheckConstraint(
                condition=~Q(technology="none")
                | Q(
                    generation__isnull=True,
                    topology="",
                    domain_size__isnull=True,
                    bandwidth_gbytes_per_s__isnull=True,
                ),
                name="gpulink_none_has_no_details",
                violation_error_message="A verified absence of NVLink cannot carry a generation, topology, domain or bandwidth.",
            ),
            models.CheckConstraint(
                condition=Q(technology="none") | ~Q(topology=""),
                name="gpulink_topology_set_unless_none",
                violation_error_message="Give the topology (or 'unknown') unless the technology is none.",
            ),
            models.CheckConstraint(
                condition=Q(domain_size__isnull=True) | Q(domain_size__gte=2),
                name="gpulink_domain_at_least_two",
                violation_error_message="An NVLink domain links at least two GPUs.",
            ),
            models.CheckConstraint(
                condition=Q(bandwidth_gbytes_per_s__isnull=True) | Q(bandwidth_gbytes_per_s__gt=0),
                name="gpulink_bandwidth_positive",
                violation_error_message="Bandwidth must be more than zero, or empty when unknown.",
            ),
            models.CheckConstraint(
                condition=Q(generation__isnull=True) | Q(generation__gte=1, generation__lte=6),
                name="gpulink_generation_range",
                violation_error_message="NVLink generations run from 1 to 6.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.instance}: {self.get_technology_display()}"

    def clean(self) -> None:
        super().clean()
        validate_basis_map(self.basis, self.FACT_FIELDS)


class Fabric(Curated):
    """The instance's inter-node network: what a multi-node job's collectives cross."""

    FACT_FIELDS = FABRIC_BASIS_FIELDS

    Technology = FabricTechnology

    Generation = FabricGeneration

    RDMA_TECHNOLOGIES = RDMA_FABRICS

    instance = models.OneToOneField(
        InstanceType, on_delete=models.CASCADE, related_name="fabric", primary_key=True
    )
    technology = models.CharField(
        max_length=20, choices=Technology.choices, default=Technology.UNKNOWN
    )
    generation = models.CharField(
        max_length=20,
        choices=Generation.choices,
        blank=True,
        default="",
        help_text="EFA v1-v4, or GPUDirect-TCPX or TCPXO; empty when no source states it or for "
        "another technology.",
    )
    port_speed_gbits_per_s = models.PositiveIntegerField(
        null=True, blank=True, help_text="Line rate of one back-end port (Gb/s)."
    )
    nics = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Back-end ports per node (front-end NICs excluded)."
    )
    bandwidth_gbits_per_s = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Sum of back-end line rates per node; empty for plain Ethernet (no back-end).",
    )
    rdma = models.BooleanField(null=True, blank=True)
    gpudirect_rdma = models.BooleanField(null=True, blank=True)
    rail_optimized = models.BooleanField(null=True, blank=True)
    multi_node = models.BooleanField(
        null=True,
        blank=True,
        help_text="Several nodes on one fabric can be booked self-serve (sales-only is not).",
    )
    max_nodes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Largest self-serve cluster in nodes."
    )
    sales_only = models.BooleanField(
        null=True, blank=True, help_text="Multi-node clusters only through sales."
    )
    cluster_source_url = models.URLField(
        max_length=500,
        blank=True,
        validators=[validate_http_url],
        help_text="Where multi-node availability is stated.",
    )
    # The instance's general network, apart from the back-end above (the API's top-level
    # `network_gbits_per_s`): stated on the same row so it carries a source, a date and a basis.
    network_gbits_per_s = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The instance's general network (VPC, storage, internet), Gb/s.",
    )
    network_shared = models.BooleanField(
        null=True,
        blank=True,
        help_text="The back-end and the general network run over the same network cards.",
    )
    basis = models.JSONField(default=dict, blank=True, help_text=basis_map_help("fabric"))

    class Meta:
        constraints = [
            http_url_check("fabric"),
            http_url_check("fabric", "cluster_source_url"),
            models.CheckConstraint(
                condition=Q(technology__in=FabricTechnology.values),
                name="fabric_technology_valid",
                violation_error_message="Choose a listed fabric technology.",
            ),
            # A generation belongs to one technology: efa-v1..v4 to EFA, tcpx/tcpxo to TCPX.
            models.CheckConstraint(
                condition=reduce(
                    operator.or_,
                    (
                        Q(technology=technology, generation__in=list(generations))
                        for technology, generations in FABRIC_GENERATIONS.items()
                    ),
                    Q(generation=""),
                ),
                name="fabric_generation_matches_technology",
                violation_error_message="An EFA generation (efa-v1 to efa-v4) needs technology "
                "EFA, and tcpx or tcpxo needs technology TCPX; leave it empty otherwise.",
            ),
            models.CheckConstraint(
                condition=Q(bandwidth_gbits_per_s__isnull=True) | Q(bandwidth_gbits_per_s__gt=0),
                name="fabric_bandwidth_positive",
                violation_error_message="Bandwidth must be more than zero, or empty when unknown.",
            ),
            models.CheckConstraint(
                condition=Q(port_speed_gbits_per_s__isnull=True) | Q(port_speed_gbits_per_s__gt=0),
                name="fabric_port_speed_positive",
                violation_error_message="Port speed must be more than zero, or empty when unknown.",
            ),
            models.CheckConstraint(
                condition=Q(nics__isnull=True) | Q(nics__gt=0),
                name="fabric_nics_positive",
                violation_error_message="The NIC count must be more than zero, or empty when unknown.",
            ),
            models.CheckConstraint(
                condition=Q(max_nodes__isnull=True) | Q(max_nodes__gte=1),
                name="fabric_max_nodes_positive",
                violation_error_message="The largest cluster is at least one node, or empty when unknown.",
            ),
            # TCPX and plain Ethernet are not RDMA, whatever marketing copy says.
            models.CheckConstraint(
                condition=~Q(technology__in=list(NON_RDMA_FABRICS))
                | (~Q(rdma=True) & ~Q(gpudirect_rdma=True)),
                name="fabric_non_rdma_has_no_rdma",
                violation_error_message="TCPX and plain Ethernet are not RDMA: RDMA and GPUDirect RDMA cannot be yes.",
            ),
            models.CheckConstraint(
                condition=~Q(technology__in=list(RDMA_FABRICS)) | ~Q(rdma=False),
                name="fabric_rdma_technology_is_rdma",
                violation_error_message="InfiniBand, RoCE, EFA and eRDMA are RDMA fabrics: RDMA cannot be no.",
            ),
            models.CheckConstraint(
                condition=Q(network_gbits_per_s__isnull=True) | Q(network_gbits_per_s__gt=0),
                name="fabric_network_positive",
                violation_error_message="The general network must be more than zero Gb/s, or empty when unknown.",
            ),
            # Plain Ethernet means the general network only: no back-end figures to state.
            models.CheckConstraint(
                condition=~Q(technology="ethernet")
                | Q(
                    bandwidth_gbits_per_s__isnull=True,
                    nics__isnull=True,
                    port_speed_gbits_per_s__isnull=True,
                ),
                name="fabric_ethernet_has_no_backend",
                violation_error_message="A type with plain Ethernet only has no back-end network: give its Gb/s as the general network.",
            ),
            models.CheckConstraint(
                condition=~Q(technology="ethernet") | ~Q(network_shared=True),
                name="fabric_ethernet_shares_nothing",
                violation_error_message="With plain Ethernet only there is no back-end network to share the general one with.",
            ),
            models.CheckConstraint(
                condition=~Q(multi_node=False) | Q(max_nodes__isnull=True) | Q(max_nodes=1),
                name="fabric_single_node_max_one",
                violation_error_message="Without multi-node booking the largest cluster is one node.",
            ),
        ]
        indexes = [
            # Filter page: `fabric=` and `fabric_gbps_min=`.
            models.Index(fields=["technology", "bandwidth_gbits_per_s"], name="fabric_tech_bw_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.instance}: {self.get_technology_display()}"

    def clean(self) -> None:
        super().clean()
        validate_basis_map(self.basis, self.FACT_FIELDS)

    @property
    def is_rdma_technology(self) -> bool:
        return self.technology in self.RDMA_TECHNOLOGIES

    @property
    def rdma_kind_unstated(self) -> bool:
        """A source says RDMA between nodes without naming its kind (InfiniBand or RoCE)."""
        return self.technology == FabricTechnology.UNKNOWN and bool(self.rdma)

    @property
    def technology_label(self) -> str:
        """The technology as the pages name it, saying RDMA where that much is known."""
        if self.rdma_kind_unstated:
            return _("RDMA (kind not stated)")
        if self.technology == FabricTechnology.TCPX and self.generation:
            # GPUDirect-TCPX or TCPXO, where a source says which.
            return _("%(generation)s (not RDMA)") % {"generation": self.generation_label}
        return self.get_technology_display()

    @property
    def has_generations(self) -> bool:
        """Whether the technology is one whose generations the catalog tells apart (EFA, TCPX)."""
        return self.technology in FABRIC_GENERATIONS

    @property
    def generation_label(self) -> str:
        """The stated generation as the pages name it ("EFA v2"); empty when none is stated."""
        return self.get_generation_display() if self.generation else ""


# -- how a type is bought, and how ready a provider's network is ---------------------------------


class PurchaseKind(models.TextChoices):
    ON_DEMAND = "on-demand", _("On-demand")
    SPOT = "spot", _("Spot / interruptible")
    # Reservations and commitment plans (AWS Savings Plans and the like), with their term.
    RESERVED = "reserved", _("Reserved or committed")
    CAPACITY_BLOCK = "capacity-block", _("Capacity Block")
    SALES_ONLY = "sales-only", _("Only through sales")


assert tuple(PurchaseKind.values) == PURCHASE_KINDS


class PurchaseMode(Curated):
    """One way an instance type can be bought, as a source states it (whether or not a price of
    that kind is stored). Numbers no source states are empty."""

    Kind = PurchaseKind

    instance = models.ForeignKey(
        InstanceType, on_delete=models.CASCADE, related_name="purchase_modes"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    term_months = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        default=0,
        help_text="Reserved term or commitment in months; 0 for other kinds; empty when a "
        "reserved mode's source names no term.",
    )
    min_hours = models.PositiveIntegerField(
        null=True, blank=True, help_text="Shortest booking in hours, where stated."
    )
    max_hours = models.PositiveIntegerField(
        null=True, blank=True, help_text="Longest booking in hours, where stated."
    )
    min_gpus = models.PositiveIntegerField(
        "minimum GPUs", null=True, blank=True, help_text="Smallest purchase in GPUs, where stated."
    )
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["instance", "kind", "term_months"]
        constraints = [
            http_url_check("purchasemode"),
            models.UniqueConstraint(
                fields=["instance", "kind", "term_months"],
                name="purchasemode_one_per_kind_and_term",
                nulls_distinct=False,
                violation_error_message="This type already has a purchase mode of that kind and term.",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=PurchaseKind.values),
                name="purchasemode_kind_valid",
                violation_error_message="Choose on-demand, spot, reserved, capacity-block or sales-only.",
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="reserved") & (Q(term_months__isnull=True) | Q(term_months__gt=0))
                )
                # IS NOT NULL: a CHECK whose condition is NULL passes.
                | (~Q(kind="reserved") & Q(term_months__isnull=False, term_months=0)),
                name="purchasemode_term_only_reserved",
                violation_error_message="Only a reserved mode has a term (in months, or empty when not stated); other kinds have 0.",
            ),
            models.CheckConstraint(
                condition=(Q(min_hours__isnull=True) | Q(min_hours__gt=0))
                & (Q(max_hours__isnull=True) | Q(max_hours__gt=0))
                & (
                    Q(min_hours__isnull=True)
                    | Q(max_hours__isnull=True)
                    | Q(max_hours__gte=F("min_hours"))
                ),
                name="purchasemode_hours_ordered",
                violation_error_message="Hours are more than zero, and the longest booking is no shorter than the shortest.",
            ),
            models.CheckConstraint(
                condition=Q(min_gpus__isnull=True) | Q(min_gpus__gt=0),
                name="purchasemode_min_gpus_positive",
                violation_error_message="The smallest purchase is at least one GPU, or empty when not stated.",
            ),
            models.CheckConstraint(
                condition=~Q(source_url="") & Q(verified_at__isnull=False),
                name="purchasemode_sourced",
                violation_error_message="A purchase mode needs the URL that states it and the day it was checked.",
            ),
        ]

    def __str__(self) -> str:
        term = f" {self.term_months} months" if self.term_months else ""
        return f"{self.get_kind_display()}{term}"


class ReadinessFact(models.TextChoices):
    FABRICS = "fabrics", _("Fabric kinds")
    MAX_SELF_SERVE_GPUS = "max_self_serve_gpus", _("Largest self-serve cluster (GPUs)")
    GPUDIRECT_RDMA = "gpudirect_rdma", _("GPUDirect RDMA out of the box")
    SHARP = "sharp", _("SHARP in-network reduction")
    TOPOLOGY_AWARE_SCHEDULING = "topology_aware_scheduling", _("Topology-aware scheduling")
    MANAGED_SLURM = "managed_slurm", _("Managed Slurm")
    MANAGED_KUBERNETES = "managed_kubernetes", _("Managed Kubernetes")
    NCCL_TESTS_PUBLISHED = "nccl_tests_published", _("NCCL/RCCL tests published")
    EGRESS_USD_PER_GB = "egress_usd_per_gb", _("Internet egress (USD per GB)")


assert tuple(ReadinessFact.values) == READINESS_FACTS

READINESS_FABRIC_KINDS = [
    value for value in FabricTechnology.values if value != FabricTechnology.UNKNOWN
]


class ProviderReadiness(Curated):
    """One network-readiness fact of a provider, with its basis, source and date.

    A fact with no row is unknown. The value sits in the column its fact's type needs (a yes/no
    in `flag`, a GPU count in `gpus`, a price in `usd_per_gb`, fabric kinds in `fabrics`) and the
    others stay empty, which the database checks.
    """

    Fact = ReadinessFact

    FLAGS = READINESS_FLAGS

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="readiness")
    fact = models.CharField(max_length=32, choices=Fact.choices)
    flag = models.BooleanField(
        null=True, blank=True, help_text="Yes/no facts (GPUDirect RDMA, SHARP, Slurm, ...)."
    )
    gpus = models.PositiveIntegerField(
        "GPUs", null=True, blank=True, help_text="Largest self-serve cluster: GPUs, as stated."
    )
    usd_per_gb = models.DecimalField(
        "USD per GB",
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Internet egress, first paid tier.",
    )
    fabrics = ArrayField(
        models.CharField(max_length=20, choices=FabricTechnology.choices),
        default=list,
        blank=True,
        help_text="Fabric kinds: " + ", ".join(READINESS_FABRIC_KINDS) + ".",
    )
    basis = models.CharField(max_length=12, choices=FactBasis.choices)
    notes = models.TextField(blank=True)

    class Meta:
        verbose_name = "network readiness fact"
        verbose_name_plural = "network readiness"
        ordering = ["provider", "fact"]
        constraints = [
            http_url_check("readiness"),
            models.UniqueConstraint(
                fields=["provider", "fact"],
                name="readiness_one_per_fact",
                violation_error_message="This provider already has this fact.",
            ),
            models.CheckConstraint(
                condition=Q(fact__in=ReadinessFact.values),
                name="readiness_fact_valid",
                violation_error_message="Choose one of the listed readiness facts.",
            ),
            models.CheckConstraint(
                condition=Q(basis__in=FactBasis.values),
                name="readiness_basis_valid",
                violation_error_message="Choose provider, platform or third-party.",
            ),
            models.CheckConstraint(
                condition=Q(
                    fact__in=list(READINESS_FLAGS),
                    flag__isnull=False,
                    gpus__isnull=True,
                    usd_per_gb__isnull=True,
                    fabrics=[],
                )
                | Q(
                    fact="max_self_serve_gpus",
                    flag__isnull=True,
                    gpus__isnull=False,
                    gpus__gt=0,
                    usd_per_gb__isnull=True,
                    fabrics=[],
                )
                | Q(
                    fact="egress_usd_per_gb",
                    flag__isnull=True,
                    gpus__isnull=True,
                    usd_per_gb__isnull=False,
                    usd_per_gb__gte=0,
                    fabrics=[],
                )
                | Q(
                    fact="fabrics",
                    flag__isnull=True,
                    gpus__isnull=True,
                    usd_per_gb__isnull=True,
                    fabrics__len__gt=0,
                ),
                name="readiness_value_fits_fact",
                violation_error_message="Give the value in its fact's field (yes/no, GPUs, USD per GB or fabric kinds) and leave the others empty.",
            ),
            models.CheckConstraint(
                condition=Q(fabrics__contained_by=READINESS_FABRIC_KINDS),
                name="readiness_fabrics_known",
                violation_error_message="Fabric kinds are infiniband, roce, efa, erdma, tcpx or ethernet.",
            ),
            models.CheckConstraint(
                condition=~Q(source_url="") & Q(verified_at__isnull=False),
                name="readiness_sourced",
                violation_error_message="A readiness fact needs the URL that states it and the day it was checked.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider_id}: {self.fact}"

    @property
    def value(self):
        """The fact's value from the column its type uses."""
        if self.fact in self.FLAGS:
            return self.flag
        return {
            ReadinessFact.FABRICS: list(self.fabrics),
            ReadinessFact.MAX_SELF_SERVE_GPUS: self.gpus,
            ReadinessFact.EGRESS_USD_PER_GB: self.usd_per_gb,
        }.get(self.fact)

    def clean(self) -> None:
        super().clean()
        expected = (
            "flag"
            if self.fact in self.FLAGS
            else {
                ReadinessFact.FABRICS: "fabrics",
                ReadinessFact.MAX_SELF_SERVE_GPUS: "gpus",
                ReadinessFact.EGRESS_USD_PER_GB: "usd_per_gb",
            }.get(self.fact)
        )
        if expected is None:
            return
        errors = {}
        for name in ("flag", "gpus", "usd_per_gb", "fabrics"):
            value = getattr(self, name)
            given = value not in (None, [], ())
            if name == expected and not given:
                errors[name] = "This fact's value goes here (leave the fact out when unknown)."
            elif name != expected and given:
                errors[name] = "Leave this empty: it is not this fact's field."
        if errors:
            raise ValidationError(errors)


# -- published collective benchmarks --------------------------------------------------------------


class Collective(models.TextChoices):
    # nccl-tests' own names (its binaries without `_perf`): the names the sources print.
    ALL_REDUCE = "all_reduce", "all_reduce"
    ALL_GATHER = "all_gather", "all_gather"
    REDUCE_SCATTER = "reduce_scatter", "reduce_scatter"
    ALLTOALL = "alltoall", "alltoall"
    BROADCAST = "broadcast", "broadcast"
    REDUCE = "reduce", "reduce"
    SENDRECV = "sendrecv", "sendrecv"


assert tuple(Collective.values) == COLLECTIVES


class CollectiveResult(Curated):
    """One published collective benchmark (nccl-tests or the like) run on an instance type: the
    bus bandwidth it reported at one message size and node count, with its source and basis.

    `load_catalog` loads the results the estimator is calibrated to
    (`offerings.estimator.calibration`); curators add more in the admin.
    """

    Collective = Collective
    BASES = (FactBasis.PROVIDER, FactBasis.THIRD_PARTY)

    instance = models.ForeignKey(
        InstanceType, on_delete=models.CASCADE, related_name="collective_results"
    )
    collective = models.CharField(max_length=20, choices=Collective.choices)
    nodes = models.PositiveIntegerField()
    gpus = models.PositiveIntegerField("GPUs", help_text="GPUs in the run, all nodes together.")
    message_bytes = models.BigIntegerField(help_text="Message size in bytes (1 GiB = 1073741824).")
    busbw_gbytes_per_s = models.DecimalField(
        "bus bandwidth (GB/s)",
        max_digits=10,
        decimal_places=3,
        help_text="Bus bandwidth as nccl-tests reports it (busbw), GB/s.",
    )
    basis = models.CharField(
        max_length=12,
        choices=[(b.value, b.label) for b in BASES],
        help_text="Provider: the provider's own publication; third party: anyone else's.",
    )
    notes = models.TextField(blank=True)

    class Meta:
        verbose_name = "published collective result"
        ordering = ["instance", "collective", "nodes", "gpus", "message_bytes", "source_url"]
        constraints = [
            http_url_check("collectiveresult"),
            models.UniqueConstraint(
                fields=["instance", "collective", "nodes", "gpus", "message_bytes", "source_url"],
                name="collectiveresult_one_per_run",
                violation_error_message="This type already has this result from this source.",
            ),
            models.CheckConstraint(
                condition=Q(collective__in=Collective.values),
                name="collectiveresult_collective_valid",
                violation_error_message="Choose one of nccl-tests' collectives (all_reduce, ...).",
            ),
            models.CheckConstraint(
                condition=Q(basis__in=[FactBasis.PROVIDER, FactBasis.THIRD_PARTY]),
                name="collectiveresult_basis_valid",
                violation_error_message="Choose provider or third-party.",
            ),
            models.CheckConstraint(
                condition=Q(nodes__gt=0) & Q(gpus__gte=F("nodes")),
                name="collectiveresult_gpus_cover_nodes",
                violation_error_message="A run has at least one node and one GPU per node.",
            ),
            models.CheckConstraint(
                condition=Q(message_bytes__gt=0),
                name="collectiveresult_message_positive",
                violation_error_message="The message size is more than zero bytes.",
            ),
            models.CheckConstraint(
                condition=Q(busbw_gbytes_per_s__gt=0),
                name="collectiveresult_busbw_positive",
                violation_error_message="The bus bandwidth is more than zero.",
            ),
            models.CheckConstraint(
                condition=~Q(source_url="") & Q(verified_at__isnull=False),
                name="collectiveresult_sourced",
                violation_error_message="A published result needs the URL that states it and the day it was checked.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.collective} {self.nodes} x {self.gpus // self.nodes} GPUs, {self.message_bytes} B"


# -- money ---------------------------------------------------------------------------------------


class ExchangeRate(models.Model):
    """A dated reference rate: how many USD one unit of `currency` buys."""

    currency = models.CharField(max_length=3)
    rate_date = models.DateField()
    usd_per_unit = models.DecimalField(max_digits=18, decimal_places=10)
    source_url = models.URLField(max_length=500, validators=[validate_http_url])

    class Meta:
        ordering = ["currency", "-rate_date"]
        constraints = [
            http_url_check("exchangerate"),
            models.UniqueConstraint(fields=["currency", "rate_date"], name="exchangerate_unique"),
            models.CheckConstraint(
                condition=Q(currency__regex=CURRENCY_CODE_RE),
                name="exchangerate_currency_iso",
                violation_error_message="Use a three-letter ISO currency code.",
            ),
            models.CheckConstraint(
                condition=Q(usd_per_unit__gt=0),
                name="exchangerate_rate_positive",
                violation_error_message="An exchange rate must be more than zero.",
            ),
        ]

    def __str__(self) -> str:
        return f"1 {self.currency} = {self.usd_per_unit} USD ({self.rate_date})"


def undated_last() -> models.Case:
    """An order term: 0 for a price dated at its source, 1 for one whose source shows no date,
    so a dated price comes first (a row's headline, `OfferQuerySet.headline_first`, and the
    planner's price for each way to buy)."""
    return models.Case(models.When(observed_at__isnull=True, then=1), default=0)


class OfferQuerySet(models.QuerySet):
    def current(self) -> OfferQuerySet:
        """Offers still seen at the provider (retired ones stay for history)."""
        return self.filter(is_active=True)

    def headline_first(self, any_kind: bool = False) -> OfferQuerySet:
        """Offers in the order a row's headline price is chosen: on-demand first (unless
        `any_kind`: a price kind was asked for), then one with a USD figure before one without
        (a price in a currency without a reference rate), then dated before undated (a price
        whose source shows no date never heads a row that has a dated one), then the cheapest
        per GPU-hour, then the lowest id. The database keeps the same order for the default
        price (`offerings_refresh_best_offers`, migration 0017); tests/test_best_offer.py holds
        the two equal."""
        preference = (
            models.Value(0)
            if any_kind
            else models.Case(models.When(kind=OfferKind.ON_DEMAND, then=0), default=1)
        )
        undated = undated_last()
        unpriced = models.Case(models.When(price_per_gpu_hour_usd__isnull=True, then=1), default=0)
        return self.annotate(
            headline_preference=preference,
            headline_unpriced=unpriced,
            headline_undated=undated,
        ).order_by(
            "headline_preference",
            "headline_unpriced",
            "headline_undated",
            F("price_per_gpu_hour_usd").asc(nulls_last=True),
            "pk",
        )

    def stale(self, now=None) -> OfferQuerySet:
        """Current offers whose price was observed longer ago than the stale threshold."""
        now = now or timezone.now()
        cutoff = now - timedelta(hours=settings.PRICE_STALE_AFTER_HOURS)
        # An undated price (its source shows no date) is not stale: its age is unknown, which
        # the pages say once for the table rather than as a warning on every row.
        return self.current().filter(observed_at__lt=cutoff)


class Offer(models.Model):
    """A current price: instance type x region x kind x term, in the currency charged."""

    Kind = OfferKind

    Origin = OfferOrigin

    instance = models.ForeignKey(InstanceType, on_delete=models.CASCADE, related_name="offers")
    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="offers")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    term_months = models.PositiveSmallIntegerField(
        default=0, help_text="Reserved term; 0 for on-demand and spot."
    )
    price_per_hour = models.DecimalField(
        max_digits=14, decimal_places=6, help_text="Per instance-hour, in `currency`."
    )
    currency = models.CharField(max_length=3)
    price_per_gpu_hour_usd = models.DecimalField(
        max_digits=14,
        decimal_places=6,
        null=True,
        blank=True,
        editable=False,
        help_text="Derived: price / GPUs, converted at the reference rate of `exchange_rate_date`.",
    )
    exchange_rate_date = models.DateField(null=True, blank=True, editable=False)
    available = models.BooleanField(
        null=True, blank=True, help_text="Capacity reported now; empty when not reported."
    )
    observed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When this price was read at its source; empty when the source shows no date.",
    )
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    missing_runs = models.PositiveSmallIntegerField(
        default=0, help_text="Consecutive good scraper runs that did not return this offer."
    )
    is_active = models.BooleanField(default=True)
    origin = models.CharField(max_length=10, choices=Origin.choices)
    # The price source that supplied a scraped offer when it is not the provider's own scraper
    # ("skypilot"); empty for the provider's own source. Only that source's runs retire it, and
    # the provider's own source replaces it.
    source = models.CharField(max_length=40, blank=True, default="")
    source_url = models.URLField(max_length=500, validators=[validate_http_url])
    # Who states the price at `source_url`: the provider, or a third party (a price source such
    # as SkyPilot's catalog, or a post that copies the provider's price). A price follows from no
    # platform rule.
    basis = models.CharField(
        max_length=12,
        choices=[
            (FactBasis.PROVIDER, FactBasis.PROVIDER.label),
            (FactBasis.THIRD_PARTY, FactBasis.THIRD_PARTY.label),
        ],
        default=FactBasis.PROVIDER,
        help_text="Who states this price at its source: the provider or a third party.",
    )
    locked_fields = ArrayField(models.CharField(max_length=64), default=list, blank=True)

    objects = OfferQuerySet.as_manager()

    class Meta:
        ordering = ["instance", "region", "kind", "term_months"]
        constraints = [
            http_url_check("offer"),
            models.UniqueConstraint(
                fields=["instance", "region", "kind", "term_months"], name="offer_natural_key"
            ),
            models.CheckConstraint(
                condition=Q(price_per_hour__gte=0),
                name="offer_price_nonneg",
                violation_error_message="A price cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(price_per_gpu_hour_usd__isnull=True) | Q(price_per_gpu_hour_usd__gte=0),
                name="offer_gpu_hour_price_nonneg",
                violation_error_message="A price cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(currency__regex=CURRENCY_CODE_RE),
                name="offer_currency_iso",
                violation_error_message="Use a three-letter ISO currency code such as USD or CNY.",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=OfferKind.values),
                name="offer_kind_valid",
                violation_error_message="Choose on-demand, spot, reserved or capacity-block.",
            ),
            models.CheckConstraint(
                condition=(Q(kind="reserved") & Q(term_months__gt=0))
                | (~Q(kind="reserved") & Q(term_months=0)),
                name="offer_term_only_reserved",
                violation_error_message="Reserved prices need a term in months; on-demand and spot prices have none.",
            ),
            models.CheckConstraint(
                condition=~Q(source_url=""),
                name="offer_has_source",
                violation_error_message="Every price needs the URL it was read from.",
            ),
            models.CheckConstraint(
                condition=Q(basis__in=[FactBasis.PROVIDER, FactBasis.THIRD_PARTY])
                & (Q(source="") | Q(basis=FactBasis.THIRD_PARTY)),
                name="offer_basis_valid",
                violation_error_message="A price is stated by the provider or by a third party; a price source's reading is a third party's.",
            ),
        ]
        indexes = [
            # The table's price filters: current offers by GPU-hour price.
            models.Index(
                fields=["price_per_gpu_hour_usd"],
                condition=Q(is_active=True),
                name="offer_current_price_idx",
            ),
            # Price kind and continent filters (the row's matching offers, the count and both
            # facets): an index-only scan of the current offers of those kinds in those regions,
            # instead of every current offer of the regions read from the table, once vacuum has
            # set the visibility map (the README's figures; no gain right after a bulk load).
            models.Index(
                fields=["kind", "region"],
                include=["instance", "price_per_gpu_hour_usd", "available"],
                condition=Q(is_active=True),
                name="offer_current_kind_region_idx",
            ),
        ]

    def __str__(self) -> str:
        term = f" {self.term_months}mo" if self.term_months else ""
        return f"{self.instance} {self.region.code} {self.kind}{term}"

    def clean(self) -> None:
        # The admin form leaves `source` out, so Django skips `offer_basis_valid` there: a price
        # source's reading stays a third party's until a curator types the provider's own price
        # (which makes it the curator's, `writer.save_curator_offer`).
        if self.source and self.basis == FactBasis.PROVIDER and self.pk is not None:
            stored = Offer.objects.filter(pk=self.pk).values("price_per_hour", "currency").first()
            if stored == {"price_per_hour": self.price_per_hour, "currency": self.currency}:
                raise ValidationError(
                    {
                        "basis": f"This price was read from a price source ({self.source}), so "
                        "a third party states it. Enter the provider's own price to make it the "
                        "provider's."
                    }
                )

    def is_stale(self, now=None) -> bool:
        return self.stale_at(self.observed_at, now)

    @staticmethod
    def stale_cutoff(now=None):
        """The moment before which a dated reading is stale at `now`."""
        return (now or timezone.now()) - timedelta(hours=settings.PRICE_STALE_AFTER_HOURS)

    @staticmethod
    def stale_at(observed_at, now=None, *, cutoff=None) -> bool:
        """Whether a price read at `observed_at` is stale at `now` (for rows read as values): a
        dated price older than PRICE_STALE_AFTER_HOURS. An undated one is "date unknown", not
        stale (nothing says how old it is). `cutoff`: `stale_cutoff(now)`, computed once for a
        page of prices."""
        if observed_at is None:
            return False
        return observed_at < (cutoff or Offer.stale_cutoff(now))


class PriceObservation(models.Model):
    """Append-only price history: one row each time an offer's price changes."""

    offer = models.ForeignKey(Offer, on_delete=models.CASCADE, related_name="history")
    price_per_hour = models.DecimalField(max_digits=14, decimal_places=6)
    currency = models.CharField(max_length=3)
    observed_at = models.DateTimeField(
        null=True, blank=True, help_text="Empty when the source shows no date."
    )
    run = models.ForeignKey(
        "ScrapeRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="observations"
    )

    class Meta:
        # Newest first; an undated observation (its source shows no date) sorts as the oldest.
        ordering = ["offer", F("observed_at").desc(nulls_last=True), "-pk"]
        get_latest_by = "observed_at"
        constraints = [
            models.UniqueConstraint(
                fields=["offer", "observed_at"], name="priceobservation_unique_time"
            ),
            models.CheckConstraint(
                condition=Q(price_per_hour__gte=0),
                name="priceobservation_price_nonneg",
                violation_error_message="A price cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(currency__regex=CURRENCY_CODE_RE),
                name="priceobservation_currency_iso",
                violation_error_message="Use a three-letter ISO currency code.",
            ),
        ]
        indexes = [
            # Price-change feed: newest changes first.
            models.Index(fields=["-observed_at"], name="priceobservation_recent_idx"),
        ]

    def __str__(self) -> str:
        when = f"{self.observed_at:%Y-%m-%d}" if self.observed_at else "date unknown"
        return f"{self.offer_id}: {self.price_per_hour} {self.currency} @ {when}"


# -- refresh runs and the review queue ----------------------------------------------------------


class PriceCheck(models.Model):
    """A price source's reading of an offer that another source supplies: never the price shown,
    kept so the lint can say where the two disagree."""

    offer = models.ForeignKey(Offer, on_delete=models.CASCADE, related_name="checks")
    source = models.CharField(max_length=40)
    price_per_hour = models.DecimalField(max_digits=14, decimal_places=6)
    currency = models.CharField(max_length=3)
    observed_at = models.DateTimeField(
        null=True, blank=True, help_text="Empty when the source shows no date."
    )
    source_url = models.URLField(max_length=500, validators=[validate_http_url])
    run = models.ForeignKey(
        "ScrapeRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="checks"
    )
    read_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["offer", "source"]
        constraints = [
            models.UniqueConstraint(fields=["offer", "source"], name="pricecheck_one_per_source"),
            models.CheckConstraint(
                condition=Q(price_per_hour__gt=0),
                name="pricecheck_price_positive",
                violation_error_message="A price must be positive.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.offer} per {self.source}: {self.price_per_hour} {self.currency}"


class ScrapeRun(models.Model):
    """One refresh of one provider: its outcome, counts and every error and rejected row."""

    Status = RunStatus

    # The Celery task that refreshes one provider, by name: the admin's "refresh now" and the
    # beat schedule send it without importing `providers` (which depends on this app).
    REFRESH_TASK = "providers.tasks.refresh_provider"

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="runs")
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    fetched = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    retired = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    error_messages = models.JSONField(default=list, blank=True)
    rejected_rows = models.JSONField(
        default=list, blank=True, help_text="Each rejected row with its reason."
    )
    warnings = models.JSONField(
        default=list, blank=True, help_text="Schema drift: unknown keys the scraper saw."
    )
    parts = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "Rows read from each file or endpoint of the run, by its name: the row-count guard "
            "compares each with the same part of the last good run."
        ),
    )
    replay_of = models.CharField(
        max_length=300,
        blank=True,
        default="",
        help_text=(
            "The recording a replay read (its manifest); empty for a live run. A replay is "
            "reported as one, never as a refresh."
        ),
    )
    trigger = models.CharField(max_length=20, default="command")
    task_id = models.CharField(
        max_length=64, blank=True, default="", help_text="The Celery task that ran it, if any."
    )
    retry_scheduled = models.BooleanField(
        default=False, help_text="A transient failure: the task tries again later."
    )

    class Meta:
        verbose_name = "refresh run"
        verbose_name_plural = "refresh runs"
        ordering = ["-started_at"]
        get_latest_by = "started_at"
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=RunStatus.values),
                name="scraperun_status_valid",
                violation_error_message="Unknown run status.",
            ),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True) | Q(finished_at__gte=models.F("started_at")),
                name="scraperun_finish_after_start",
                violation_error_message="A run cannot finish before it starts.",
            ),
        ]
        indexes = [
            # Row-count guard and provider pages: the provider's latest good run.
            models.Index(fields=["provider", "status", "-started_at"], name="scraperun_latest_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.provider.slug} {self.started_at:%Y-%m-%d %H:%M} {self.status}"


class SkuReview(models.Model):
    """A SKU a scraper found that maps to no curated instance type: waits for a curator."""

    Status = ReviewStatus

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="sku_reviews")
    sku = models.CharField(max_length=200, help_text="The provider's own name for it.")
    parsed = models.JSONField(default=dict, blank=True, help_text="What the scraper parsed.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.NEW)
    mapped_to = models.ForeignKey(
        InstanceType, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    times_seen = models.PositiveIntegerField(default=1)

    class Meta:
        verbose_name = "SKU review"
        verbose_name_plural = "SKU review queue"
        ordering = ["status", "-last_seen_at"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "sku"], name="skureview_unique_sku"),
            models.CheckConstraint(
                condition=~Q(status="mapped") | Q(mapped_to__isnull=False),
                name="skureview_mapped_has_target",
                violation_error_message="A mapped SKU needs the instance type it maps to.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider.slug}: {self.sku}"


class CorrectionStatus(models.TextChoices):
    NEW = "new", "New"
    ACCEPTED = "accepted", "Accepted (catalog corrected)"
    REJECTED = "rejected", "Rejected"


class CorrectionTopic(models.TextChoices):
    SPECS = "specs", _("GPUs, vCPUs, memory")
    NVLINK = "nvlink", _("GPU-to-GPU link (NVLink)")
    FABRIC = "fabric", _("Inter-node fabric")
    MULTI_NODE = "multi-node", _("Multi-node availability")
    PRICE = "price", _("Prices")
    OTHER = "other", _("Something else")


class CorrectionReport(models.Model):
    """A reader's report that a listed fact is wrong, waiting in the curators' review queue."""

    Status = CorrectionStatus
    Topic = CorrectionTopic

    instance = models.ForeignKey(
        InstanceType, on_delete=models.CASCADE, related_name="correction_reports"
    )
    topic = models.CharField(max_length=12, choices=CorrectionTopic.choices)
    message = models.TextField(max_length=2000, help_text="What is wrong, in the reader's words.")
    source_url = models.URLField(
        max_length=500,
        validators=[validate_http_url],
        help_text="Where the right figure is stated.",
    )
    status = models.CharField(
        max_length=10, choices=CorrectionStatus.choices, default=CorrectionStatus.NEW
    )
    created_at = models.DateTimeField(default=timezone.now)
    curator_note = models.TextField(blank=True)

    class Meta:
        ordering = ["status", "-created_at"]
        constraints = [
            http_url_check("correction"),
            models.CheckConstraint(
                condition=Q(topic__in=CorrectionTopic.values),
                name="correction_topic_valid",
                violation_error_message="Choose one of the listed topics.",
            ),
            models.CheckConstraint(
                condition=Q(status__in=CorrectionStatus.values),
                name="correction_status_valid",
                violation_error_message="Unknown status.",
            ),
            models.CheckConstraint(
                condition=~Q(message=""),
                name="correction_has_message",
                violation_error_message="Say what is wrong.",
            ),
        ]
        indexes = [
            # The review queue: new reports first, newest first.
            models.Index(fields=["status", "-created_at"], name="correction_queue_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.instance}: {self.get_topic_display()} ({self.status})"


# -- refresh health and curator alerts ------------------------------------------------------------


class RefreshState(models.TextChoices):
    OK = "ok", "Fresh"
    PENDING = "pending", "Waiting for its first good run"
    FAILING = "failing", "Failing (last run failed or was rejected)"
    STALE = "stale", "Stale (no good run within its threshold)"
    SKIPPED = "skipped", "Not configured (skipped, never refreshed)"


class RefreshHealth(models.Model):
    """How a scheduled provider's refreshes are doing, as the last check judged them.

    Written by the freshness check after every scheduled refresh and on its own schedule;
    `alerted_key` remembers the problem last emailed so the same one is never emailed twice.
    """

    State = RefreshState
    NEEDS_ATTENTION = (RefreshState.FAILING, RefreshState.STALE)

    provider = models.OneToOneField(
        Provider, on_delete=models.CASCADE, primary_key=True, related_name="refresh_health"
    )
    state = models.CharField(max_length=10, choices=RefreshState.choices)
    detail = models.TextField(blank=True, help_text="Why, in plain text.")
    last_run = models.ForeignKey(
        ScrapeRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    last_good_at = models.DateTimeField(null=True, blank=True)
    stale_after = models.DurationField(help_text="The age at which the last good run is stale.")
    checked_at = models.DateTimeField()
    tracked_since = models.DateTimeField(
        default=timezone.now, help_text="When the provider was first checked."
    )
    alerted_key = models.CharField(
        max_length=100, blank=True, help_text="The problem last emailed to the curators."
    )
    alerted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "refresh health"
        verbose_name_plural = "refresh health"
        constraints = [
            models.CheckConstraint(
                condition=Q(state__in=RefreshState.values),
                name="refreshhealth_state_valid",
                violation_error_message="Unknown refresh state.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider_id}: {self.state}"

    @property
    def needs_attention(self) -> bool:
        return self.state in self.NEEDS_ATTENTION


class CatalogVersion(models.Model):
    """One row whose counter moves on every write to a table the public pages show.

    PostgreSQL statement triggers (migration 0005) bump it inside the writing transaction, so
    ORM saves, `QuerySet.update()`, admin bulk actions and the scrapers' COPY-and-merge all count.
    The filter page and the API derive their ETag and cache key from it.
    """

    counter = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(id=1),
                name="catalogversion_single_row",
                violation_error_message="There is exactly one catalog version row.",
            ),
        ]

    def __str__(self) -> str:
        return f"catalog version {self.counter}"
