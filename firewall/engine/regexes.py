"""RE2 as the engine uses it: quiet compilation and one-line error reasons."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import re2

from firewall.engine.errors import OperandInvalid


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a bad pattern is reported to the user, not logged to stderr
    return options


_OPTIONS = _options()


def fast_search(compiled: Any) -> Callable[[str], bool]:
    """Whether `compiled` finds a match in a string, through RE2's matcher directly.

    The public `search` builds a match object and its offsets; a clause only needs a yes or
    no, so the underlying `RE2.Match` is called when this google-re2 build exposes it.
    """
    regexp = getattr(compiled, "_regexp", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    match = getattr(regexp, "Match", None)
    if match is None or anchor is None:
        search = compiled.search
        return lambda text: search(text.encode("utf-8", "replace")) is not None

    def search_fast(text: str) -> bool:
        data = text.encode("utf-8", "replace")
        return match(anchor, data, 0, len(data))[0][0] != -1

    return search_fast


def compile_re2(pattern: str, field: str) -> Any:
    """Compile an RE2 pattern, or raise `OperandInvalid` on `field` saying why it cannot be."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except UnicodeError:
        raise OperandInvalid(field, "not a valid RE2 regex: not valid UTF-8 text") from None
    except re2.error as exc:
        raise OperandInvalid(field, f"not a valid RE2 regex: {reason(exc)}") from None


def reason(exc: Exception) -> str:
    """RE2's complaint as one lowercase sentence without a final period."""
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text else "rejected by RE2"
