"""The firewall's Django app: policies and rules per organisation, the rule editor, the evaluate API."""

from __future__ import annotations

from django.apps import AppConfig


class FirewallConfig(AppConfig):
    name = "firewall"
    verbose_name = "Firewall"
