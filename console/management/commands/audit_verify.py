"""Verify every organisation's audit chain (keyed hashes, links, the signed checkpoint) and name the
first place where it does not hold."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from console.audit import verify_chain
from console.models import AuditRow, Organisation


class Command(BaseCommand):
    help = (
        "Verify the keyed hash chain of the audit rows and its signed checkpoint; "
        "exit 1 naming the first place it does not hold."
    )

    def add_arguments(self, parser) -> None:  # noqa: ANN001
        parser.add_argument("--organisation", help="the slug of one organisation (default: all)")

    def handle(self, *args, **options) -> None:  # noqa: ANN002, ANN003
        organisations = Organisation.objects.order_by("pk")
        if options["organisation"]:
            organisations = organisations.filter(slug=options["organisation"])
            if not organisations.exists():
                raise CommandError(f"no organisation `{options['organisation']}`", returncode=2)
        broken = []
        for organisation in organisations:
            problem = verify_chain(organisation)
            count = AuditRow.objects.filter(organisation=organisation).count()
            if problem is None:
                self.stdout.write(
                    f"{organisation.slug}: {count} row(s), chain intact, checkpoint signed"
                )
            else:
                broken.append(problem)
                self.stdout.write(str(problem))
        if broken:
            raise CommandError(str(broken[0]), returncode=1)
