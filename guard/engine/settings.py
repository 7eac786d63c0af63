"""The settings the tool check decides under, loaded strictly from a mapping.

    {"taint_policy": "confirm",                  # or "refuse"
     "licence": {"valid_until": "2026-12-31", "on_lapse": "refuse_writes"},   # or "refuse_all"
     "infer": false,                             # read the kind of unmarked tools from their words
     "tool_kinds": "get_order: read\n...",       # the tool-kinds file's content, which always wins
     "label_trust": {"crm": "internal"},         # trust of labels; any other label is `outside`
     "address": {"allow": ["10.1.2.3/32", "intranet.example"], "deny": ["203.0.113.0/24",
     "corp.example"]}, "token_ttl": 900,                           # seconds a confirmation token
     lives "checks": null}                             # the checks switched on by default (null:
     all)

The licence may also be given flat, as the console's settings store it: `licence_valid_until` and
`licence_on_lapse`. Without a licence the check never answers `licence_lapsed`. A licence lapses the
day after `valid_until` (UTC).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .addresses import Network
from .errors import Issue, SettingsInvalid
from .taint import TRUST_LEVELS
from .tokens import DEFAULT_TTL_SECONDS

TAINT_POLICIES = ("confirm", "refuse")
ON_LAPSE = ("refuse_writes", "refuse_all")
SETTINGS_KEYS = frozenset(
    {
        "taint_policy", "licence", "licence_valid_until", "licence_on_lapse", "infer",
        "tool_kinds", "label_trust", "address", "token_ttl", "checks",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Licence:
    valid_until: dt.date
    on_lapse: str = "refuse_writes"

    def lapsed(self, today: dt.date) -> bool:
        return today > self.valid_until


@dataclass(frozen=True)
class Settings:
    taint_policy: str = "confirm"
    licence: Licence | None = None
    infer: bool = False
    tool_kinds: str | Mapping[str, Any] | None = None
    label_trust: Mapping[str, str] = field(default_factory=dict)
    address_allow: tuple[Network, ...] = ()
    address_allow_names: frozenset[str] = frozenset()
    address_deny: tuple[tuple[str, Network], ...] = ()
    address_deny_names: frozenset[str] = frozenset()
    token_ttl: int = DEFAULT_TTL_SECONDS
    checks: frozenset[str] | None = None


def _date(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return None
    return None


def _licence(data: Mapping[str, Any], issues: list[Issue]) -> Licence | None:
    raw = data.get("licence")
    if raw is None and "licence_valid_until" in data:
        raw = {
            "valid_until": data["licence_valid_until"],
            "on_lapse": data.get("licence_on_lapse", "refuse_writes"),
        }
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) - {"valid_until", "on_lapse"}:
        issues.append(Issue("licence", "must be `{valid_until, on_lapse}`"))
        return None
    until = _date(raw.get("valid_until"))
    if until is None:
        issues.append(
            Issue(
                "licence.valid_until",
                f"must be a date (YYYY-MM-DD), not `{raw.get('valid_until')}`",
            )
        )
    on_lapse = raw.get("on_lapse", "refuse_writes")
    if on_lapse not in ON_LAPSE:
        issues.append(
            Issue("licence.on_lapse", f"must be refuse_writes or refuse_all, not `{on_lapse}`")
        )
    if until is None or on_lapse not in ON_LAPSE:
        return None
    return Licence(until, on_lapse)


def _address(raw: Any, issues: list[Issue]):
    allow: list[Network] = []
    allow_names: set[str] = set()
    deny: list[tuple[str, Network]] = []
    deny_names: set[str] = set()
    if raw is None:
        return (), frozenset(), (), frozenset()
    if not isinstance(raw, Mapping) or set(raw) - {"allow", "deny"}:
        issues.append(Issue("address", "must be `{allow, deny}`"))
        return (), frozenset(), (), frozenset()
    for side in ("allow", "deny"):
        items = raw.get(side, [])
        if not isinstance(items, list):
            issues.append(Issue(f"address.{side}", "must be a list of networks or host names"))
            continue
        for index, item in enumerate(items):
            if not isinstance(item, str) or not item:
                issues.append(Issue(f"address.{side}[{index}]", "must be a network or a host name"))
                continue
            try:
                network = ipaddress.ip_network(item, strict=False)
            except ValueError:
                name = item.strip().lower().rstrip(".")
                (allow_names if side == "allow" else deny_names).add(name)
                continue
            if side == "allow":
                allow.append(network)
            else:
                deny.append(("denied", network))
    return tuple(allow), frozenset(allow_names), tuple(deny), frozenset(deny_names)


def load_settings(
    data: Mapping[str, Any] | Settings | None, *, known_checks: frozenset[str]
) -> Settings:
    """Load settings strictly; raise `SettingsInvalid` with every issue."""
    if isinstance(data, Settings):
        return data
    if data is None:
        return Settings()
    issues: list[Issue] = []
    if not isinstance(data, Mapping):
        raise SettingsInvalid([Issue("", "settings must be a mapping")])
    for key in sorted(set(data) - SETTINGS_KEYS):
        issues.append(Issue(str(key), "is not a setting of the tool check"))
    taint_policy = data.get("taint_policy", "confirm")
    if taint_policy not in TAINT_POLICIES:
        issues.append(Issue("taint_policy", f"must be confirm or refuse, not `{taint_policy}`"))
    infer = data.get("infer", False)
    if not isinstance(infer, bool):
        issues.append(Issue("infer", "must be true or false"))
    tool_kinds = data.get("tool_kinds")
    if tool_kinds is not None and not isinstance(tool_kinds, (str, Mapping)):
        issues.append(Issue("tool_kinds", "must be the tool-kinds file's text or a mapping"))
    label_trust = data.get("label_trust", {})
    if not isinstance(label_trust, Mapping) or not all(
        level in TRUST_LEVELS for level in label_trust.values()
    ):
        issues.append(Issue("label_trust", f"must map labels to one of {', '.join(TRUST_LEVELS)}"))
        label_trust = {}
    ttl = data.get("token_ttl", DEFAULT_TTL_SECONDS)
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
        issues.append(Issue("token_ttl", "must be a whole number of seconds, more than 0"))
    checks = data.get("checks")
    if checks is not None:
        if not isinstance(checks, list) or not all(isinstance(name, str) for name in checks):
            issues.append(Issue("checks", "must be a list of check names"))
            checks = None
        else:
            for name in checks:
                if name not in known_checks:
                    issues.append(
                        Issue("checks", f"names a check the tool check does not have: `{name}`")
                    )
    licence = _licence(data, issues)
    allow, allow_names, deny, deny_names = _address(data.get("address"), issues)
    if issues:
        raise SettingsInvalid(issues)
    return Settings(
        taint_policy=taint_policy,
        licence=licence,
        infer=infer,
        tool_kinds=tool_kinds,
        label_trust=dict(label_trust),
        address_allow=allow,
        address_allow_names=allow_names,
        address_deny=deny,
        address_deny_names=deny_names,
        token_ttl=ttl,
        checks=frozenset(checks) if checks is not None else None,
    )
