"""Create an account with a one-time password; an organisation's admin then invites it."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from console import services


class Command(BaseCommand):
    help = "Create a person's account (in no organisation) and print its one-time password."

    def add_arguments(self, parser) -> None:  # noqa: ANN001
        parser.add_argument("username")
        parser.add_argument("--email", default="")

    def handle(self, *args, **options) -> None:  # noqa: ANN002, ANN003
        try:
            user, password = services.person_create(
                username=options["username"], email=options["email"]
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"`{user.get_username()}` was created; first password: {password}")
        self.stdout.write("An admin invites them on the People page; they accept once signed in.")
