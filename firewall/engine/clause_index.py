"""Clause indexes: the rules of one glob bucket found from the call's argument values.

A bucket of the compiled index (the rules that share one tool-glob key, such as every rule
whose glob is `*`) can hold hundreds of broad rules: "any tool whose `$.url` matches this
pattern", "any call to 10.0.0.0/8". Walking them costs one clause test per rule. Here each
rule that has a clause an index can answer is filed under one such clause, its *key clause*,
and a call's candidates are read off the arguments instead:

- `eq` and `in`: a hash table per path from the JSON key of a value (`json_key`: equal keys
  exactly when `json_equal` says so) to the rules; `contains` over an array actual uses a
  second table keyed by element;
- `regex`, and `contains` / `starts_with` / `ends_with` with a string: one RE2 `Set` per path
  holding every such rule's pattern (literals escaped, `^...` and `...$` for the anchored
  ones), so one scan of the value answers all of them; the set also holds the empty pattern,
  which matches every text: a scan that does not report it failed (RE2's matcher ran out of
  memory) and every rule of the set becomes a candidate instead, so a failure costs speed,
  never a missed rule;
- `cidr`: per address version and prefix length, a table from network to rules, looked up
  with the call's address (every spelling normalised by `ip_key`) under each mask in use.

The index is only a filter: a candidate's key clause may hold or not (a pattern with a
lone surrogate, a scan that failed), and every candidate still goes through all of its
clauses, its skill glob, its egress lists and its payload checks, one rule at a time, in rank
order. A rule is never filed when its clauses have a problem (it must report the problem when
evaluation reaches it); those and the rules with no key clause (`neq`, `not_in`, `exists`,
numbers) stay on the bucket's plain list. What is never missed: a key clause holds only when
its path resolves, which is where the lookup starts, and then the tables give every rule
whose key clause holds (a superset for the RE2 set), so the first rule by rank that fires is
the reference scan's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import re2

from firewall.engine.addresses import ip_key, network_key, parse_network
from firewall.engine.jsonpath import MISSING, parse_path, resolve
from firewall.engine.values import MAX_VALUE_DEPTH, is_number


class Ranked(Protocol):
    """What the index needs of a rule: its place in first-match order."""

    rank: int


#: Key clause preference, most selective (and cheapest to answer) first.
_PREFERENCE = {"eq": 0, "in": 1, "cidr": 2, "starts_with": 3, "ends_with": 3, "contains": 4}
_REGEX_PREFERENCE = 5

_NULL = ("null",)
_TRUE = ("bool", True)
_FALSE = ("bool", False)

#: The set's answers are remembered for this many texts per path (forgotten all at once when
#: full), each of at most this length.
_MAX_REMEMBERED_TEXTS = 4096
_MAX_REMEMBERED_TEXT = 256

_SET_OPTIONS = re2.Options()
_SET_OPTIONS.log_errors = False
# the set's program and its matcher's cache grow with the patterns; the budget is an upper
# bound (memory is taken as the scans need it), and a scan that exceeds it is caught below
_SET_OPTIONS.max_mem = 256 << 20


def json_key(value: Any, depth: int = 0) -> Any:
    """A hashable key such that two JSON values have equal keys exactly when `json_equal` holds.

    Strings and numbers are their own keys (`1` and `1.0` are equal, as in JSON); booleans and
    null are tagged so that `true` is not `1`; arrays and objects become tagged tuples and
    frozensets. Anything that is not JSON, or nests deeper than a rule's value may, equals no
    rule's value and gets None.
    """
    cls = value.__class__
    if cls is str or cls is int or cls is float:
        return value
    if value is None:
        return _NULL
    if cls is bool:
        return _TRUE if value else _FALSE
    if isinstance(value, str):
        return str(value)
    if is_number(value):
        return float(value) if isinstance(value, float) else int(value)
    if depth >= MAX_VALUE_DEPTH:
        return None
    if isinstance(value, list):
        keys = []
        for item in value:
            key = json_key(item, depth + 1)
            if key is None:
                return None
            keys.append(key)
        return ("list", tuple(keys))
    if isinstance(value, dict):
        pairs = []
        for name, item in value.items():
            key = json_key(item, depth + 1)
            if key is None:
                return None
            pairs.append((name, key))
        return ("dict", frozenset(pairs))
    return None


def _escape(literal: str) -> str:
    """`literal` as an RE2 pattern (kept as it is when RE2 could not read it anyway)."""
    try:
        return re2.escape(literal)
    except UnicodeError:
        return literal


def _is_composite(key: Any) -> bool:
    return key.__class__ is tuple and key[0] in ("list", "dict")


def key_clause(clauses: Iterable[Any]) -> dict[str, Any] | None:
    """The clause to file a rule under (its clauses already checked), or None if none can be."""
    best: dict[str, Any] | None = None
    best_preference = _REGEX_PREFERENCE + 1
    for clause in clauses:
        op = clause["op"]
        if op == "regex":
            preference = _REGEX_PREFERENCE
        elif op in _PREFERENCE:
            preference = _PREFERENCE[op]
            if op in ("contains", "starts_with", "ends_with") and clause["value"] in ("", []):
                preference = _REGEX_PREFERENCE  # matches nearly everything: the last resort
        else:
            continue
        if preference < best_preference:
            best, best_preference = clause, preference
    return best


class _PathIndex:
    """The key clauses on one path."""

    __slots__ = (
        "equal",
        "equal_composite",
        "element",
        "element_composite",
        "text_rules",
        "text_always",
        "text_match",
        "networks",
        "text_seen",
    )

    def __init__(self) -> None:
        self.equal: dict[Any, list[Any]] = {}
        self.equal_composite = False
        self.element: dict[Any, list[Any]] = {}
        self.element_composite = False
        #: The set's pattern i + 1 is `text_rules[i]`'s (pattern 0 matches every text).
        self.text_rules: list[Any] = []
        #: Literals RE2 cannot read (a lone surrogate): candidates of every string.
        self.text_always: list[Any] = []
        #: The compiled set's matcher, or None when it could not be built.
        self.text_match: Callable[[bytes], Any] | None = None
        self.networks: dict[int, list[tuple[int, dict[int, list[Any]]]]] = {}
        #: The set's answers for texts seen lately: text -> bit mask over `text_rules`.
        self.text_seen: dict[str, int] = {}

    def add(self, rule: Any, op: str, value: Any, patterns: list[str]) -> None:
        if op == "eq" or op == "in":
            keys = [json_key(value)] if op == "eq" else [json_key(item) for item in value]
            for key in dict.fromkeys(keys):  # `[1, 1.0]` files the rule once
                self.equal.setdefault(key, []).append(rule)
                self.equal_composite = self.equal_composite or _is_composite(key)
            return
        if op == "cidr":
            version, base, mask = network_key(parse_network(value))
            tables = self.networks.setdefault(version, [])
            known = [table for known_mask, table in tables if known_mask == mask]
            if known:
                table = known[0]
            else:
                table = {}
                tables.append((mask, table))
            table.setdefault(base, []).append(rule)
            return
        if op == "contains":
            key = json_key(value)
            self.element.setdefault(key, []).append(rule)
            self.element_composite = self.element_composite or _is_composite(key)
            if not isinstance(value, str):
                return  # only an array can contain it
            pattern = _escape(value)
        elif op == "starts_with":
            pattern = "^" + _escape(value)
        elif op == "ends_with":
            pattern = _escape(value) + "$"
        else:
            pattern = value
        if not pattern.isascii():
            try:
                pattern.encode("utf-8")
            except UnicodeEncodeError:
                self.text_always.append(rule)
                return
        self.text_rules.append(rule)
        patterns.append(pattern)

    def equal_only(self) -> dict[Any, list[Any]] | None:
        """The `eq`/`in` table when the path has no other key clause, else None."""
        if self.element or self.text_rules or self.text_always or self.networks:
            return None
        return self.equal

    def build_set(self, patterns: list[str]) -> None:
        if not patterns:
            return
        text_set = re2.Set.SearchSet(_SET_OPTIONS)
        try:
            text_set.Add("")
            for pattern in patterns:
                text_set.Add(pattern)
            text_set.Compile()
        except (re2.error, UnicodeError):
            return  # no set: every text rule is a candidate of every string (slower, not wrong)
        # the binding's own matcher, without the wrapper's conversions; an empty answer from
        # it or from the wrapper (None) both read as a failed scan below
        self.text_match = getattr(text_set, "_set", text_set).Match

    def collect(self, actual: Any, found: list[Any]) -> None:
        """Add the rules whose key clause may hold for `actual` (the path's value) to `found`."""
        if isinstance(actual, str):
            if self.equal:
                rules = self.equal.get(actual)
                if rules is not None:
                    found.extend(rules)
            if self.text_rules:
                self._scan(actual, found)
            if self.text_always:
                found.extend(self.text_always)
            if self.networks:
                address = ip_key(actual)
                if address is not None:
                    for mask, table in self.networks.get(address[0], ()):
                        rules = table.get(address[1] & mask)
                        if rules is not None:
                            found.extend(rules)
            return
        if self.equal and (self.equal_composite or not isinstance(actual, list | dict)):
            rules = self.equal.get(json_key(actual))
            if rules is not None:
                found.extend(rules)
        if self.element and isinstance(actual, list):
            element = self.element
            composite = self.element_composite
            for item in actual:
                if not composite and isinstance(item, list | dict):
                    continue
                rules = element.get(json_key(item))
                if rules is not None:
                    found.extend(rules)

    def _scan(self, text: str, found: list[Any]) -> None:
        # one call into RE2's set costs about half a microsecond before it reads a byte, and
        # calls repeat their values: the rules a text selects are remembered, as a bit mask
        # over `text_rules` (an int, so that remembering keeps no container alive for the
        # garbage collector); longer texts than `_MAX_REMEMBERED_TEXT` are scanned every time
        seen = self.text_seen
        mask = seen.get(text)
        if mask is None:
            mask = self._scan_mask(text)
            if mask is None:  # the scan failed: every rule of the set, and nothing remembered
                found.extend(self.text_rules)
                return
            if len(text) <= _MAX_REMEMBERED_TEXT:
                if len(seen) >= _MAX_REMEMBERED_TEXTS:
                    seen.clear()
                seen[text] = mask
        rules = self.text_rules
        while mask:
            low = mask & -mask
            found.append(rules[low.bit_length() - 1])
            mask ^= low

    def _scan_mask(self, text: str) -> int | None:
        """The text rules the set selects for `text`, as a bit mask; None if the scan failed."""
        # a lone surrogate reads as `?`, as the regex clauses read it; the literals checked
        # afterwards with `in` hold no surrogate (or they would not be in the set), so the
        # scan can add a candidate that does not hold, never miss one that does
        match = self.text_match
        matches = match(text.encode(errors="replace")) if match is not None else None
        if not matches or 0 not in matches:
            return None
        mask = 0
        for number in matches:
            if number:
                mask |= 1 << (number - 1)
        return mask


_Lookup = tuple[str | None, tuple[str | int, ...], _PathIndex]


def _rank(rule: Ranked) -> int:
    return rule.rank


class ClauseIndex:
    """The rules of one bucket filed under their key clauses; `lookup` gives a call's candidates."""

    __slots__ = ("by_key", "deep", "keys", "size")

    def __init__(self, filed: list[tuple[Any, dict[str, Any]]]) -> None:
        paths: dict[tuple[str | int, ...], _PathIndex] = {}
        patterns: dict[tuple[str | int, ...], list[str]] = {}
        for rule, clause in filed:
            steps = parse_path(clause["path"])
            index = paths.get(steps)
            if index is None:
                index = paths[steps] = _PathIndex()
                patterns[steps] = []
            index.add(rule, clause["op"], clause.get("value"), patterns[steps])
        for steps, index in paths.items():
            index.build_set(patterns[steps])
        #: Paths of one top-level key, looked up with `arguments.get`.
        self.by_key: dict[str, _PathIndex] = {}
        #: Every other path (`$`, `$.a.b`, `$.l[0]`), resolved step by step.
        self.deep: list[tuple[tuple[str | int, ...], _PathIndex]] = []
        for steps, index in paths.items():
            if len(steps) == 1 and steps[0].__class__ is str:
                self.by_key[str(steps[0])] = index
            else:
                self.deep.append((steps, index))
        #: `by_key` as (key, index, its `eq`/`in` table when that is all it holds): a string
        #: value of such a key is looked up here at once, the common broad rule
        self.keys = [(name, index, index.equal_only()) for name, index in self.by_key.items()]
        self.size = len(filed)

    def lookup(self, arguments: dict[str, Any]) -> list[Any]:
        """The filed rules whose key clause may hold for these (object) arguments, by rank."""
        found: list[Any] = []
        by_key = self.by_key
        if by_key:
            if len(arguments) < len(by_key):
                for name, actual in arguments.items():
                    index = by_key.get(name)
                    if index is not None:
                        index.collect(actual, found)
            else:
                for name, index, equal in self.keys:
                    actual = arguments.get(name, MISSING)
                    if actual is MISSING:
                        continue
                    if equal is not None and actual.__class__ is str:
                        rules = equal.get(actual)
                        if rules is not None:
                            found.extend(rules)
                    else:
                        index.collect(actual, found)
        for steps, index in self.deep:
            actual = resolve(steps, arguments)
            if actual is not MISSING:
                index.collect(actual, found)
        if len(found) > 1:
            found = sorted(dict.fromkeys(found), key=_rank)
        return found


def split_bucket(
    rules: list[Any],
    clauses_of: Callable[[Any], list[Any] | None],
    minimum: int,
) -> tuple[list[Any], ClauseIndex | None]:
    """A bucket's rules (in rank order) as (the plain list, the index of the others).

    `clauses_of(rule)` gives the rule's clauses when they may be filed (none has a problem),
    or None. Below `minimum` fileable rules the bucket stays one plain list.
    """
    filed: list[tuple[Any, dict[str, Any]]] = []
    plain: list[Any] = []
    for rule in rules:
        clauses = clauses_of(rule)
        clause = key_clause(clauses) if clauses else None
        if clause is None:
            plain.append(rule)
        else:
            filed.append((rule, clause))
    if not filed or len(filed) < minimum:
        return rules, None
    return plain, ClauseIndex(filed)
