"""Logs as JSON lines (`STALWART_LOG_FORMAT=json`): each with its request id and organisation, redacted.

A request gets an id (the caller's `X-Request-ID` when it is a short token, else a new one), sent
back in the response's `X-Request-ID`; the organisation is bound once the request's actor is known.
Both are context variables, so every line logged while the request runs carries them, whichever
logger wrote it. A decision's line (`console.services.event_record`) carries its source, decision,
rule and reasons. Every line goes through `console.redaction.redact` before it is written: the
message, the fields and an exception's text, so a secret in any of them is never logged.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import re
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from console.redaction import redact

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
organisation: contextvars.ContextVar[str] = contextvars.ContextVar("organisation", default="")

REQUEST_ID_HEADER = "X-Request-ID"
_GIVEN_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")
#: Attributes every `LogRecord` has; anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
#: Fields a decision's line may carry (`extra=` of `event_record`).
DECISION_FIELDS = ("source", "decision", "verdict", "rule", "reasons", "agent", "tool", "stage")


def bind_organisation(slug: str) -> None:
    """The organisation the current request acts in, for every line logged from here on."""
    organisation.set(slug)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "at": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if request_id.get():
            line["request_id"] = request_id.get()
        if organisation.get():
            line["organisation"] = organisation.get()
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_") and key not in line:
                line[key] = value
        if record.exc_info:
            line["error"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return json.dumps(redact(line), default=str, ensure_ascii=False)


class RequestIdMiddleware:
    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request):  # noqa: ANN001, ANN204
        given = request.headers.get(REQUEST_ID_HEADER, "")
        rid = given if _GIVEN_ID.fullmatch(given) else uuid.uuid4().hex
        tokens = (request_id.set(rid), organisation.set(""))
        request.request_id = rid
        try:
            response = self.get_response(request)
        finally:
            request_id.reset(tokens[0])
            organisation.reset(tokens[1])
        response[REQUEST_ID_HEADER] = rid
        return response


def logging_config(fmt: str, level: str) -> dict:
    """Django's `LOGGING` for `STALWART_LOG_FORMAT` (`text` or `json`)."""
    formatters = {"json": {"()": "console.logs.JsonFormatter"}}
    # Every record passes through the credential table before it is written (web and workers).
    handler: dict[str, Any] = {"class": "logging.StreamHandler", "filters": ["redact_secrets"]}
    if fmt == "json":
        handler["formatter"] = "json"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": formatters,
        "filters": {"redact_secrets": {"()": "console.logfilters.RedactSecrets"}},
        "handlers": {"console": handler},
        "root": {"handlers": ["console"], "level": level},
        # Django's own handlers (its debug console, runserver's request lines) write without the
        # filter: its loggers write through the one above instead.
        "loggers": {
            "django": {"handlers": [], "level": "INFO", "propagate": True},
            "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        },
    }
