"""Rotate an organisation's bundle key: the new key signs every bundle, stamp and grant from now on."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from console import bundles
from console.access import Actor
from console.models import Organisation, Role


class Command(BaseCommand):
    help = (
        "Rotate an organisation's bundle key (audited). Runtimes given only the old public key "
        "fail closed at their next bundle: give them the next key beside the current one first "
        "(STALWART_BUNDLE_KEY=current,next; GET /v1/bundle/key lists both), then rotate."
    )

    def add_arguments(self, parser) -> None:  # noqa: ANN001
        parser.add_argument("--org", required=True, help="the organisation's short name (slug)")

    def handle(self, *args, **options) -> None:  # noqa: ANN002, ANN003
        slug = options["org"].strip()
        organisation = Organisation.objects.filter(slug=slug).first()
        if organisation is None:
            raise CommandError(f"no organisation `{slug}`")
        # Whoever runs manage.py on the server is its operator: an admin of every organisation.
        actor = Actor(
            organisation=organisation, role=Role.ADMIN, label="manage.py rotate_bundle_key"
        )
        before = bundles.key_ring(organisation.pk).current
        rotated = bundles.bundle_key_rotate(actor=actor)
        self.stdout.write(
            f"rotated the bundle key of {slug}: generation {before.generation} -> "
            f"{rotated.generation}\n"
            f"previous: {before.public} (kid {before.kid})\n"
            f"current:  {rotated.public} (kid {rotated.kid})\n"
            f"next:     {bundles.key_ring(organisation.pk).next.public}"
        )
