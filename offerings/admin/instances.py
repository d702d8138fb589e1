"""Instance types with their GPU links, fabrics and offers, and the bulk curation actions."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import model_ngettext
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest

from offerings import writer
from offerings.admin.base import CuratedForm, LockingAdminMixin, titled
from offerings.admin.prices import OfferInline
from offerings.models import (
    CollectiveResult,
    Fabric,
    GpuLink,
    InstanceType,
    Offer,
    PurchaseMode,
)


class PriceFreshnessFilter(admin.SimpleListFilter):
    title = "price freshness"
    parameter_name = "prices"

    def lookups(self, request, model_admin):
        return [
            ("stale", "Has stale prices"),
            ("fresh", "All prices fresh"),
            ("none", "No current prices"),
        ]

    def queryset(self, request, queryset):
        current = Offer.objects.current().filter(instance=OuterRef("pk"))
        stale = Offer.objects.stale().filter(instance=OuterRef("pk"))
        match self.value():
            case "stale":
                return queryset.filter(Exists(stale))
            case "fresh":
                return queryset.filter(Exists(current), ~Exists(stale))
            case "none":
                return queryset.filter(~Exists(current))
        return queryset


class GpuLinkInline(admin.StackedInline):
    model = GpuLink
    form = CuratedForm
    can_delete = False
    readonly_fields = ["fixture_digest", "platform_rules"]
    verbose_name = "GPU-to-GPU link (NVLink / Infinity Fabric)"
    verbose_name_plural = verbose_name


class FabricInline(admin.StackedInline):
    model = Fabric
    form = CuratedForm
    # "No fabric" is stated as ethernet or unknown, never by deleting the row.
    can_delete = False
    readonly_fields = ["fixture_digest"]
    verbose_name = "inter-node fabric"
    verbose_name_plural = verbose_name


class PurchaseModeInline(admin.StackedInline):
    """How the type can be bought, each way with the source that states it."""

    model = PurchaseMode
    form = CuratedForm
    extra = 0
    fields = [
        ("kind", "term_months"),
        ("min_hours", "max_hours", "min_gpus"),
        ("source_url", "verified_at"),
        "notes",
        "locked_fields",
        "fixture_digest",
    ]
    readonly_fields = ["fixture_digest"]
    verbose_name = "purchase mode"
    verbose_name_plural = "purchase modes (each from a source; a stored price of a kind counts too)"


class CollectiveResultInline(admin.StackedInline):
    """Published collective benchmarks run on the type (nccl-tests or the like), each sourced."""

    model = CollectiveResult
    form = CuratedForm
    extra = 0
    fields = [
        ("collective", "nodes", "gpus"),
        ("message_bytes", "busbw_gbytes_per_s"),
        ("source_url", "verified_at", "basis"),
        "notes",
        "locked_fields",
        "fixture_digest",
    ]
    readonly_fields = ["fixture_digest"]
    verbose_name = "published collective result"
    verbose_name_plural = "published collective results (bus bandwidth as the source reports it)"


@admin.register(InstanceType)
class InstanceTypeAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "provider",
        "gpu",
        "gpu_count",
        "nvlink_summary",
        "fabric_summary",
        "is_verified",
        "is_hidden",
        "is_active",
        "verified_at",
        "has_stale_prices",
    ]
    list_display_links = ["name"]
    list_filter = [
        "provider",
        "gpu",
        ("gpu_link__technology", titled("GPU link technology")),
        ("gpu_link__topology", titled("GPU link topology")),
        ("fabric__technology", titled("fabric technology")),
        "is_verified",
        "is_hidden",
        "is_active",
        PriceFreshnessFilter,
    ]
    search_fields = ["name", "slug", "provider__name", "provider__slug", "gpu__name", "gpu__slug"]
    list_select_related = ["provider", "gpu", "gpu_link", "fabric"]
    autocomplete_fields = ["provider", "gpu"]
    ordering = ["provider__slug", "slug"]
    list_per_page = 50
    readonly_fields = ["last_seen_at", "created_at", "updated_at", "fixture_digest"]
    fieldsets = [
        (None, {"fields": ["provider", "name", "slug", "gpu", "gpu_count"]}),
        (
            "Node",
            {
                "fields": [
                    "vcpus",
                    "ram_gib",
                    "local_nvme_gb",
                    "billing_granularity",
                    "minimum_term_hours",
                ]
            },
        ),
        ("Notes", {"fields": ["notes", "setup_notes"]}),
        (
            "Curation",
            {
                "fields": [
                    "is_verified",
                    "is_hidden",
                    "is_active",
                    "source_url",
                    "verified_at",
                    "locked_fields",
                ]
            },
        ),
        (
            "Bookkeeping",
            {
                "classes": ["collapse"],
                "fields": ["last_seen_at", "created_at", "updated_at", "fixture_digest"],
            },
        ),
    ]
    inlines = [
        GpuLinkInline,
        FabricInline,
        PurchaseModeInline,
        CollectiveResultInline,
        OfferInline,
    ]
    actions = ["mark_verified", "hide", "unhide", "lock_all_fields", "unlock_all_fields"]

    def get_queryset(self, request):
        # The changelist skips list_select_related once any select_related is set, so name them
        # all here: the autocomplete (whose labels show the provider) needs it too.
        stale = Offer.objects.stale().filter(instance=OuterRef("pk"))
        return (
            super()
            .get_queryset(request)
            .select_related(*self.list_select_related)
            .annotate(has_stale_prices=Exists(stale))
        )

    def save_formset(self, request, form, formset, change) -> None:
        if formset.model is not Offer:
            super().save_formset(request, form, formset, change)
            return
        # save(commit=False) fills new_objects/changed_objects for the change message.
        formset.save(commit=False)
        for offer in formset.new_objects:
            writer.save_curator_offer(offer, [], is_new=True)
        for offer, changed in formset.changed_objects:
            writer.save_curator_offer(offer, changed, is_new=False)
        formset.save_m2m()

    @admin.display(description="NVLink")
    def nvlink_summary(self, obj: InstanceType) -> str:
        link = getattr(obj, "gpu_link", None)
        if link is None or link.technology == GpuLink.Technology.UNKNOWN:
            return "unknown"
        if link.technology == GpuLink.Technology.NONE:
            return "none (PCIe only)"
        name = "NVLink" if link.technology == GpuLink.Technology.NVLINK else "Infinity Fabric"
        parts = [f"{name} {link.generation}" if link.generation else name]
        if link.topology:
            parts.append(link.topology)
        if link.domain_size:
            parts.append(f"{link.domain_size} GPUs")
        if link.bandwidth_gbytes_per_s:
            parts.append(f"{link.bandwidth_gbytes_per_s:,} GB/s")
        return " · ".join(parts)

    @admin.display(description="fabric")
    def fabric_summary(self, obj: InstanceType) -> str:
        fabric = getattr(obj, "fabric", None)
        if fabric is None:
            return "unknown"
        parts = [fabric.technology]
        if fabric.bandwidth_gbits_per_s:
            rails = (
                f" ({fabric.nics} x {fabric.port_speed_gbits_per_s})"
                if fabric.nics and fabric.port_speed_gbits_per_s
                else ""
            )
            parts.append(f"{fabric.bandwidth_gbits_per_s:,} Gb/s{rails}")
        if fabric.gpudirect_rdma:
            parts.append("GPUDirect RDMA")
        elif fabric.rdma:
            parts.append("RDMA")
        if fabric.multi_node:
            parts.append("multi-node")
        return " · ".join(parts)

    @admin.display(boolean=True, description="stale", ordering="has_stale_prices")
    def has_stale_prices(self, obj: InstanceType) -> bool:
        return obj.has_stale_prices

    def _done(self, request: HttpRequest, count: int, what: str) -> None:
        self.message_user(
            request,
            f"{what} {count} {model_ngettext(self.opts, count)}.",
            messages.SUCCESS,
        )

    @admin.action(description="Mark selected instance types verified today")
    def mark_verified(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._done(request, writer.mark_verified(queryset), "Marked verified:")

    @admin.action(description="Hide selected instance types from the public pages")
    def hide(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._done(request, writer.set_hidden(queryset, True), "Hid")

    @admin.action(description="Unhide selected instance types")
    def unhide(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._done(request, writer.set_hidden(queryset, False), "Unhid")

    @admin.action(description="Lock all curated fields (instance, GPU link, fabric)")
    def lock_all_fields(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = writer.lock_all_fields(queryset)
        self._done(request, count, "Locked every curated field of")

    @admin.action(description="Unlock all fields (instance, GPU link, fabric)")
    def unlock_all_fields(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = writer.unlock_all_fields(queryset)
        self._done(request, count, "Unlocked every field of")


@admin.register(GpuLink)
class GpuLinkAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "instance",
        "technology",
        "generation",
        "topology",
        "domain_size",
        "bandwidth_gbytes_per_s",
        "basis",
        "verified_at",
    ]
    list_filter = ["technology", "topology", "generation", "instance__provider"]
    search_fields = ["instance__name", "instance__slug", "instance__provider__slug"]
    list_select_related = ["instance__provider"]
    autocomplete_fields = ["instance"]
    ordering = ["instance__provider__slug", "instance__slug"]
    readonly_fields = ["fixture_digest", "platform_rules"]


@admin.register(Fabric)
class FabricAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "instance",
        "technology",
        "generation",
        "bandwidth_gbits_per_s",
        "nics",
        "port_speed_gbits_per_s",
        "rdma",
        "gpudirect_rdma",
        "multi_node",
        "max_nodes",
        "basis",
        "verified_at",
    ]
    list_filter = [
        "technology",
        "generation",
        "rdma",
        "gpudirect_rdma",
        "multi_node",
        "sales_only",
        "instance__provider",
    ]
    search_fields = ["instance__name", "instance__slug", "instance__provider__slug"]
    list_select_related = ["instance__provider"]
    autocomplete_fields = ["instance"]
    ordering = ["instance__provider__slug", "instance__slug"]
    readonly_fields = ["fixture_digest"]


@admin.register(PurchaseMode)
class PurchaseModeAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "instance",
        "kind",
        "term_months",
        "min_hours",
        "max_hours",
        "min_gpus",
        "verified_at",
    ]
    list_filter = ["kind", "instance__provider"]
    search_fields = ["instance__name", "instance__slug", "instance__provider__slug"]
    list_select_related = ["instance__provider"]
    autocomplete_fields = ["instance"]
    ordering = ["instance__provider__slug", "instance__slug", "kind", "term_months"]
    readonly_fields = ["fixture_digest"]


@admin.register(CollectiveResult)
class CollectiveResultAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "instance",
        "collective",
        "nodes",
        "gpus",
        "message_bytes",
        "busbw_gbytes_per_s",
        "basis",
        "verified_at",
    ]
    list_filter = ["collective", "basis", "nodes", "instance__provider"]
    search_fields = ["instance__name", "instance__slug", "instance__provider__slug", "source_url"]
    list_select_related = ["instance__provider"]
    autocomplete_fields = ["instance"]
    ordering = [
        "instance__provider__slug",
        "instance__slug",
        "collective",
        "nodes",
        "message_bytes",
    ]
    readonly_fields = ["fixture_digest"]
