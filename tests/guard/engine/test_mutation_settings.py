"""Settings of the tool check where mutation testing found them unguarded.

The principle: settings that are malformed are refused with every issue, each naming its field; the
licence may come flat as the console stores it (chapter 45 step 1: with the licence lapsed a write
is refused, or every call where the tenant says so); the `address` setting widens or narrows the
admission check that keeps calls away from addresses the installation does not allow.
"""

from __future__ import annotations

from typing import Any

import pytest

from guard.engine import SettingsInvalid, ToolCheck, load_settings
from guard.engine.checks import NAMES

from .conftest import KEY, NOW, lab_catalogue


def issues(data: Any) -> list[str]:
    with pytest.raises(SettingsInvalid) as caught:
        load_settings(data, known_checks=NAMES)
    return [str(issue) for issue in caught.value.issues]


INVALID_SETTINGS = [
    ([], ["settings must be a mapping"]),
    ({"infer": "yes"}, ["infer: must be true or false"]),
    (
        {"tool_kinds": ["get_order"]},
        ["tool_kinds: must be the tool-kinds file's text or a mapping"],
    ),
    (
        {"label_trust": ["web"]},
        ["label_trust: must map labels to one of outside, internal, trusted"],
    ),
    ({"token_ttl": 1.5}, ["token_ttl: must be a whole number of seconds, more than 0"]),
    ({"token_ttl": True}, ["token_ttl: must be a whole number of seconds, more than 0"]),
    ({"token_ttl": -5}, ["token_ttl: must be a whole number of seconds, more than 0"]),
    ({"checks": "address"}, ["checks: must be a list of check names"]),
    ({"checks": ["address", 7]}, ["checks: must be a list of check names"]),
    ({"licence": "2026-12-31"}, ["licence: must be `{valid_until, on_lapse}`"]),
    (
        {"licence": {"valid_until": "2026-12-31", "grace": 3}},
        ["licence: must be `{valid_until, on_lapse}`"],
    ),
    (
        {"licence": {"valid_until": "2026-12-31", "on_lapse": "refuse_reads"}},
        ["licence.on_lapse: must be refuse_writes or refuse_all, not `refuse_reads`"],
    ),
    (
        {"licence_valid_until": "2026-12-31", "licence_on_lapse": "warn"},
        ["licence.on_lapse: must be refuse_writes or refuse_all, not `warn`"],
    ),
    ({"address": ["10.0.0.0/8"]}, ["address: must be `{allow, deny}`"]),
    ({"address": {"allow": [], "block": []}}, ["address: must be `{allow, deny}`"]),
    (
        {"address": {"allow": "10.1.2.3", "deny": "10.0.0.0/8"}},
        [
            "address.allow: must be a list of networks or host names",
            "address.deny: must be a list of networks or host names",
        ],
    ),
    (
        {"address": {"deny": ["", "10.0.0.0/8", 7]}},
        [
            "address.deny[0]: must be a network or a host name",
            "address.deny[2]: must be a network or a host name",
        ],
    ),
]


@pytest.mark.parametrize(("data", "expected"), INVALID_SETTINGS)
def test_malformed_settings_are_refused_with_every_issue_at_its_field(data, expected):
    assert issues(data) == expected


def test_valid_settings_load_as_written():
    settings = load_settings(
        {
            "infer": True,
            "token_ttl": 1,
            "checks": ["address", "arguments"],
            "tool_kinds": "get_order: read\n",
        },
        known_checks=NAMES,
    )
    assert settings.infer is True
    assert settings.token_ttl == 1
    assert settings.checks == {"address", "arguments"}
    assert settings.tool_kinds == "get_order: read\n"
    assert load_settings({}, known_checks=NAMES).infer is False


def test_an_invalid_licence_is_not_half_loaded():
    # Both fields wrong, or one: no licence comes out of it either way, only the issues.
    assert issues({"licence": {"valid_until": "soon", "on_lapse": "refuse_all"}}) == [
        "licence.valid_until: must be a date (YYYY-MM-DD), not `soon`"
    ]


def test_a_flat_licence_without_on_lapse_refuses_writes():
    settings = load_settings({"licence_valid_until": "2026-02-28"}, known_checks=NAMES)
    assert settings.licence.on_lapse == "refuse_writes"


# -- the address setting, through the check ------------------------------------------------------


def fetch(url: str) -> dict[str, Any]:
    return {"tool": "fetch_page", "arguments": {"url": url}}


def decide(address: dict[str, Any], url: str):
    """`fetch_page` sends out, so a call the address check admits is confirmed, not refused."""
    check = ToolCheck(lab_catalogue(), key=KEY, settings={"address": address})
    return check.check(fetch(url), session=check.new_history("s"), now=NOW)


def test_a_denied_network_refuses_a_public_address_and_names_it_denied():
    decision = decide({"deny": ["93.184.216.0/24"]}, "https://93.184.216.34/a")
    assert (decision.decision, decision.reasons) == ("refuse", ("disallowed_address",))
    assert decision.detail["range"] == "denied"
    assert decide({}, "https://93.184.216.34/a").decision == "confirm"


def test_a_network_written_with_host_bits_set_is_still_the_network():
    decision = decide({"deny": ["93.184.216.34/24"]}, "https://93.184.216.99/a")
    assert decision.detail["range"] == "denied"
    allowed = decide({"allow": ["10.1.2.3/8"]}, "http://10.9.9.9/a")
    assert allowed.decision == "confirm"


def test_an_allowed_network_lets_a_private_address_through_and_only_that_one():
    address = {"allow": ["10.1.2.3/32"]}
    assert decide(address, "http://10.1.2.3/a").decision == "confirm"
    assert decide(address, "http://10.1.2.4/a").detail["range"] == "private"


def test_denied_and_allowed_names_are_read_without_case_or_a_trailing_dot():
    denied = decide({"deny": ["Corp.Example."]}, "https://wiki.corp.example/a")
    assert (denied.reasons, denied.detail["range"]) == (("disallowed_address",), "denied_name")
    allowed = decide({"allow": ["Metadata.Google.Internal."]}, "http://metadata.google.internal/")
    assert allowed.decision == "confirm"


def test_an_allowed_name_is_not_denied_and_a_denied_one_is_not_allowed():
    address = {"allow": ["ok.example"], "deny": ["bad.example"]}
    assert decide(address, "https://ok.example/a").decision == "confirm"
    assert decide(address, "https://bad.example/a").detail["range"] == "denied_name"


def test_every_entry_of_both_lists_is_read_after_a_name():
    address = {"allow": ["ok.example", "10.1.2.3"], "deny": ["bad.example", "93.184.216.0/24"]}
    assert decide(address, "http://10.1.2.3/a").decision == "confirm"
    assert decide(address, "https://93.184.216.34/a").detail["range"] == "denied"


def test_an_issue_in_allow_does_not_stop_deny_being_read():
    assert issues({"address": {"allow": "x", "deny": [7]}}) == [
        "address.allow: must be a list of networks or host names",
        "address.deny[0]: must be a network or a host name",
    ]
