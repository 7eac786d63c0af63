"""Settings of the test suite: a real database (SQLite file or PostgreSQL) and the real Redis."""

from __future__ import annotations

import os

os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")

from console.settings.base import *  # noqa: E402, F403
from console.settings.base import BASE_DIR, DATABASES, STATICFILES_DIRS, VAR_DIR  # noqa: E402

VAR_DIR.mkdir(parents=True, exist_ok=True)
(VAR_DIR / "staticfiles").mkdir(exist_ok=True)
WHITENOISE_AUTOREFRESH = True
DEBUG = False
SECRET_KEY = "test-only-key-0123456789abcdef0123456789abcdef0123456789"
ALLOWED_HOSTS = ["*"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not memory, so that a real worker process sees the rows the tests write.
    # STALWART_TEST_DB names another file, so that two runs on one machine do not share one.
    name = os.environ.get("STALWART_TEST_DB") or str(VAR_DIR / "test-stalwart.sqlite3")
    DATABASES["default"]["TEST"] = {"NAME": name}
if os.environ.get("STALWART_DATABASE_NAME"):
    # A worker process started by the tests reads the test database by its real name.
    DATABASES["default"]["NAME"] = os.environ["STALWART_DATABASE_NAME"]
STALWART_HEALTH_WORKER_TIMEOUT = 10.0

# The browser tests' accessibility checker, axe-core (package.json, installed by `make install`),
# served from our own static files, never from a CDN.
STATICFILES_DIRS = [
    *STATICFILES_DIRS,
    ("vendor/axe-core", str(BASE_DIR / "node_modules" / "axe-core")),
]

# The test database is emptied between tests and a file is not: the anchor file is off, and the
# tests of anchors name a file of their own.
STALWART_AUDIT_ANCHOR_FILE = ""

# The suite sends bad keys from one address across many tests; the throttle's own tests set the
# production limit (tests/security/test_throttling.py).
STALWART_API_KEY_FAILURE_LIMIT = 100_000

# Several runtimes of one test follow bundles from the one live server: the bound's own test
# sets it lower (tests/console/test_bundle_api.py).
STALWART_BUNDLE_MAX_POLLS = 16
