"""Redaction for the `sanitize` verdict: the preset library and custom RE2 patterns.

Every string inside the arguments (nested objects and arrays included; keys, numbers and
booleans untouched) has its matching substrings replaced by `[redacted:<preset>]`, or
`[redacted:custom]` for a custom pattern. Presets run in a fixed order, the most specific
first, whatever order a rule lists them in, then custom patterns in the rule's order:

- `aws_access_key`: `AKIA`/`ASIA`/... followed by 16 upper-case letters or digits;
- `aws_secret_key`: 40 base64 characters assigned to a key named like `aws_secret_access_key`
  or `secret_key` (the name is kept, the value redacted; a bare 40-character string is not
  redacted, it cannot be told apart from any other token);
- `anthropic_key`: `sk-ant-...`; `openai_key`: `sk-...`, `sk-proj-...` (20 characters or more);
- `bearer_token`: the token after `Bearer ` (16 characters or more; the word is kept);
- `credit_card`: runs of 13 to 19 digits, optionally split by spaces or dashes, that pass the
  Luhn check (a run that fails it stays as it is);
- `ssn_us`: `AAA-GG-SSSS` (or with spaces) with a valid area (not 000, 666 or 9xx), group
  (not 00) and serial (not 0000);
- `email`: `local@domain.tld`.

Arguments with nothing to redact come back as they are (the same object). In arguments that
are rewritten, lone surrogates (which UTF-8, and so RE2, cannot carry) become `?`. Arguments nested deeper than `MAX_SANITIZE_DEPTH` cannot be
cleaned: the decision then refuses the call rather than pass it on uncleaned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from firewall.engine.errors import FirewallError, OperandInvalid
from firewall.engine.regexes import compile_re2, fast_search
from firewall.engine.values import utf8_safe
from firewall.engine.vocabulary import SANITIZE_FIELDS

#: Arguments nested deeper than this cannot be sanitized (the call is refused instead).
MAX_SANITIZE_DEPTH = 200


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


def _keep_first(label: str) -> Callable[[Any], str]:
    def replace(match: Any) -> str:
        return match.group(1) + _marker(label)

    return replace


def _keep_around(label: str) -> Callable[[Any], str]:
    def replace(match: Any) -> str:
        return match.group(1) + _marker(label) + match.group(3)

    return replace


def _whole(label: str) -> Callable[[Any], str]:
    marker = _marker(label)

    def replace(match: Any) -> str:
        return marker

    return replace


_PRESET_TABLE: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    (
        "aws_access_key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\b",
        _whole("aws_access_key"),
    ),
    (
        "aws_secret_key",
        r"(?i)((?:aws[_. -]?)?secret[_. -]?(?:access[_. -]?)?key[\"']?\s*(?:=>|[:=])\s*[\"']?)"
        r"([a-z0-9/+]{40})([^a-z0-9/+=]|$)",
        _keep_around("aws_secret_key"),
    ),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", _whole("anthropic_key")),
    (
        "openai_key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        _whole("openai_key"),
    ),
    (
        "bearer_token",
        r"(?i)\b(bearer\s+)[a-z0-9._~+/-]{16,}=*",
        _keep_first("bearer_token"),
    ),
    ("credit_card", r"\b[0-9](?:[ -]?[0-9]){12,18}\b", _card),
    ("ssn_us", r"\b([0-9]{3})([- ])([0-9]{2})([- ])([0-9]{4})\b", _ssn),
    (
        "email",
        r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
        _whole("email"),
    ),
)

#: The preset names, in the order they are applied.
SANITIZE_PRESETS: tuple[str, ...] = tuple(name for name, _, _ in _PRESET_TABLE)

_DIGITS = "0123456789"
_ACCESS_KEY_PREFIXES = (
    "AKIA",
    "ASIA",
    "ABIA",
    "ACCA",
    "AGPA",
    "AIDA",
    "AIPA",
    "ANPA",
    "ANVA",
    "AROA",
    "APKA",
    "ASCA",
)


_DIGIT_BYTES = _DIGITS.encode()


def _digits(text: str) -> int:
    data = text.encode("utf-8", "replace")
    return len(data) - len(data.translate(None, _DIGIT_BYTES))


#: Cheap necessary conditions: a string that fails one cannot hold a match of the preset, so
#: RE2 is not asked. They only save time; every redaction is still RE2's.
_HINTS: dict[str, Callable[[str], bool]] = {
    "aws_access_key": lambda text: any(prefix in text for prefix in _ACCESS_KEY_PREFIXES),
    "aws_secret_key": lambda text: "secret" in text.lower(),
    "anthropic_key": lambda text: "sk-ant-" in text,
    "openai_key": lambda text: "sk-" in text,
    "bearer_token": lambda text: "bearer" in text.lower(),
    "credit_card": lambda text: _digits(text) >= 13,
    "ssn_us": lambda text: _digits(text) >= 9,
    "email": lambda text: "@" in text,
}

#: The shortest string each preset can match: shorter strings are skipped outright.
_MIN_LENGTH: dict[str, int] = {
    "aws_access_key": 20,
    "aws_secret_key": 40,
    "anthropic_key": 27,
    "openai_key": 23,
    "bearer_token": 23,
    "credit_card": 13,
    "ssn_us": 11,
    "email": 6,
}

_PRESETS: dict[str, tuple[Any, Callable[[Any], str]]] = {
    name: (compile_re2(pattern, name), replace) for name, pattern, replace in _PRESET_TABLE
}

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
                elif name not in _PRESETS:
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


_Step = tuple[
    str, Any, Callable[[Any], str], int, Callable[[str], bool] | None, Callable[[str], bool]
]


@dataclass(frozen=True, slots=True)
class Sanitizer:
    """The redactions of one rule, ready to run.

    Each step is (label, pattern, replacement, shortest match, hint, search): a string shorter
    than the shortest match, or failing the hint, or in which RE2 finds nothing, is left
    without calling the slower substitution.
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
                for _, _, _, least, hint, search in steps:
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
        for label, pattern, replace, shortest, hint, search in self.steps:
            if size < shortest or (hint is not None and not hint(text)) or not search(text):
                continue
            cleaned = pattern.sub(replace, text)
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
        if name in wanted:
            pattern, replace = _PRESETS[name]
            hint = _HINTS[name]
            steps.append((name, pattern, replace, _MIN_LENGTH[name], hint, fast_search(pattern)))
    custom = _whole("custom")
    for index, pattern_text in enumerate(spec.get("patterns") or []):
        pattern = compile_pattern(pattern_text, f"patterns[{index}]")
        steps.append(("custom", pattern, custom, 1, None, fast_search(pattern)))
    return Sanitizer(tuple(steps), min((step[3] for step in steps), default=1))
