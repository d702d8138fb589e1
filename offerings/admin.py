"""The curators' admin: keep listings true, record sources, review new SKUs, watch refresh runs.

Curated rows (Provider, GpuModel, InstanceType, GpuLink, Fabric) lock every field a curator edits,
so `load_catalog` and the scrapers never overwrite a hand correction; `locked_fields` is shown as
ticks over the model's own field names so a curator can unlock one. Scraper-owned values (derived
prices, last-seen bookkeeping, refresh runs, price history) are read-only here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import Decimal

from celery import current_app
from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets, model_ngettext
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from offerings.models import (
    CorrectionReport,
    ExchangeRate,
    Fabric,
    GpuLink,
    GpuModel,
    InstanceType,
    Offer,
    PriceObservation,
    Provider,
    RefreshHealth,
    Region,
    ScrapeRun,
    SkuReview,
)
from offerings.services import RateTable, UnknownCurrency, gpu_hour_usd

admin.site.site_header = "gpucatalog curation"
admin.site.site_title = "gpucatalog admin"
admin.site.index_title = "Catalog curation"

# -- locking --------------------------------------------------------------------------------------

# Curation state and bookkeeping, never "a fact a scraper could overwrite".
NOT_LOCKABLE = frozenset(
    {
        "locked_fields",
        "fixture_digest",
        "is_verified",
        "is_hidden",
        "last_seen_at",
        "first_seen_at",
        "created_at",
        "updated_at",
    }
)

# Offers are scraper-owned; only these values make sense to pin by hand.
OFFER_LOCKABLE = ("price_per_hour", "currency", "available", "source_url")


def lockable_fields(model: type[models.Model]) -> list[str]:
    """Names of the model's concrete, editable fields that `locked_fields` may hold."""
    if model is Offer:
        return list(OFFER_LOCKABLE)
    return [
        field.name
        for field in model._meta.concrete_fields
        if field.editable and not field.primary_key and field.name not in NOT_LOCKABLE
    ]


def lockable_choices(model: type[models.Model]) -> list[tuple[str, str]]:
    return [
        (name, f"{model._meta.get_field(name).verbose_name} ({name})")
        for name in lockable_fields(model)
    ]


def merge_locks(current: Iterable[str], added: Iterable[str], model: type[models.Model]) -> list:
    """Union of two lock lists, in the model's field order (unknown leftovers last)."""
    wanted = set(current) | set(added)
    order = lockable_fields(model)
    return [name for name in order if name in wanted] + sorted(wanted - set(order))


def lock_changed_fields(form: forms.ModelForm) -> None:
    """Add the fields the curator changed in `form` to its instance's `locked_fields`."""
    instance = form.instance
    changed = set(form.changed_data) & set(lockable_fields(type(instance)))
    if changed:
        instance.locked_fields = merge_locks(instance.locked_fields, changed, type(instance))


class CuratedForm(forms.ModelForm):
    """A model form whose `locked_fields` is a choice of the model's own field names."""

    locked_fields = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Ticked fields are never overwritten by load_catalog or the scrapers. "
        "Fields you edit here are ticked automatically when you save; untick to unlock.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if "locked_fields" in self.fields:
            self.fields["locked_fields"].choices = lockable_choices(self._meta.model)


class LockingAdminMixin:
    """Lock what a curator edits, on the page's own object and on any curated inline."""

    form = CuratedForm

    def save_model(self, request, obj, form, change) -> None:
        lock_changed_fields(form)
        super().save_model(request, obj, form, change)

    def save_formset(self, request, form, formset, change) -> None:
        if issubclass(formset.form, CuratedForm):
            for inline_form in formset.forms:
                if inline_form.has_changed() and not formset._should_delete_form(inline_form):
                    lock_changed_fields(inline_form)
        super().save_formset(request, form, formset, change)


# -- filters --------------------------------------------------------------------------------------


def titled(title: str) -> type[admin.FieldListFilter]:
    """A field list filter with its own title (two `technology` filters must be told apart)."""

    class TitledFilter(admin.FieldListFilter):
        def __new__(cls, *args, **kwargs):
            list_filter = admin.FieldListFilter.create(*args, **kwargs)
            list_filter.title = title
            return list_filter

    return TitledFilter


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


def pretty_json(value) -> str:
    """Scraped strings are hostile: always escaped, never marked safe."""
    if not value:
        return "—"
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


# -- curator-entered offers -----------------------------------------------------------------------

SIX_PLACES = Decimal("0.000001")


def derive_usd_per_gpu_hour(offer: Offer) -> None:
    """Set the derived USD price per GPU-hour; unknown (empty) without a reference rate."""
    try:
        per_gpu, rate = gpu_hour_usd(
            offer.price_per_hour, offer.currency, offer.instance.gpu_count, RateTable()
        )
    except UnknownCurrency:
        offer.price_per_gpu_hour_usd = offer.exchange_rate_date = None
        return
    offer.price_per_gpu_hour_usd = per_gpu
    offer.exchange_rate_date = rate.rate_date if rate else None


def save_curator_offer(offer: Offer, changed: Iterable[str], is_new: bool) -> None:
    """Save a price a curator typed in: stamp it, derive USD, append history if it changed."""
    now = timezone.now()
    price_changed = is_new or bool({"price_per_hour", "currency"} & set(changed))
    if is_new:
        offer.origin = offer.origin or Offer.Origin.CURATOR
        offer.first_seen_at = offer.last_seen_at = now
    if price_changed:
        offer.observed_at = now
        derive_usd_per_gpu_hour(offer)
    with transaction.atomic():
        offer.save()
        if price_changed:
            PriceObservation.objects.create(
                offer=offer,
                price_per_hour=offer.price_per_hour,
                currency=offer.currency,
                observed_at=now,
            )


# -- providers, GPUs, regions, rates --------------------------------------------------------------


# The task lives in `providers`, which `offerings` never imports: it is sent by name.
REFRESH_TASK = "providers.tasks.refresh_provider"


def queue_refresh(request: HttpRequest, slugs: list[str]) -> None:
    """Send one refresh task per provider after the transaction commits; report in messages."""
    if not settings.CELERY_BROKER_URL:
        messages.error(
            request,
            "No Celery broker is configured (CELERY_BROKER_URL is unset), so nothing was "
            f"queued. Run `manage.py refresh_prices --provider {' --provider '.join(slugs)}` "
            "instead.",
        )
        return

    def send() -> None:
        try:
            for slug in slugs:
                current_app.send_task(REFRESH_TASK, args=[slug], kwargs={"trigger": "admin"})
        except Exception as exc:  # the broker is down or refuses: say so, never a 500
            messages.error(request, f"Could not reach the Celery broker: {exc}. Nothing queued.")
        else:
            messages.success(request, f"Refresh queued for {', '.join(slugs)}.")

    transaction.on_commit(send)


class RefreshAttentionFilter(admin.SimpleListFilter):
    title = "refresh"
    parameter_name = "refresh"

    def lookups(self, request, model_admin):
        return [
            ("attention", "Needs attention"),
            ("ok", "Fresh"),
            ("unscheduled", "Not checked (no scheduled refresh)"),
        ]

    def queryset(self, request, queryset):
        match self.value():
            case "attention":
                return queryset.filter(refresh_health__state__in=RefreshHealth.NEEDS_ATTENTION)
            case "ok":
                return queryset.filter(refresh_health__state=RefreshHealth.State.OK)
            case "unscheduled":
                return queryset.filter(refresh_health__isnull=True)
        return queryset


@admin.register(Provider)
class ProviderAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "kind",
        "home_currency",
        "instance_count",
        "refresh_status",
        "verified_at",
    ]
    list_filter = [RefreshAttentionFilter, "kind", "home_currency"]
    list_select_related = ["refresh_health"]
    search_fields = ["name", "slug"]
    ordering = ["name"]
    readonly_fields = ["fixture_digest", "refresh_status"]
    actions = ["refresh_now"]
    change_form_template = "admin/offerings/provider/change_form.html"

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(instance_count=Count("instance_types"))

    @admin.display(description="instance types", ordering="instance_count")
    def instance_count(self, obj: Provider) -> int:
        return obj.instance_count

    @admin.display(description="refresh", ordering="refresh_health__state")
    def refresh_status(self, obj: Provider) -> str:
        health = getattr(obj, "refresh_health", None)
        if health is None:
            return "—"
        label = health.get_state_display()
        if health.needs_attention:
            label = f"⚠ {label}"
        # Scraped error text sits in the detail: escaped by format_html, shown as a tooltip.
        return format_html('<span title="{}">{}</span>', health.detail, label)

    @admin.action(description="Refresh prices now", permissions=["change"])
    def refresh_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        queue_refresh(request, sorted(queryset.values_list("slug", flat=True)))

    def get_urls(self):
        view = self.admin_site.admin_view(require_POST(self.refresh_view))
        view.model_admin = self  # as ModelAdmin's own views carry it
        return [
            path("<path:object_id>/refresh/", view, name="offerings_provider_refresh"),
            *super().get_urls(),
        ]

    def refresh_view(self, request: HttpRequest, object_id: str) -> HttpResponseRedirect:
        provider = get_object_or_404(Provider, pk=object_id)
        if not self.has_change_permission(request, provider):
            raise PermissionDenied
        queue_refresh(request, [provider.slug])
        return HttpResponseRedirect(reverse("admin:offerings_provider_change", args=[provider.pk]))


@admin.register(Region)
class RegionAdmin(admin.ModelAdmin):
    list_display = ["code", "provider", "name", "geo"]
    list_filter = ["provider", "geo"]
    search_fields = ["code", "name", "provider__slug", "provider__name"]
    list_select_related = ["provider"]
    autocomplete_fields = ["provider"]
    ordering = ["provider__slug", "code"]


@admin.register(GpuModel)
class GpuModelAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "vendor",
        "form_factor",
        "memory_gib",
        "bf16_dense_tflops",
        "nvlink_generation",
        "verified_at",
    ]
    list_filter = ["vendor", "form_factor", "nvlink_generation", "architecture"]
    search_fields = ["slug", "name", "architecture"]
    ordering = ["vendor", "slug"]
    readonly_fields = ["fixture_digest"]


@admin.register(ExchangeRate)
class ExchangeRateAdmin(admin.ModelAdmin):
    list_display = ["currency", "rate_date", "usd_per_unit", "source_url"]
    list_filter = ["currency"]
    search_fields = ["currency"]
    date_hierarchy = "rate_date"
    ordering = ["currency", "-rate_date"]


# -- instance types and their interconnects -------------------------------------------------------


class GpuLinkInline(admin.StackedInline):
    model = GpuLink
    form = CuratedForm
    can_delete = False
    readonly_fields = ["fixture_digest"]
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


SCRAPER_OWNED_OFFER_FIELDS = [
    "price_per_gpu_hour_usd",
    "exchange_rate_date",
    "observed_at",
    "first_seen_at",
    "last_seen_at",
    "missing_runs",
    "origin",
    "is_active",
]


class OfferInline(admin.TabularInline):
    model = Offer
    fields = [
        "region",
        "kind",
        "term_months",
        "price_per_hour",
        "currency",
        "available",
        "source_url",
        *SCRAPER_OWNED_OFFER_FIELDS,
    ]
    readonly_fields = SCRAPER_OWNED_OFFER_FIELDS
    autocomplete_fields = ["region"]
    # Offers are retired by the scrapers, never deleted; their history stays.
    can_delete = False
    extra = 0
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("region__provider")


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
    inlines = [GpuLinkInline, FabricInline, OfferInline]
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
            save_curator_offer(offer, [], is_new=True)
        for offer, changed in formset.changed_objects:
            save_curator_offer(offer, changed, is_new=False)
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
        count = queryset.update(is_verified=True, verified_at=timezone.localdate())
        self._done(request, count, "Marked verified:")

    @admin.action(description="Hide selected instance types from the public pages")
    def hide(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._done(request, queryset.update(is_hidden=True), "Hid")

    @admin.action(description="Unhide selected instance types")
    def unhide(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._done(request, queryset.update(is_hidden=False), "Unhid")

    @admin.action(description="Lock all curated fields (instance, GPU link, fabric)")
    def lock_all_fields(self, request: HttpRequest, queryset: QuerySet) -> None:
        instance_ids = list(queryset.values_list("pk", flat=True))
        for model, rows in [
            (InstanceType, InstanceType.objects.filter(pk__in=instance_ids)),
            (GpuLink, GpuLink.objects.filter(instance__in=instance_ids)),
            (Fabric, Fabric.objects.filter(instance__in=instance_ids)),
        ]:
            every_field = lockable_fields(model)
            changed = []
            for row in rows.only("pk", "locked_fields"):
                row.locked_fields = merge_locks(row.locked_fields, every_field, model)
                changed.append(row)
            model.objects.bulk_update(changed, ["locked_fields"])
        self._done(request, len(instance_ids), "Locked every curated field of")

    @admin.action(description="Unlock all fields (instance, GPU link, fabric)")
    def unlock_all_fields(self, request: HttpRequest, queryset: QuerySet) -> None:
        instance_ids = list(queryset.values_list("pk", flat=True))
        GpuLink.objects.filter(instance__in=instance_ids).update(locked_fields=[])
        Fabric.objects.filter(instance__in=instance_ids).update(locked_fields=[])
        count = InstanceType.objects.filter(pk__in=instance_ids).update(locked_fields=[])
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
        "verified_at",
    ]
    list_filter = ["technology", "topology", "generation", "instance__provider"]
    search_fields = ["instance__name", "instance__slug", "instance__provider__slug"]
    list_select_related = ["instance__provider"]
    autocomplete_fields = ["instance"]
    ordering = ["instance__provider__slug", "instance__slug"]
    readonly_fields = ["fixture_digest"]


@admin.register(Fabric)
class FabricAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "instance",
        "technology",
        "bandwidth_gbits_per_s",
        "nics",
        "port_speed_gbits_per_s",
        "rdma",
        "gpudirect_rdma",
        "multi_node",
        "max_nodes",
        "verified_at",
    ]
    list_filter = [
        "technology",
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


# -- prices and their history ---------------------------------------------------------------------


class ReadOnlyAdminMixin:
    """Append-only or scraper-written records: nobody adds, changes or deletes them here."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class PriceObservationInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = PriceObservation
    fields = ["observed_at", "price_per_hour", "currency", "run"]
    readonly_fields = fields
    extra = 0
    ordering = ["-observed_at"]
    verbose_name_plural = "price history"


@admin.register(Offer)
class OfferAdmin(admin.ModelAdmin):
    form = CuratedForm
    list_display = [
        "instance",
        "region",
        "kind",
        "term_months",
        "price_per_hour",
        "currency",
        "price_per_gpu_hour_usd",
        "observed_at",
        "is_stale",
        "available",
        "is_active",
    ]
    list_filter = [
        ("instance__provider", titled("provider")),
        "kind",
        "is_active",
        "currency",
        "origin",
    ]
    search_fields = ["instance__name", "instance__slug", "region__code", "instance__provider__slug"]
    list_select_related = ["instance__provider", "region__provider"]
    autocomplete_fields = ["instance", "region"]
    date_hierarchy = "observed_at"
    ordering = ["instance__provider__slug", "instance__slug", "region__code", "kind"]
    readonly_fields = [*SCRAPER_OWNED_OFFER_FIELDS, "history_link"]
    fields = [
        "instance",
        "region",
        "kind",
        "term_months",
        "price_per_hour",
        "currency",
        "available",
        "source_url",
        "locked_fields",
        *SCRAPER_OWNED_OFFER_FIELDS,
        "history_link",
    ]
    inlines = [PriceObservationInline]

    @admin.display(boolean=True, description="stale")
    def is_stale(self, obj: Offer) -> bool:
        return obj.is_active and obj.is_stale()

    @admin.display(description="full price history")
    def history_link(self, obj: Offer) -> str:
        if obj.pk is None:
            return "—"
        url = reverse("admin:offerings_priceobservation_changelist")
        return format_html('<a href="{}?offer={}">All observations</a>', url, obj.pk)

    def save_model(self, request, obj, form, change) -> None:
        save_curator_offer(obj, form.changed_data, is_new=not change)


@admin.register(PriceObservation)
class PriceObservationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "observed_at",
        "instance",
        "region",
        "kind",
        "price_per_hour",
        "currency",
        "run",
    ]
    list_filter = [
        ("offer__instance__provider", titled("provider")),
        ("offer__kind", titled("kind")),
        "currency",
    ]
    search_fields = ["offer__instance__name", "offer__instance__slug", "offer__region__code"]
    list_select_related = ["offer__instance__provider", "offer__region", "run__provider"]
    date_hierarchy = "observed_at"
    ordering = ["-observed_at"]
    # History grows without bound: never count the whole table.
    show_full_result_count = False

    @admin.display(ordering="offer__instance__name")
    def instance(self, obj: PriceObservation) -> InstanceType:
        return obj.offer.instance

    @admin.display(ordering="offer__region__code")
    def region(self, obj: PriceObservation) -> str:
        return obj.offer.region.code

    @admin.display(ordering="offer__kind")
    def kind(self, obj: PriceObservation) -> str:
        return obj.offer.get_kind_display()


# -- refresh runs and the review queue ------------------------------------------------------------


@admin.register(ScrapeRun)
class ScrapeRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "started_at",
        "provider",
        "status",
        "finished_at",
        "fetched",
        "created",
        "updated",
        "unchanged",
        "retired",
        "rejected",
        "errors",
        "trigger",
    ]
    list_filter = ["provider", "status", "trigger"]
    list_select_related = ["provider"]
    date_hierarchy = "started_at"
    ordering = ["-started_at"]
    fields = [
        "provider",
        "status",
        "trigger",
        ("task_id", "retry_scheduled"),
        "started_at",
        "finished_at",
        ("fetched", "created", "updated", "unchanged", "retired", "rejected", "errors"),
        "error_messages_pretty",
        "rejected_rows_pretty",
        "warnings_pretty",
    ]
    readonly_fields = flatten_fieldsets([(None, {"fields": fields})])

    @admin.display(description="error messages")
    def error_messages_pretty(self, obj: ScrapeRun) -> str:
        return pretty_json(obj.error_messages)

    @admin.display(description="rejected rows")
    def rejected_rows_pretty(self, obj: ScrapeRun) -> str:
        return pretty_json(obj.rejected_rows)

    @admin.display(description="warnings")
    def warnings_pretty(self, obj: ScrapeRun) -> str:
        return pretty_json(obj.warnings)


class SkuReviewForm(forms.ModelForm):
    def clean(self):
        cleaned = super().clean()
        target: InstanceType | None = cleaned.get("mapped_to")
        if target is not None:
            if target.provider_id != self.instance.provider_id:
                self.add_error("mapped_to", "Map a SKU to an instance type of the same provider.")
            elif cleaned.get("status") == SkuReview.Status.NEW:
                cleaned["status"] = SkuReview.Status.MAPPED
        elif cleaned.get("status") == SkuReview.Status.MAPPED:
            self.add_error("mapped_to", "Choose the instance type this SKU is.")
        return cleaned


@admin.register(SkuReview)
class SkuReviewAdmin(admin.ModelAdmin):
    form = SkuReviewForm
    list_display = ["sku", "provider", "status", "times_seen", "last_seen_at", "mapped_to"]
    list_filter = ["status", "provider"]
    search_fields = ["sku", "provider__slug"]
    list_select_related = ["provider", "mapped_to__provider"]
    autocomplete_fields = ["mapped_to"]
    date_hierarchy = "last_seen_at"
    ordering = ["status", "-last_seen_at"]
    fields = [
        "provider",
        "sku",
        "status",
        "mapped_to",
        "parsed_pretty",
        "times_seen",
        "first_seen_at",
        "last_seen_at",
    ]
    readonly_fields = [
        "provider",
        "sku",
        "parsed_pretty",
        "times_seen",
        "first_seen_at",
        "last_seen_at",
    ]
    actions = ["mark_ignored"]

    def has_add_permission(self, request) -> bool:
        # The scrapers file SKUs; curators only decide what they are.
        return False

    @admin.display(description="what the scraper parsed")
    def parsed_pretty(self, obj: SkuReview) -> str:
        return pretty_json(obj.parsed)

    @admin.action(description="Mark selected SKUs ignored")
    def mark_ignored(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.update(status=SkuReview.Status.IGNORED)
        self.message_user(
            request, f"Ignored {count} {model_ngettext(self.opts, count)}.", messages.SUCCESS
        )


@admin.register(CorrectionReport)
class CorrectionReportAdmin(admin.ModelAdmin):
    """Readers' reports: the curator checks the source, fixes the listing, closes the report."""

    list_display = ["created_at", "instance", "topic", "status", "source_link"]
    list_filter = ["status", "topic", "instance__provider"]
    search_fields = ["message", "source_url", "instance__name", "instance__provider__slug"]
    list_select_related = ["instance__provider"]
    date_hierarchy = "created_at"
    fields = ["instance", "topic", "message", "source_url", "created_at", "status", "curator_note"]
    readonly_fields = ["instance", "topic", "message", "source_url", "created_at"]
    actions = ["mark_accepted", "mark_rejected"]

    def has_add_permission(self, request) -> bool:
        return False  # reports come from readers through the detail page

    @admin.display(description="source")
    def source_link(self, obj: CorrectionReport) -> str:
        # A reader's URL: shown as text, never as a live link into the admin.
        return obj.source_url[:80]

    @admin.action(description="Mark selected reports accepted")
    def mark_accepted(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.update(status=CorrectionReport.Status.ACCEPTED)
        self.message_user(request, f"Accepted {count} report(s).", messages.SUCCESS)

    @admin.action(description="Mark selected reports rejected")
    def mark_rejected(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.update(status=CorrectionReport.Status.REJECTED)
        self.message_user(request, f"Rejected {count} report(s).", messages.SUCCESS)
