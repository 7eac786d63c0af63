"""Verify every organisation's audit chain (keyed hashes, links, the signed checkpoint) and name the
first place where it does not hold."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from console.audit import anchor_file, missing_organisations, read_anchors, verify_chain
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
        anchors = read_anchors()
        path = anchor_file()
        if path is None:
            self.stdout.write("no anchor file configured: checked against the checkpoints only")
        elif not path.exists():
            self.stdout.write(f"no anchor file at {path} yet: checked against the checkpoints only")
        broken = [] if options["organisation"] else missing_organisations(anchors)
        for problem in broken:
            self.stdout.write(str(problem))
        for organisation in organisations:
            problem = verify_chain(organisation, anchors)
            count = AuditRow.objects.filter(organisation=organisation).count()
            if problem is None:
                anchored = anchors.get(organisation.pk)
                outside = f", anchored outside at seq {anchored['length']}" if anchored else ""
                self.stdout.write(
                    f"{organisation.slug}: {count} row(s), chain intact, checkpoint signed{outside}"
                )
            else:
                broken.append(problem)
                self.stdout.write(str(problem))
        if broken:
            raise CommandError(str(broken[0]), returncode=1)
