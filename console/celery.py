"""The Celery application: tasks are found in every installed app's `tasks` module."""

from __future__ import annotations

import os

from celery import Celery

# The production settings by default, as for WSGI; `make run` and the tests name their own.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.production")

app = Celery("stalwart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
