"""Rule presets and autonomy levels, as data, and the function that hands out their rules.

A preset is a named list of rules; an autonomy level is a named list of presets. `tight`
ships exactly `block_ssrf_egress`: deny the cloud metadata endpoint and the RFC-1918 private
ranges on the egress stage. `balanced` still denies the metadata endpoint but only audits the
private ranges; `open` adds no rule. The rules are ordinary rules: they pass the validator and
take priority 10, so an exception written with a lower priority is matched first.
"""

from __future__ import annotations

import copy
from typing import Any

from firewall.engine.errors import UnknownPreset

METADATA_ENDPOINT = "169.254.169.254"
RFC1918_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")

_METADATA_RULE: dict[str, Any] = {
    "priority": 10,
    "name": "ssrf: deny the cloud metadata endpoint",
    "stage": "egress",
    "verdict": "deny",
    "egress": {"deny": [METADATA_ENDPOINT]},
    "notes": "instance credentials are one request away from any agent that can fetch a URL",
}
_PRIVATE_DENY_RULE: dict[str, Any] = {
    "priority": 10,
    "name": "ssrf: deny private ranges (RFC 1918)",
    "stage": "egress",
    "verdict": "deny",
    "egress": {"deny": list(RFC1918_RANGES)},
    "notes": "internal services are not reachable from agent calls",
}
_PRIVATE_AUDIT_RULE: dict[str, Any] = {
    **_PRIVATE_DENY_RULE,
    "name": "ssrf: audit private ranges (RFC 1918)",
    "verdict": "audit",
    "notes": "calls to internal services are let through and recorded",
}

#: Preset name -> the rules it adds.
PRESETS: dict[str, tuple[dict[str, Any], ...]] = {
    "block_ssrf_egress": (_METADATA_RULE, _PRIVATE_DENY_RULE),
    "block_cloud_metadata": (_METADATA_RULE,),
    "audit_private_egress": (_PRIVATE_AUDIT_RULE,),
}

#: Autonomy level -> the presets it ships, from the most guarded to the least.
AUTONOMY_LEVELS: dict[str, tuple[str, ...]] = {
    "tight": ("block_ssrf_egress",),
    "balanced": ("block_cloud_metadata", "audit_private_egress"),
    "open": (),
}


def preset_rules(name: str) -> list[dict[str, Any]]:
    """Fresh copies of the rules a preset or an autonomy level adds to a policy."""
    if name in PRESETS:
        return [copy.deepcopy(rule) for rule in PRESETS[name]]
    if name in AUTONOMY_LEVELS:
        return [rule for preset in AUTONOMY_LEVELS[name] for rule in preset_rules(preset)]
    known = ", ".join([*PRESETS, *AUTONOMY_LEVELS])
    raise UnknownPreset(f"unknown preset or autonomy level `{name}` (known: {known})")
