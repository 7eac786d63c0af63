"""Presets and autonomy levels: data, valid rules, and what they block."""

from __future__ import annotations

import pytest

from firewall.engine import (
    AUTONOMY_LEVELS,
    PRESETS,
    UnknownPreset,
    compile_policy,
    preset_rules,
    validate_policy,
)


def policy_with(name: str, default: str = "allow") -> dict:
    return {"name": name, "default_verdict": default, "rules": preset_rules(name)}


@pytest.mark.parametrize("name", [*PRESETS, *AUTONOMY_LEVELS])
def test_every_preset_and_level_is_a_valid_policy(name: str) -> None:
    assert validate_policy(policy_with(name)) == []


def test_tight_ships_exactly_block_ssrf_egress() -> None:
    assert AUTONOMY_LEVELS["tight"] == ("block_ssrf_egress",)
    assert preset_rules("tight") == preset_rules("block_ssrf_egress")


def test_block_ssrf_egress_denies_metadata_and_rfc1918_on_egress() -> None:
    rules = preset_rules("block_ssrf_egress")
    denied = {entry for rule in rules for entry in rule["egress"]["deny"]}
    assert denied == {"169.254.169.254", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"}
    assert {rule["stage"] for rule in rules} == {"egress"}
    evaluate = compile_policy(policy_with("block_ssrf_egress"), resolver=lambda h: []).evaluate
    for destination in (
        "http://169.254.169.254/latest/meta-data/",
        "http://0xA9FEA9FE/",
        "http://[::ffff:169.254.169.254]/",
        "http://10.2.3.4/",
        "http://172.31.0.1/",
        "http://192.168.1.10:8080/",
    ):
        assert evaluate({"tool": "http.get", "destination": destination}).verdict == "deny"
    for destination in ("http://172.32.0.1/", "https://93.184.216.34/", "http://11.0.0.1/"):
        assert evaluate({"tool": "http.get", "destination": destination}).verdict == "allow"


def test_balanced_denies_metadata_but_only_audits_private_ranges() -> None:
    evaluate = compile_policy(policy_with("balanced"), resolver=lambda h: []).evaluate
    assert evaluate({"tool": "x", "destination": "http://169.254.169.254/"}).verdict == "deny"
    assert evaluate({"tool": "x", "destination": "http://10.0.0.1/"}).verdict == "audit"


def test_open_adds_no_rule() -> None:
    assert preset_rules("open") == []


def test_preset_rules_are_fresh_copies() -> None:
    first = preset_rules("block_ssrf_egress")
    first[0]["egress"]["deny"].clear()
    assert preset_rules("block_ssrf_egress")[0]["egress"]["deny"] == ["169.254.169.254"]


def test_an_unknown_name_raises_unknown_preset() -> None:
    with pytest.raises(UnknownPreset, match="unknown preset or autonomy level `lax`"):
        preset_rules("lax")
