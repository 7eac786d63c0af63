"""Redaction of secrets before anything is written to an event, an audit row, a page or a log.

The shapes of credentials come from the one table (`firewall/engine/credentials.py`) that the
sanitize presets and the proof's code checks read too, and so does the walk over structures
(`redact_value`, beside the table, so the runtime's decision logs redact as the console does).
"""

from __future__ import annotations

from typing import Any

from firewall.engine.credentials import REDACTED, redact_text, redact_value

__all__ = ["REDACTED", "redact", "redact_string"]


def redact(value: Any, *, secret_keys: frozenset[str] = frozenset()) -> Any:
    """A copy of `value` with the values of secret keys replaced by a marker, and every
    credential inside a string replaced by `[redacted:<shape>]` (the walk lives beside the
    table, so that the runtime's decision logs redact exactly as the console does)."""
    return redact_value(value, secret_keys=secret_keys)


def redact_string(text: str) -> str:
    """`text` with every credential in it replaced (for log lines and other free text)."""
    return redact_text(text)[0]
