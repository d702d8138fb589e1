"""What every admin page shares: locks on what a curator edits, read-only records, filters."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin
from django.db import models
from django.utils.html import format_html

from offerings import writer

# -- locking --------------------------------------------------------------------------------------


def lockable_choices(model: type[models.Model]) -> list[tuple[str, str]]:
    return [
        (name, f"{model._meta.get_field(name).verbose_name} ({name})")
        for name in writer.lockable_fields(model)
    ]


def lock_changed_fields(form: forms.ModelForm) -> None:
    """Add the fields the curator changed in `form` to its instance's `locked_fields`."""
    instance = form.instance
    changed = set(form.changed_data) & set(writer.lockable_fields(type(instance)))
    if changed:
        instance.locked_fields = writer.merge_locks(instance.locked_fields, changed, type(instance))


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


# -- read-only records and scraped text -----------------------------------------------------------


def pretty_json(value) -> str:
    """Scraped strings are hostile: always escaped, never marked safe."""
    if not value:
        return "—"
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


class ReadOnlyAdminMixin:
    """Append-only or scraper-written records: nobody adds, changes or deletes them here."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
