"""A test client that enforces CSRF like a browser does, and sends the token like htmx does."""

from __future__ import annotations

import json

from django.test import Client


class CsrfClient(Client):
    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        super().__init__(enforce_csrf_checks=True, **kwargs)

    def _token(self) -> str:
        if "csrftoken" not in self.cookies:
            self.get("/accounts/login/")
        return self.cookies["csrftoken"].value

    def generic(
        self, method, path, data="", content_type="application/octet-stream", secure=False, **extra
    ):  # noqa: ANN001, ANN003, ANN201
        if method.upper() not in ("GET", "HEAD", "OPTIONS", "TRACE"):
            extra.setdefault("HTTP_X_CSRFTOKEN", self._token())
        return super().generic(method, path, data, content_type, secure=secure, **extra)

    def put_json(self, path: str, body, **extra):  # noqa: ANN001, ANN003, ANN201
        return self.put(path, json.dumps(body), content_type="application/json", **extra)
