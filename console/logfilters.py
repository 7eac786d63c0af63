"""The logging filter that runs every record of the web process and the workers through the
credential table before any handler writes it."""

from __future__ import annotations

import logging

from console.redaction import redact_string


class RedactSecrets(logging.Filter):
    """Rewrites a record in place: its message (arguments merged in), its traceback and its stack
    have every credential replaced by `[redacted:<shape>]`.

    The record is changed rather than only its output, so every handler after this one (and any
    formatter) sees the redacted text.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is written as its bare template
            message = str(record.msg)
        record.msg, record.args = redact_string(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_string(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_string(record.stack_info)
        return True
