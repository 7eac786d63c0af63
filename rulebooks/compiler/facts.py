"""Rulebook facts: named booleans reported with each check, by code and from tool results.

A rule such as `if $order_paid` reads a fact. `resolve_facts` gives every fact its value for one
check:

- from code, `context`: a mapping, or a function called at each check that returns one; a value
  counts as true when it is a true boolean, a non-zero number or a non-empty text, list or
  mapping. A function that raises, or returns something that is not a mapping, raises
  `FactsUnavailable`: no fact is trusted rather than every fact silently false;
- from the agent file, `spec` (`facts:` in agent.yaml)::

      card_on_file: {from: get_order.card, same: order_id}
      order_paid:   {from: get_order.status == paid, same: order_id}

  `from: <tool>.<field>` is true when that field of the tool's most recent result in the
  conversation is true (as above); `<tool>.<field> == <value>` when it equals the value. The
  value is a bare word or a quoted text, `true` / `false` / `null`, or a number (which also
  equals the same digits as text). `same: <argument>` (or a list of them) binds the fact to
  the checked call: only a result of that tool whose call had the same value of each named
  argument counts, so one order's status never allows another order's refund.

Rules, each enforced here: until the tool answered, the fact is false; a fact is never read
from a tool listed in `reads_outside` (anyone could write what it returns); where code and file
report the same fact, the file wins; a fact nobody reports is absent, and the gate reads an
absent fact as false.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import FACTS_INVALID, FactsInvalid, FactsUnavailable
from .values import equals, fact_value

FACT_NAME = re.compile(r"[^\W\d]\w*")
_FROM = re.compile(
    r"""\s*(?P<tool>[^\W\d][\w-]*)\.(?P<path>[^\W\d]\w*(?:\.\w+)*)
        \s*(?:==\s*(?P<value>.+?))?\s*$""",
    re.VERBOSE,
)
KEYS = frozenset({"from", "same"})
#: Longest `from` a fact may have (`get_order.status == "paid"` is 26).
MAX_SOURCE_LENGTH = 500


@dataclass(frozen=True, slots=True)
class FactsIssue:
    """One problem of a `facts:` specification, named by its path (`facts.order_paid.from`)."""

    path: str
    message: str
    code: str = FACTS_INVALID

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class FactSource:
    """One fact read from a tool result."""

    name: str
    tool: str
    path: tuple[str, ...]
    compare: bool
    value: Any
    same: tuple[str, ...]


def _parse_value(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
        if number == number and number not in (float("inf"), float("-inf")):
            return number
    except ValueError:
        pass
    return text


def _parse_entry(name: str, entry: Any, issues: list[FactsIssue]) -> FactSource | None:
    base = f"facts.{name}"
    if not isinstance(name, str) or not FACT_NAME.fullmatch(name):
        issues.append(FactsIssue(base, f"`{name}` is not a fact name (letters, digits and `_`)"))
        return None
    if not isinstance(entry, Mapping):
        issues.append(FactsIssue(base, "a fact is a mapping like `{from: get_order.card}`"))
        return None
    for key in sorted(set(entry) - KEYS, key=str):
        issues.append(FactsIssue(f"{base}.{key}", f"`{key}` is not a fact setting"))
    source = entry.get("from")
    if source is None:
        issues.append(FactsIssue(f"{base}.from", "`from` is required"))
        return None
    if not isinstance(source, str):
        issues.append(FactsIssue(f"{base}.from", "`from` is a text like `get_order.status`"))
        return None
    if len(source) > MAX_SOURCE_LENGTH:
        # `_FROM`'s lazy value costs time quadratic in a run of spaces: bound the text first.
        message = f"`from` is at most {MAX_SOURCE_LENGTH} characters"
        issues.append(FactsIssue(f"{base}.from", message))
        return None
    match = _FROM.fullmatch(source)
    if match is None:
        issues.append(
            FactsIssue(
                f"{base}.from",
                f"`{source}` is not `<tool>.<field>` or `<tool>.<field> == <value>`",
            )
        )
        return None
    same_raw = entry.get("same", ())
    if isinstance(same_raw, str):
        same: tuple[str, ...] = (same_raw,)
    elif isinstance(same_raw, list | tuple) and all(isinstance(s, str) for s in same_raw):
        same = tuple(same_raw)
    else:
        issues.append(FactsIssue(f"{base}.same", "`same` is an argument name or a list of them"))
        return None
    for arg in same:
        if not FACT_NAME.fullmatch(arg):
            issues.append(FactsIssue(f"{base}.same", f"`{arg}` is not an argument name"))
            return None
    raw_value = match.group("value")
    return FactSource(
        name=name,
        tool=match.group("tool"),
        path=tuple(match.group("path").split(".")),
        compare=raw_value is not None,
        value=_parse_value(raw_value) if raw_value is not None else None,
        same=same,
    )


def parse_facts_spec(spec: Any) -> tuple[list[FactSource], list[FactsIssue]]:
    issues: list[FactsIssue] = []
    sources: list[FactSource] = []
    if spec is None:
        return sources, issues
    if not isinstance(spec, Mapping):
        return sources, [FactsIssue("facts", "`facts` is a mapping of fact names")]
    for name, entry in spec.items():
        parsed = _parse_entry(name, entry, issues)
        if parsed is not None:
            sources.append(parsed)
    return sources, issues


def validate_facts_spec(
    spec: Any, *, reads_outside: Collection[str] = (), tools: Collection[str] | None = None
) -> list[FactsIssue]:
    """Every problem of a `facts:` specification, each naming its path.

    With `reads_outside`, a fact read from such a tool is an error (it would always be false);
    with `tools`, a fact read from a tool the agent does not have is one too.
    """
    sources, issues = parse_facts_spec(spec)
    for source in sources:
        if source.tool in reads_outside:
            issues.append(
                FactsIssue(
                    f"facts.{source.name}.from",
                    f"`{source.tool}` reads outside content, so a fact is never read from it",
                )
            )
        elif tools is not None and source.tool not in tools:
            issues.append(
                FactsIssue(
                    f"facts.{source.name}.from", f"`{source.tool}` is not a tool of the agent"
                )
            )
    return issues


def _field(result: Any, path: Sequence[str]) -> tuple[bool, Any]:
    value = result
    for part in path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def _matches(value: Any, want: Any) -> bool:
    if equals(value, want):
        return True
    if isinstance(want, int | float) and not isinstance(want, bool) and isinstance(value, str):
        return value.strip() == str(want)
    return False


def read_fact(
    source: FactSource,
    *,
    arguments: Mapping[str, Any],
    results: Sequence[Any],
    reads_outside: Collection[str] = (),
) -> bool:
    """One fact from the conversation's tool results (false until the tool answered)."""
    if source.tool in reads_outside:
        return False
    for entry in reversed(results):
        if not isinstance(entry, Mapping) or entry.get("tool") != source.tool:
            continue
        called = entry.get("arguments")
        called = called if isinstance(called, Mapping) else {}
        if not all(
            arg in arguments and arg in called and equals(called[arg], arguments[arg])
            for arg in source.same
        ):
            continue
        if "result" not in entry:
            return False
        found, value = _field(entry["result"], source.path)
        if not found:
            return False
        if source.compare:
            return _matches(value, source.value)
        return fact_value(value)
    return False


def resolve_facts(
    spec: Mapping[str, Any] | None,
    *,
    arguments: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    reads_outside: Collection[str] = (),
    context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
) -> dict[str, bool]:
    """Every reported fact's value for the call being checked (see the module docstring)."""
    sources, issues = parse_facts_spec(spec)
    if issues:
        raise FactsInvalid(issues)
    out: dict[str, bool] = {}
    given: Any = context
    if callable(context):
        try:
            given = context()
        except Exception as exc:  # the user's function: any failure means no trusted facts
            raise FactsUnavailable(f"the context function failed: {exc}") from exc
    if given is not None:
        if not isinstance(given, Mapping):
            raise FactsUnavailable("the context must be a mapping of fact names to values")
        for name, value in given.items():
            out[str(name)] = fact_value(value)
    arguments = arguments if isinstance(arguments, Mapping) else {}
    if not isinstance(results, list | tuple):
        is_sequence = isinstance(results, Sequence) and not isinstance(results, str | bytes)
        results = list(results) if is_sequence else []
    for source in sources:
        out[source.name] = read_fact(
            source, arguments=arguments, results=results, reads_outside=reads_outside
        )
    return out
