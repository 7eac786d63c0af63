"""Forms of the console's pages; the API's serializers apply the same model rules."""

from __future__ import annotations

from django import forms

from console.models import OrganisationSettings, Role


class SettingsForm(forms.ModelForm):
    class Meta:
        model = OrganisationSettings
        fields = [
            "language",
            "on_unread",
            "taint_policy",
            "licence_valid_until",
            "licence_on_lapse",
            "compiled_records_only",
        ]
        labels = {
            "language": "Language the selector reads",
            "on_unread": "On unread",
            "taint_policy": "Taint policy",
            "licence_valid_until": "Licence valid until",
            "licence_on_lapse": "When the licence lapses",
            "compiled_records_only": "Accept compiled rulebook records only",
        }
        help_texts = {
            "language": "The language turns are read in; it is chosen here, never guessed from a turn.",
            "on_unread": "What happens to a turn nothing reads, after it was asked to be said again once.",
            "taint_policy": "What a write proposed after reading outside content (a page, an e-mail) gets.",
            "compiled_records_only": "Refuse rulebook sources (`policy_input_refused`); take only records.",
        }
        widgets = {"licence_valid_until": forms.DateInput(attrs={"type": "date"})}


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100)
    role = forms.ChoiceField(choices=Role.choices)


class PersonForm(forms.Form):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False)
    role = forms.ChoiceField(choices=Role.choices)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
