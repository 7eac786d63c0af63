"""The one table of credential recognisers: every shape of secret the product redacts or reports.

The firewall's sanitize presets, the console's redaction of events, audit rows, pages and logs,
and the proof's code checks all read this table, so a shape added here is recognised everywhere
at once. Every pattern is RE2 (linear time, whatever the input).

Each recogniser's pattern has three groups: what is kept before the secret (`Bearer `,
`https://user:`, `?token=`), the secret, and what is kept after it; a redaction replaces the
middle group only, by `[redacted:<name>]`. A recogniser may also carry a check on the secret
(a `Basic` value must be base64 of `user:password`), so that prose is not redacted.

Names of fields (`password`, `api_key`, `Authorization`, `clientSecret`, `csrftoken`) are read by
`secret_name`: camelCase and separators are normalised first, then a secret word must stand as a
word, or end the name.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2

from firewall.engine.regexes import fast_search


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False
    return options


_OPTIONS = _options()


def _basic_credentials(secret: str) -> bool:
    """A `Basic` value is base64 of `user:password`; a word of prose decodes to no colon."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


@dataclass(frozen=True, slots=True)
class Recogniser:
    """One shape of credential: its pattern, and cheap conditions met by any text it matches."""

    name: str
    what: str
    pattern: str
    hints: tuple[str, ...]
    min_length: int
    check: Callable[[str], bool] | None = None


_AWS_PREFIXES = (
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

#: The recognisers, in the order they are applied (the most specific first: a JWT after
#: `Bearer ` is named a JWT, a key inside an address's password is named by the address).
RECOGNISERS: tuple[Recogniser, ...] = (
    Recogniser(
        "private_key",
        "a PEM private key block",
        r"()(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?s:.*?)"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|$))()",
        ("private key",),
        27,
    ),
    Recogniser(
        "url_password",
        "the password of an address (`https://user:pass@host`)",
        r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@?#]+:)([^/\s@?#]+)(@)",
        ("://",),
        8,
    ),
    Recogniser(
        "url_token",
        "a secret in an address's query (`?token=`, `&api_key=`, `&sig=`)",
        r"(?i)([?&#;](?:[a-z0-9_.-]*(?:token|secret|passw(?:or)?d|api[_-]?key|apikey|signature|"
        r"credential)|key|sig|auth|pwd)=)([^&#\s\"'<>]+)()",
        ("=",),
        5,
    ),
    Recogniser(
        "slack_webhook",
        "a Slack incoming-webhook address",
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9/_-]{8,})()",
        ("hooks.slack.com",),
        35,
    ),
    Recogniser(
        "jwt",
        "a JSON Web Token (`eyJ...`.`eyJ...`.signature)",
        r"()(\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*)()",
        ("eyj",),
        18,
    ),
    Recogniser(
        "anthropic_key",
        "an Anthropic key (`sk-ant-...`)",
        r"()(\bsk-ant-[A-Za-z0-9_-]{20,})()",
        ("sk-ant-",),
        27,
    ),
    Recogniser(
        "openai_key",
        "an OpenAI-style key (`sk-...`, `sk-proj-...`, 20 characters or more)",
        r"()(\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})()",
        ("sk-",),
        23,
    ),
    Recogniser(
        "stalwart_key",
        "a Stalwart API key (`stw_...`)",
        r"()(\bstw_[A-Za-z0-9_-]{16,})()",
        ("stw_",),
        20,
    ),
    Recogniser(
        "github_token",
        "a GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`)",
        r"()(\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}))()",
        ("gh",),
        33,
    ),
    Recogniser(
        "slack_token",
        "a Slack token (`xoxb-`, `xoxp-`, `xoxa-`, ...)",
        r"()(\bxox[abposre]-[A-Za-z0-9-]{10,})()",
        ("xox",),
        15,
    ),
    Recogniser(
        "aws_access_key",
        "an AWS access key id (`AKIA...`)",
        r"()(\b(?:" + "|".join(_AWS_PREFIXES) + r")[A-Z0-9]{16}\b)()",
        tuple(prefix.lower() for prefix in _AWS_PREFIXES),
        20,
    ),
    Recogniser(
        "aws_secret_key",
        "an AWS secret key assigned to a name like `aws_secret_access_key`",
        r"(?i)((?:aws[_. -]?)?secret[_. -]?(?:access[_. -]?)?key[\"']?\s*(?:=>|[:=])\s*[\"']?)"
        r"([a-z0-9/+]{40})([^a-z0-9/+=]|$)",
        ("secret",),
        40,
    ),
    Recogniser(
        "bearer_token",
        "the token after `Bearer ` (16 characters or more)",
        r"(?i)(\bbearer\s+)([a-z0-9._~+/-]{16,}=*)()",
        ("bearer",),
        23,
    ),
    Recogniser(
        "basic_auth",
        "the credentials after `Basic ` (base64 of `user:password`)",
        r"(?i)(\bbasic\s+)([a-z0-9+/]{4,}={0,2})()",
        ("basic",),
        10,
        _basic_credentials,
    ),
)

#: The recognisers' names, in the order they are applied.
CREDENTIAL_NAMES: tuple[str, ...] = tuple(item.name for item in RECOGNISERS)

_COMPILED: dict[str, Any] = {item.name: re2.compile(item.pattern, _OPTIONS) for item in RECOGNISERS}
_BY_NAME: dict[str, Recogniser] = {item.name: item for item in RECOGNISERS}
_ANY = re2.compile("|".join(f"(?:{item.pattern})" for item in RECOGNISERS), _OPTIONS)
_SHORTEST = min(item.min_length for item in RECOGNISERS)
_FOUND = {name: fast_search(pattern) for name, pattern in _COMPILED.items()}
_ANY_FOUND = fast_search(_ANY)


def marker(label: str) -> str:
    """What stands where a secret was: `[redacted:<label>]`."""
    return f"[redacted:{label}]"


def _text(value: str) -> str:
    # RE2 reads UTF-8, which cannot carry a lone surrogate.
    return value if value.isascii() else value.encode("utf-8", "replace").decode("utf-8")


def _could_hold(item: Recogniser, text: str, lowered: str) -> bool:
    return len(text) >= item.min_length and any(hint in lowered for hint in item.hints)


def _replacement(item: Recogniser, label: str) -> Callable[[Any], str]:
    shown = marker(label)
    check = item.check

    def replace(match: Any) -> str:
        if check is not None and not check(match.group(2)):
            return match.group(0)
        return match.group(1) + shown + match.group(3)

    return replace


def recognise(text: str) -> list[str]:
    """The names of the recognisers that find a credential in `text`, in table order."""
    if len(text) < _SHORTEST:
        return []
    text = _text(text)
    if not _ANY_FOUND(text):
        return []
    lowered = text.lower()
    found = []
    for item in RECOGNISERS:
        if not _could_hold(item, text, lowered):
            continue
        if not _FOUND[item.name](text):
            continue
        if item.check is None or any(
            item.check(match.group(2)) for match in _COMPILED[item.name].finditer(text)
        ):
            found.append(item.name)
    return found


def redact_text(
    text: str, *, names: tuple[str, ...] | None = None, label: str | None = None
) -> tuple[str, list[str]]:
    """`text` with every credential replaced, and the names of the recognisers that replaced one.

    `names` limits the table to some recognisers (a sanitize rule's presets); `label` writes one
    label in every marker instead of each recogniser's name.
    """
    if len(text) < _SHORTEST:
        return text, []
    text = _text(text)
    if not _ANY_FOUND(text):
        return text, []
    lowered = text.lower()
    hits = []
    for item in RECOGNISERS:
        if names is not None and item.name not in names:
            continue
        if not _could_hold(item, text, lowered) or not _FOUND[item.name](text):
            continue
        cleaned = _COMPILED[item.name].sub(_replacement(item, label or item.name), text)
        if cleaned != text:
            hits.append(item.name)
            text = cleaned
            lowered = text.lower()
    return text, hits


def recogniser(name: str) -> Recogniser:
    """The recogniser called `name` (a `KeyError` for a name not in the table)."""
    return _BY_NAME[name]


_CAMEL = re2.compile(r"([a-z0-9])([A-Z])", _OPTIONS)
_SEPARATORS = re2.compile(r"[^a-z0-9]+", _OPTIONS)
_SECRET_WORDS = re2.compile(
    r"(?:^|_)(?:password|passwd|passphrase|pwd|secret|token|api_?key|apikey|private_?key|"
    r"access_?key|secret_?key|auth_?key|client_?secret|authori[sz]ation|credentials?|cookie|"
    r"signature|otp)(?:_|$)|(?:password|passwd|secret|token|apikey)$|(?:^|_)pass$",
    _OPTIONS,
)


def secret_name(name: str) -> bool:
    """Whether a field, key or variable called `name` holds a secret by its name alone."""
    # Names repeat far more than they vary (every event's `call`, `tool`, `arguments`...): each
    # is read once per process.
    return _secret_name(name) if isinstance(name, str) else False


@functools.lru_cache(maxsize=8192)
def _secret_name(name: str) -> bool:
    if not name or len(name) > 200:
        return False
    words = _SEPARATORS.sub("_", _CAMEL.sub(r"\1_\2", _text(name)).lower())
    return _SECRET_WORDS.search(words) is not None


def compiled(name: str | None = None) -> Any:
    """The compiled RE2 pattern of one recogniser, or of the whole table when `name` is None."""
    return _ANY if name is None else _COMPILED[name]


def could_hold(name: str | None, text: str) -> bool:
    """A cheap necessary condition: False means the recogniser (or the table) cannot match."""
    lowered = text.lower()
    if name is None:
        return any(_could_hold(item, text, lowered) for item in RECOGNISERS)
    return _could_hold(_BY_NAME[name], text, lowered)


def shortest(name: str | None = None) -> int:
    """The shortest text one recogniser (or any of the table) can match."""
    return _SHORTEST if name is None else _BY_NAME[name].min_length


#: What a secret key's value is replaced by in a redacted structure.
REDACTED = "[redacted]"


def redact_value(value: Any, *, secret_keys: frozenset[str] = frozenset()) -> Any:
    """A copy of a JSON-like `value` with the values of secret keys (by `secret_name`, or named in
    `secret_keys`) replaced by `[redacted]`, and every credential inside a string replaced by
    `[redacted:<shape>]`, a key's too (its value is then `[redacted]`). The console's events and
    the runtime's decision logs both use it."""
    return _redacted(value, secret_keys)


def redact_jsonable(value: Any, *, secret_keys: frozenset[str] = frozenset()) -> Any:
    """`redact_value` of what `json.loads(json.dumps(value, default=str))` makes of `value`, in
    one walk: made of JSON's own types (a tuple a list, an integer key `"1"`, `True` as a key
    `"true"`, any other object its `str()`), and redacted as `redact_value` redacts. The
    decision logs' records are made with it, one per decision."""
    return _redacted(value, secret_keys, plain=True)


def _json_key(key: Any) -> str:
    """A dict key as `json.dumps` writes it (str, int, float, bool, None; others by `str`)."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is True or key is False or key is None:
        return json.dumps(key)
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return json.dumps(float(key))
    return str(key)


#: Short strings found clean are remembered: a record's short strings (`typed`, a tool's name,
#: `turn 0`, a rule's name) repeat from one record to the next. One that held a secret is not
#: kept, so the cache never holds a secret; past `_CLEAN_MAX` strings it starts again.
_SHORT = 64
_CLEAN_MAX = 16384
_CLEAN: set[str] = set()


def _short_redacted(text: str) -> str:
    if text in _CLEAN:
        return text
    cleaned = redact_text(text)[0]
    if cleaned == text:
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN.add(text)
    return cleaned


# Emptied like the `functools` caches (the mutation runs start each mutant without them).
_short_redacted.cache_clear = _CLEAN.clear  # type: ignore[attr-defined]
_short_redacted.cache_info = lambda: len(_CLEAN)  # type: ignore[attr-defined]


def _redacted(value: Any, secret_keys: frozenset[str], plain: bool = False) -> Any:
    # On every decision's path (each record of the decision logs, each event): most of a record
    # is short strings and numbers, so those leave before any call. `plain`: each value is also
    # turned into what a JSON round trip makes of it on the way (`redact_jsonable`).
    kind = type(value)
    if kind is str:
        if len(value) < _SHORTEST:
            return value
        return _short_redacted(value) if len(value) <= _SHORT else redact_text(value)[0]
    if kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = key if type(key) is str else _json_key(key) if plain else str(key)
            # A credential written where a name goes (`{"sk-ant-...": 1}`): the key is redacted
            # as a string is, and its value with it (two such keys then keep nothing apart).
            shown = name if len(name) < _SHORTEST else _redacted(name, secret_keys)
            if shown != name:
                out[shown] = REDACTED
            elif name in secret_keys or secret_name(name):
                out[name] = REDACTED
            else:
                out[name] = _redacted(item, secret_keys, plain)
        return out
    if isinstance(value, list | tuple):
        return [_redacted(item, secret_keys, plain) for item in value]
    if isinstance(value, str):  # a subclass: its characters, as json writes them
        return _redacted(str.__str__(value), secret_keys, plain)
    if not plain:
        return value
    if isinstance(value, int):  # an IntEnum: json writes the number
        return int(int.__repr__(value))
    if isinstance(value, float):
        return float(value)
    return _redacted(str(value), secret_keys, plain)
