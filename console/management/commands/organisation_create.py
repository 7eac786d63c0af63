"""Create an organisation with its first admin: the first step of a new deployment."""

from __future__ import annotations

import getpass
import os

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from console import services
from console.models import Membership, Organisation, Role

PASSWORD_VARIABLE = "STALWART_ADMIN_PASSWORD"


class Command(BaseCommand):
    help = (
        "Create an organisation and its first admin. The password comes from "
        f"{PASSWORD_VARIABLE}, else it is asked for."
    )

    def add_arguments(self, parser) -> None:  # noqa: ANN001
        parser.add_argument("--slug", required=True, help="the organisation's short name")
        parser.add_argument("--name", required=True, help="the organisation's name")
        parser.add_argument("--admin", required=True, help="the first admin's user name")
        parser.add_argument("--email", default="", help="the first admin's e-mail address")

    def handle(self, *args, **options) -> None:  # noqa: ANN002, ANN003
        slug, username = options["slug"].strip(), options["admin"].strip()
        if Organisation.objects.filter(slug=slug).exists():
            raise CommandError(f"an organisation `{slug}` exists already")
        user_model = get_user_model()
        if user_model.objects.filter(username=username).exists():
            raise CommandError(f"a person `{username}` exists already")
        password = os.environ.get(PASSWORD_VARIABLE) or getpass.getpass(
            f"password for {username}: "
        )
        candidate = user_model(username=username, email=options["email"])
        try:
            validate_password(password, candidate)
        except ValidationError as exc:
            raise CommandError(
                "the password is refused: " + "; ".join(exc.messages).lower()
            ) from None
        with transaction.atomic():
            organisation = services.organisation_create(name=options["name"].strip(), slug=slug)
            user = user_model.objects.create_user(
                username=username, email=options["email"], password=password
            )
            Membership.objects.create(user=user, organisation=organisation, role=Role.ADMIN)
        self.stdout.write(f"organisation `{slug}` created; `{username}` is its admin")
