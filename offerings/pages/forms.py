"""The one public write: a reader's report that a fact is wrong."""

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
