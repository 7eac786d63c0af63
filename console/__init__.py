"""The Stalwart console: the Django project and its own app (organisations, roles, settings, audit, events)."""

from __future__ import annotations

from console.celery import app as celery_app

__all__ = ["celery_app"]
