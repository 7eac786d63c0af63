"""The tool check's Django app: sessions kept by the server, with their signed histories."""

from __future__ import annotations

from django.apps import AppConfig


class GuardConfig(AppConfig):
    name = "guard"
    verbose_name = "Tool check"
