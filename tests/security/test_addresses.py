"""One address module for both engines: no spelling of an address one blocks passes the other.

The attacker's finding: `http://[2002:a9fe:a9fe::]/` (6to4 of 169.254.169.254) was refused by the
tool check and allowed by the firewall's `tight` preset, because each engine had its own address
normaliser. Every spelling below is now tested in both: the firewall (`tight`, through its engine
and through the console's evaluate API) and the tool check (the `address` admission check).
"""

from __future__ import annotations

import pytest

from firewall import services as firewall_services
from firewall.engine import compile_policy
from firewall.engine.presets import preset_rules
from guard.engine import ToolCheck

KEY = "a signing key of the tests, long enough"
METADATA = "169.254.169.254"


def _firewall():
    rules = [{**rule, "id": index} for index, rule in enumerate(preset_rules("tight"))]
    return compile_policy({"name": "tight", "default_verdict": "allow", "rules": rules})


def _tool_check():
    catalogue = {
        "tools": [
            {
                "name": "fetch_page",
                "kind": "sends_out",
                "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
            }
        ]
    }
    return ToolCheck(catalogue, key=KEY)


def _both_engines(url: str) -> tuple[str, tuple[str, ...]]:
    """The firewall's verdict at egress and the tool check's reasons, for one URL."""
    verdict = _firewall().evaluate({"tool": "http.get", "destination": url}).to_dict()["verdict"]
    check = _tool_check()
    call = {"tool": "fetch_page", "arguments": {"url": url}}
    return verdict, check.check(call, session=check.new_history("s")).reasons


BLOCKED = ("deny", ("disallowed_address",))


def test_the_6to4_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines("http://[2002:a9fe:a9fe::]/latest") == BLOCKED


def test_a_6to4_spelling_of_a_private_address_is_blocked_by_both_engines():
    assert _both_engines("http://[2002:0a00:0001::1]/") == BLOCKED


def test_the_nat64_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines("http://[64:ff9b::a9fe:a9fe]/latest") == BLOCKED


def test_the_ipv4_mapped_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines(f"http://[::ffff:{METADATA}]/latest") == BLOCKED


def test_the_octal_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines("http://0251.0376.0251.0376/latest") == BLOCKED


def test_the_hex_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines("http://0xA9FEA9FE/latest") == BLOCKED


def test_the_decimal_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines("http://2852039166/latest") == BLOCKED


def test_the_metadata_address_with_a_trailing_dot_is_blocked_by_both_engines():
    assert _both_engines(f"http://{METADATA}./latest") == BLOCKED


def test_the_full_width_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines("http://\uff11\uff16\uff19.\uff12\uff15\uff14.169.254/") == BLOCKED


def test_the_percent_encoded_spelling_of_the_metadata_address_is_blocked_by_both_engines():
    assert _both_engines("http://%31%36%39.254.169.254/latest") == BLOCKED


def test_a_6to4_network_in_an_egress_list_is_read_as_the_ipv4_network_it_carries():
    policy = compile_policy(
        {
            "name": "p",
            "default_verdict": "allow",
            "rules": [
                {"id": 1, "priority": 1, "name": "no link-local", "stage": "egress", "verdict": "deny",
                 "egress": {"deny": ["2002:a9fe::/32"]}},
            ],
        }
    )  # fmt: skip
    assert policy.evaluate({"tool": "t", "destination": f"http://{METADATA}/"}).verdict == "deny"


@pytest.mark.django_db
def test_the_consoles_tight_preset_blocks_the_6to4_spelling_of_the_metadata_address(actor_for,
                                                                                     editor,
                                                                                     organisation):  # fmt: skip
    actor = actor_for(editor, organisation)
    policy = firewall_services.policy_create(actor=actor, name="production")
    firewall_services.preset_apply(actor=actor, policy=policy, preset="tight")
    firewall_services.policy_publish(actor=actor, policy=policy)
    result = firewall_services.firewall_evaluate(
        actor=actor,
        call={"tool": "http.get", "destination": "http://[2002:a9fe:a9fe::]/latest"},
        policy=policy,
    )
    assert (result["verdict"], result["decision"]) == ("deny", "refuse")
