"""Providers (with "refresh now"), their regions, GPU models and reference exchange rates."""

from __future__ import annotations

from celery import current_app
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from offerings.admin.base import CuratedForm, LockingAdminMixin
from offerings.models import (
    ExchangeRate,
    GpuModel,
    Provider,
    ProviderReadiness,
    RefreshHealth,
    Region,
    ScrapeRun,
)


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
                # The task lives in `providers`, which `offerings` never imports: sent by name.
                current_app.send_task(
                    ScrapeRun.REFRESH_TASK, args=[slug], kwargs={"trigger": "admin"}
                )
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


class ReadinessInline(admin.StackedInline):
    """The provider's network-readiness facts; a fact with no row is unknown."""

    model = ProviderReadiness
    form = CuratedForm
    extra = 0
    fields = [
        ("fact", "basis"),
        ("flag", "gpus", "usd_per_gb", "fabrics"),
        ("source_url", "verified_at"),
        "notes",
        "locked_fields",
        "fixture_digest",
    ]
    readonly_fields = ["fixture_digest"]
    verbose_name = "network readiness fact"
    verbose_name_plural = "network readiness (one value per fact, in its field; leave out unknowns)"


@admin.register(ProviderReadiness)
class ProviderReadinessAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = ["provider", "fact", "shown_value", "basis", "verified_at"]
    list_filter = ["fact", "basis", "provider"]
    search_fields = ["provider__slug", "provider__name", "fact"]
    list_select_related = ["provider"]
    autocomplete_fields = ["provider"]
    ordering = ["provider__slug", "fact"]
    readonly_fields = ["fixture_digest"]

    @admin.display(description="value")
    def shown_value(self, obj: ProviderReadiness) -> str:
        value = obj.value
        if isinstance(value, list):
            return ", ".join(value)
        return str(value)


@admin.register(Provider)
class ProviderAdmin(LockingAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "name_zh",
        "slug",
        "kind",
        "home_currency",
        "instance_count",
        "refresh_status",
        "verified_at",
    ]
    list_filter = [RefreshAttentionFilter, "kind", "home_currency"]
    list_select_related = ["refresh_health"]
    search_fields = ["name", "name_zh", "slug"]
    ordering = ["name"]
    readonly_fields = ["fixture_digest", "refresh_status"]
    actions = ["refresh_now"]
    inlines = [ReadinessInline]
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
        # get_object() reads an id that is not one (`abc`, past the column's range) as no row.
        provider = self.get_object(request, unquote(object_id))
        if provider is None:
            raise Http404(f"No provider with the id {object_id!r}.")
        if not self.has_change_permission(request, provider):
            raise PermissionDenied
        queue_refresh(request, [provider.slug])
        return HttpResponseRedirect(reverse("admin:offerings_provider_change", args=[provider.pk]))


@admin.register(Region)
class RegionAdmin(admin.ModelAdmin):
    list_display = ["code", "provider", "name", "name_zh", "geo"]
    list_filter = ["provider", "geo"]
    search_fields = ["code", "name", "name_zh", "provider__slug", "provider__name"]
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
