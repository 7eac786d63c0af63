"""Redaction for the `sanitize` verdict: the preset library and custom RE2 patterns.

Every string inside the arguments (nested objects and arrays included; keys, numbers and
booleans untouched) has its matching substrings replaced by `[redacted:<preset>]`, or
`[redacted:custom]` for a custom pattern. Presets run in a fixed order, the most specific
first, whatever order a rule lists them in, then custom patterns in the rule's order:

- `aws_access_key`, `aws_secret_key`, `anthropic_key`, `openai_key`, `bearer_token`: the
  recognisers of those names in the one table of credential shapes (`credentials.py`, which
  the console's redaction and the proof's code checks read too);
- `credentials`: every recogniser of that table (GitHub and Slack tokens, JWTs, `Basic`
  values, passwords and tokens in addresses, PEM private keys, Stalwart keys, and the five
  above), each match marked `[redacted:credentials]`;
- `credit_card`: runs of 13 to 19 digits, optionally split by spaces or dashes, that pass the
  Luhn check (a run that fails it stays as it is);
- `ssn_us`: `AAA-GG-SSSS` (or with spaces) with a valid area (not 000, 666 or 9xx), group
  (not 00) and serial (not 0000);
- `email`: `local@domain.tld`.

Arguments with nothing to redact come back as they are (the same object). In arguments that
are rewritten, lone surrogates (which UTF-8, and so RE2, cannot carry) become `?`. Arguments
nested deeper than `MAX_SANITIZE_DEPTH` cannot be cleaned: the decision then refuses the call
rather than pass it on uncleaned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from firewall.engine import credentials
from firewall.engine.errors import FirewallError, OperandInvalid
from firewall.engine.regexes import compile_re2, fast_search
from firewall.engine.values import utf8_safe
from firewall.engine.vocabulary import SANITIZE_FIELDS

#: Arguments nested deeper than this cannot be sanitized (the call is refused instead).
MAX_SANITIZE_DEPTH = 200

#: One redaction, ready to run: (label, clean, shortest match, hint, search).
_Step = tuple[str, Callable[[str], str], int, Callable[[str], bool] | None, Callable[[str], bool]]


def _marker(label: str) -> str:
    return f"[redacted:{label}]"


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        number = ord(char) - 48
        if position % 2:
            number *= 2
            if number > 9:
                number -= 9
        total += number
    return total % 10 == 0


def _card(match: Any) -> str:
    text = match.group(0)
    digits = "".join(ch for ch in text if ch.isdigit())
    if 13 <= len(digits) <= 19 and _luhn(digits):
        return _marker("credit_card")
    return text


def _ssn(match: Any) -> str:
    area, sep1, group, sep2, serial = match.groups()
    valid = (
        sep1 == sep2
        and area != "000"
        and area != "666"
        and not area.startswith("9")
        and group != "00"
        and serial != "0000"
    )
    return _marker("ssn_us") if valid else match.group(0)


def _whole(label: str) -> Callable[[Any], str]:
    marker = _marker(label)

    def replace(match: Any) -> str:
        return marker

    return replace


#: The presets that come from the table of credential recognisers (`credentials.py`); the spec
#: names five of them, and `credentials` stands for every shape of the table.
_CREDENTIAL_PRESETS = (
    "aws_access_key",
    "aws_secret_key",
    "anthropic_key",
    "openai_key",
    "bearer_token",
)
_CREDENTIALS = "credentials"

#: The other presets: personal data, with checks no credential has (Luhn, valid SSN parts).
_PII_TABLE: tuple[tuple[str, str, Callable[[Any], str], int, Callable[[str], bool]], ...] = (
    (
        "credit_card",
        r"\b[0-9](?:[ -]?[0-9]){12,18}\b",
        _card,
        13,
        lambda text: _digits(text) >= 13,
    ),
    (
        "ssn_us",
        r"\b([0-9]{3})([- ])([0-9]{2})([- ])([0-9]{4})\b",
        _ssn,
        11,
        lambda text: _digits(text) >= 9,
    ),
    (
        "email",
        r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
        _whole("email"),
        6,
        lambda text: "@" in text,
    ),
)

#: The preset names, in the order they are applied.
SANITIZE_PRESETS: tuple[str, ...] = (
    *_CREDENTIAL_PRESETS,
    _CREDENTIALS,
    *(name for name, *_ in _PII_TABLE),
)

_DIGIT_BYTES = b"0123456789"


def _digits(text: str) -> int:
    data = text.encode("utf-8", "replace")
    return len(data) - len(data.translate(None, _DIGIT_BYTES))


_PII_COMPILED: dict[str, Any] = {
    label: compile_re2(pattern, label) for label, pattern, *_ in _PII_TABLE
}


def _credential_step(name: str) -> _Step:
    """One step over the credential table: one recogniser, or (`credentials`) all of them."""
    only = None if name == _CREDENTIALS else name
    names = None if only is None else (only,)

    def clean(text: str) -> str:
        return credentials.redact_text(text, names=names, label=name)[0]

    return (
        name,
        clean,
        credentials.shortest(only),
        lambda text: credentials.could_hold(only, text),
        fast_search(credentials.compiled(only)),
    )


def _pattern_step(
    label: str, pattern: Any, replace: Callable[[Any], str], least: int, hint: Any
) -> _Step:
    def clean(text: str) -> str:
        return pattern.sub(replace, text)

    return (label, clean, least, hint, fast_search(pattern))


#: Longest custom pattern the validator accepts.
MAX_PATTERN_LENGTH = 1000


class SanitizeFailed(FirewallError):
    """The arguments could not be walked to redact them (nested too deeply)."""


def compile_pattern(pattern: object, field: str) -> Any:
    """Compile a custom redaction pattern, or raise `OperandInvalid` saying why it cannot be."""
    if not isinstance(pattern, str):
        raise OperandInvalid(field, "must be a string")
    if not pattern:
        raise OperandInvalid(field, "must not be empty")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise OperandInvalid(field, f"is longer than {MAX_PATTERN_LENGTH} characters")
    compiled = compile_re2(pattern, field)
    if compiled.search("") is not None:
        raise OperandInvalid(field, f"`{pattern}` matches the empty string")
    return compiled


def sanitizer_problems(spec: object) -> list[tuple[str, str]]:
    """Every problem of a `sanitize` object, as (field inside it, message) pairs."""
    if not isinstance(spec, dict):
        return [("", "must be an object with `presets` and/or `patterns`")]
    problems: list[tuple[str, str]] = []
    for key in spec:
        if key not in SANITIZE_FIELDS:
            problems.append((str(key), "unknown field"))
    count = 0
    presets = spec.get("presets")
    if presets is not None:
        if not isinstance(presets, list):
            problems.append(("presets", "must be a list of preset names"))
        else:
            count += len(presets)
            for index, name in enumerate(presets):
                if not isinstance(name, str):
                    problems.append((f"presets[{index}]", "must be a string"))
                elif name not in SANITIZE_PRESETS:
                    problems.append(
                        (
                            f"presets[{index}]",
                            f"unknown preset `{name}` (known: {', '.join(SANITIZE_PRESETS)})",
                        )
                    )
    patterns = spec.get("patterns")
    if patterns is not None:
        if not isinstance(patterns, list):
            problems.append(("patterns", "must be a list of RE2 patterns"))
        else:
            count += len(patterns)
            for index, pattern in enumerate(patterns):
                try:
                    compile_pattern(pattern, f"patterns[{index}]")
                except OperandInvalid as exc:
                    problems.append((exc.field, exc.message))
    if count == 0 and not problems:
        problems.append(("", "an empty sanitizer redacts nothing: name a preset or a pattern"))
    return problems


@dataclass(frozen=True, slots=True)
class Sanitizer:
    """The redactions of one rule, ready to run.

    Each step is (label, clean, shortest match, hint, search): a string shorter than the
    shortest match, or failing the hint, or in which RE2 finds nothing, is left without calling
    the slower substitution.
    """

    steps: tuple[_Step, ...]
    shortest: int

    def redact(self, arguments: Any) -> tuple[Any, list[str]]:
        """The cleaned arguments and the labels that redacted something, in order.

        A first pass only looks (no copy): arguments with nothing to redact come back as
        they are, and only the others are rebuilt.
        """
        if not self._finds_something(arguments):
            return arguments, []
        hits: set[str] = set()
        cleaned = self._walk(arguments, hits, 0)
        labels = [step[0] for step in self.steps if step[0] in hits]
        return cleaned, list(dict.fromkeys(labels))

    def _finds_something(self, arguments: Any) -> bool:
        shortest = self.shortest
        steps = self.steps
        stack: list[tuple[Any, int]] = [(arguments, 0)]
        while stack:
            value, depth = stack.pop()
            if depth > MAX_SANITIZE_DEPTH:
                raise SanitizeFailed(f"arguments nest deeper than {MAX_SANITIZE_DEPTH} levels")
            if isinstance(value, str):
                size = len(value)
                if size < shortest:
                    continue
                text = value if value.isascii() else utf8_safe(value)
                for _, _, least, hint, search in steps:
                    if size >= least and (hint is None or hint(text)) and search(text):
                        return True
            elif isinstance(value, dict):
                stack.extend((item, depth + 1) for item in value.values())
            elif isinstance(value, list):
                stack.extend((item, depth + 1) for item in value)
        return False

    def _walk(self, value: Any, hits: set[str], depth: int) -> Any:
        if depth > MAX_SANITIZE_DEPTH:
            raise SanitizeFailed(f"arguments nest deeper than {MAX_SANITIZE_DEPTH} levels")
        if isinstance(value, str):
            return self._clean(value, hits) if len(value) >= self.shortest else value
        if isinstance(value, dict):
            walk, shortest, deeper = self._walk, self.shortest, depth + 1
            return {
                key: item
                if item.__class__ is str and len(item) < shortest
                else walk(item, hits, deeper)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self._walk(item, hits, depth + 1) for item in value]
        return value

    def _clean(self, text: str, hits: set[str]) -> str:
        if not text.isascii():
            text = utf8_safe(text)
        size = len(text)
        for label, clean, shortest, hint, search in self.steps:
            if size < shortest or (hint is not None and not hint(text)) or not search(text):
                continue
            cleaned = clean(text)
            if cleaned != text:
                hits.add(label)
                text = cleaned
        return text


def build_sanitizer(spec: object) -> Sanitizer:
    """Compile a `sanitize` object, or raise `OperandInvalid` with its first problem."""
    problems = sanitizer_problems(spec)
    if problems:
        field, message = problems[0]
        raise OperandInvalid(field, message)
    assert isinstance(spec, dict)
    wanted = set(spec.get("presets") or [])
    steps: list[_Step] = []
    for name in SANITIZE_PRESETS:
        if name not in wanted:
            continue
        if name in _CREDENTIAL_PRESETS or name == _CREDENTIALS:
            steps.append(_credential_step(name))
    for label, _pattern, replace, least, hint in _PII_TABLE:
        if label in wanted:
            steps.append(_pattern_step(label, _PII_COMPILED[label], replace, least, hint))
    custom = _whole("custom")
    for index, pattern_text in enumerate(spec.get("patterns") or []):
        pattern = compile_pattern(pattern_text, f"patterns[{index}]")
        steps.append(_pattern_step("custom", pattern, custom, 1, None))
    return Sanitizer(tuple(steps), min((step[2] for step in steps), default=1))
