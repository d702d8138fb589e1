"""Offers (a price a curator types in goes through the writer) and their price history."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from offerings import writer
from offerings.admin.base import CuratedForm, ReadOnlyAdminMixin, titled
from offerings.models import InstanceType, Offer, PriceCheck, PriceObservation

SCRAPER_OWNED_OFFER_FIELDS = [
    "price_per_gpu_hour_usd",
    "exchange_rate_date",
    "observed_at",
    "first_seen_at",
    "last_seen_at",
    "missing_runs",
    "origin",
    "source",
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
        "basis",
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
        "source",
        "basis",
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
        "basis",
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
        # A price typed in is a new reading, which later readings may replace (lock it to keep
        # it); who states the price is the curator's judgement, kept from the writers' readings.
        if change and "basis" in form.changed_data:
            obj.locked_fields = writer.merge_locks(obj.locked_fields, ["basis"], Offer)
        writer.save_curator_offer(obj, form.changed_data, is_new=not change)


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


@admin.register(PriceCheck)
class PriceCheckAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """What a price source (SkyPilot's catalog) read for offers another source supplies."""

    list_display = ["offer", "source", "price_per_hour", "currency", "shown", "observed_at", "run"]
    list_filter = [("offer__instance__provider", titled("provider")), "source"]
    search_fields = ["offer__instance__name", "offer__instance__slug", "offer__region__code"]
    list_select_related = ["offer__instance__provider", "offer__region", "run__provider"]
    ordering = ["offer__instance__provider__slug", "offer__instance__slug"]

    @admin.display(description="price shown")
    def shown(self, obj: PriceCheck) -> str:
        return f"{obj.offer.price_per_hour} {obj.offer.currency}"
