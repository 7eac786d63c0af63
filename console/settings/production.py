"""Settings for serving: DEBUG off, secure cookies, HSTS, and a secret key that must come from the environment."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from console.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = os.environ.get("STALWART_SECRET_KEY", "")
if len(SECRET_KEY) < 50:
    raise ImproperlyConfigured("STALWART_SECRET_KEY must be set to at least 50 random characters")

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = os.environ.get("STALWART_SSL_REDIRECT", "1") == "1"
SECURE_HSTS_SECONDS = int(os.environ.get("STALWART_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
