"""The console's own Django app."""

from __future__ import annotations

from django.apps import AppConfig, apps
from django.db.models.signals import post_delete, post_save

#: The rows a bundle is read from (`console/bundles.py`): a save or a delete of any of them wakes
#: the organisation's bundle long-polls. Writes that bypass the signals (`QuerySet.update`) call
#: `bundle_changed` themselves (firewall/services.py), and the long-polls' re-check catches the rest.
BUNDLE_ROWS = (
    "console.SessionHold",
    "console.ToolSwitch",
    "console.OrganisationSettings",
    "guard.WriteSwitch",
    "firewall.Policy",
    "rulebooks.RulebookVersion",
)


def _bundle_row_changed(sender, instance, **kwargs) -> None:  # noqa: ANN001
    from console.bundle_changes import bundle_changed

    organisation_id = getattr(instance, "organisation_id", None)
    if organisation_id is not None:
        bundle_changed(organisation_id)


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Stalwart console"

    def ready(self) -> None:
        for label in BUNDLE_ROWS:
            model = apps.get_model(label)
            post_save.connect(_bundle_row_changed, sender=model, dispatch_uid=f"bundle:{label}")
            post_delete.connect(_bundle_row_changed, sender=model, dispatch_uid=f"bundle:{label}")
