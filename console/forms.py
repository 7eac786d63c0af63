"""Forms of the console's pages; the API's serializers apply the same model rules."""

from __future__ import annotations

from django import forms

from console.models import OrganisationSettings, Role
from console.services import ADMIN_FIELDS, ADMIN_ONLY_MESSAGE, webhook_url_problem


class HttpsURLField(forms.URLField):
    """A URL field that reads a bare host as https (the default of Django 6)."""

    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        kwargs.setdefault("assume_scheme", "https")
        super().__init__(**kwargs)


class SettingsForm(forms.ModelForm):
    """The Settings page's form; fields only an admin may change are left out for other roles.

    Leaving them out (rather than posting them back unchanged) is what keeps an editor's save from
    ever being read as a change of the licence or the webhook.
    """

    def __init__(self, *args, admin: bool = True, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            # A model field with a callable default (the licence's end date) would otherwise compare
            # against a hidden "initial" input the page never sends, and read every save as a change
            # of the licence.
            field.show_hidden_initial = False
        # The page never sends the admin's fields for another role; a request that does and changes
        # one of them is refused (the same values sent back are no change).
        self.refused_fields: list[str] = []
        if not admin and any(name in self.data for name in ADMIN_FIELDS):
            whole = SettingsForm(self.data, instance=kwargs.get("instance"))
            # A field the request does not send is not being changed (it is not on this form).
            posted = ADMIN_FIELDS & set(self.data)
            self.refused_fields = sorted(set(whole.changed_data) & posted)
        if not admin:
            for name in ADMIN_FIELDS:
                self.fields.pop(name, None)
        timeout = self.fields.get("approval_timeout_minutes")
        if timeout is not None:
            # One lower bound, said once: the model's validator is >= 1, so the widget is too.
            timeout.min_value = 1
            timeout.widget.attrs["min"] = 1
            timeout.validators = [
                v for v in timeout.validators if getattr(v, "limit_value", 1) != 0
            ]

    def clean(self):  # noqa: ANN201
        cleaned = super().clean()
        if self.refused_fields:
            raise forms.ValidationError(f"{ADMIN_ONLY_MESSAGE}: " + ", ".join(self.refused_fields))
        return cleaned

    def clean_notify_url(self) -> str:
        value = self.cleaned_data.get("notify_url") or ""
        problem = webhook_url_problem(value)
        if problem:
            raise forms.ValidationError(problem)
        return value

    class Meta:
        field_classes = {"notify_url": HttpsURLField}
        model = OrganisationSettings
        fields = [
            "language",
            "on_unread",
            "taint_policy",
            "grounded",
            "s1_veto",
            "s2_veto",
            "confirm_read",
            "licence_valid_until",
            "licence_on_lapse",
            "compiled_records_only",
            "notify_url",
            "approval_timeout_minutes",
        ]
        labels = {
            "language": "Language the selector reads",
            "on_unread": "On unread",
            "taint_policy": "Taint policy",
            "grounded": "Origin of values (grounded)",
            "s1_veto": "S1: sending verb",
            "s2_veto": "S2: destination",
            "confirm_read": "Confirmation reading",
            "licence_valid_until": "Licence valid until",
            "licence_on_lapse": "When the licence lapses",
            "compiled_records_only": "Accept compiled rulebook records only",
            "notify_url": "Alert webhook URL",
            "approval_timeout_minutes": "Confirm prompts expire after (minutes)",
        }
        help_texts = {
            "language": "The language turns are read in; it is chosen here, never guessed from a turn.",
            "on_unread": "What happens to a turn nothing reads, after it was asked to be said again once.",
            "taint_policy": "What a write proposed after reading outside content (a page, an e-mail) gets.",
            "grounded": "A value in a write that no turn of the person says and no tool returned is "
            "asked about; never allowed, never refused.",
            "s1_veto": "The person's turn asks to send something out and the call's tool does not "
            "send: asked (confirm) or refused (refuse).",
            "s2_veto": "The turn names a place to send to that no tool receives and the call does "
            "not carry: asked (confirm) or refused (refuse).",
            "confirm_read": "The call read against the turn, values as typed: a value missing or "
            "different is shown to the person beside the call; the call is never changed.",
            "compiled_records_only": "Refuse rulebook sources (policy_input_refused); take only compiled records.",
        }
        # ISO, whatever the language: a date input reads only `YYYY-MM-DD`.
        widgets = {
            "licence_valid_until": forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
        }


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100)
    role = forms.ChoiceField(choices=Role.choices)
    owner = forms.TypedChoiceField(
        coerce=int,
        required=False,
        empty_value=None,
        help_text="the person this key acts for (you, unless you name another): what it asks for "
        "counts as theirs",
    )
    may_approve = forms.BooleanField(
        required=False,
        label="May approve",
        help_text="answers confirm prompts for its owner (an approver or admin); never what the "
        "owner or the owner's keys asked for",
    )

    def __init__(self, *args, people: list[tuple[int, str]], owner: int | None, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.fields["owner"].choices = people
        self.fields["owner"].initial = owner


class InviteForm(forms.Form):
    identifier = forms.CharField(max_length=254, label="User name or e-mail")
    role = forms.ChoiceField(choices=Role.choices)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
