"""The rulebooks' Django app: uploads compiled into records, their versions, the compile API."""

from __future__ import annotations

from django.apps import AppConfig


class RulebooksConfig(AppConfig):
    name = "rulebooks"
    verbose_name = "Rulebooks"
