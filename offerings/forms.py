"""The one public write, a reader's report that a fact is wrong, and how the filter forms copy
their fields and filters per request (offerings.filters)."""

import copy

from django import forms
from django.utils.translation import gettext_lazy as _

from offerings.models import CorrectionReport


class CorrectionForm(forms.ModelForm):
    # Left empty by people; bots that fill every field are turned away.
    website = forms.CharField(required=False, label=_("Leave this empty"))

    class Meta:
        model = CorrectionReport
        fields = ["topic", "message", "source_url"]
        labels = {
            "topic": _("What is wrong"),
            "message": _("What should it say?"),
            "source_url": _("Source URL that states it"),
        }
        widgets = {"message": forms.Textarea(attrs={"rows": 3, "maxlength": 2000})}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Our own words for the empty choice: Django 6.1's "- Select an option -" has no
        # Chinese translation in Django yet.
        topic = self.fields["topic"]
        topic.choices = [("", _("Choose one")), *((v, t) for v, t in topic.choices if v)]

    def clean_message(self) -> str:
        message = self.cleaned_data["message"].strip()
        if len(message) < 10:
            raise forms.ValidationError(_("Please say in a few words what is wrong."))
        return message

    def clean_source_url(self) -> str:
        url = self.cleaned_data["source_url"]
        if not url.lower().startswith(("https://", "http://")):
            raise forms.ValidationError(_("Give an http(s) link to the source."))
        return url

    def clean_website(self) -> str:
        if self.cleaned_data.get("website"):
            raise forms.ValidationError(_("Leave this field empty."))
        return ""


# -- copying the filter forms per request ------------------------------------------------------


def resolved(choices) -> list[tuple]:
    """(value, label) choices with their labels as text in the active language."""
    return [(value, str(label)) for value, label in choices]


class OneLevelFields(dict):
    """A form class's fields, which Django deep-copies for every form (every request), choices
    and all. What a form may change of its own fields is their widget's attributes, error
    messages and validators, and a model choice field's queryset: each field is copied with
    those, as Field.__deepcopy__ does, and shares its choices, text already resolved in the
    class's language (`InstanceFilterSet.get_form_class`), which nothing changes."""

    def __deepcopy__(self, memo: dict) -> dict:
        copies = {}
        for name, original in self.items():
            field = copy.copy(original)
            field.widget = copy.copy(original.widget)
            field.widget.attrs = dict(original.widget.attrs)
            field.error_messages = dict(original.error_messages)
            field.validators = list(original.validators)
            if isinstance(original, forms.ModelChoiceField):
                field.queryset = original.queryset.all()
            copies[name] = field
        return copies


class OneLevelFilters(dict):
    """A FilterSet's declared filters, which django-filter deep-copies for every FilterSet (every
    request), each filter's choices and lazy labels with it. A filter's state of its own is its
    parent FilterSet and model, which `__init__` sets on the copies: a copy of each filter, with
    its method bound to the copy, is enough."""

    def __deepcopy__(self, memo: dict) -> dict:
        copies = {}
        for name, original in self.items():
            duplicate = copy.copy(original)
            if duplicate.method is not None:
                duplicate.method = duplicate.method  # a FilterMethod of the copy, not the original
            copies[name] = duplicate
        return copies
