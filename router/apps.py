"""The router's Django app: `POST /v1/plan` and the Try a turn page."""

from __future__ import annotations

from django.apps import AppConfig


class RouterConfig(AppConfig):
    name = "router"
    verbose_name = "Router"
