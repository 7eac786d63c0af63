"""Settings of `make run`: DEBUG on, SQLite and the embedded broker unless the environment names others."""

from __future__ import annotations

import os

from console.settings.base import *  # noqa: F403
from console.settings.base import VAR_DIR

VAR_DIR.mkdir(parents=True, exist_ok=True)
(VAR_DIR / "staticfiles").mkdir(exist_ok=True)
DEBUG = True
SECRET_KEY = (
    os.environ.get("STALWART_SECRET_KEY")
    or "dev-only-key-never-used-in-production-0123456789abcdef"
)
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
