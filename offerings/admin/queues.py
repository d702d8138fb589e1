"""What the scrapers and readers leave for a curator: refresh runs, unmapped SKUs, reports."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets, model_ngettext
from django.db.models import QuerySet
from django.http import HttpRequest

from offerings import writer
from offerings.admin.base import ReadOnlyAdminMixin, pretty_json
from offerings.models import CorrectionReport, InstanceType, ScrapeRun, SkuReview


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
        count = writer.ignore_skus(queryset)
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
