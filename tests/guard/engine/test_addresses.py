"""Destinations in arguments, and the addresses no call may reach in any spelling."""

from __future__ import annotations

import pytest

from guard.engine import ToolCheck
from guard.engine.addresses import classify_host, find_destinations, parse_ipv4_loose
from guard.engine.checks import NAMES

from .conftest import KEY

BARRED_URLS = [
    ("http://169.254.169.254/latest", "metadata"),
    ("http://[fd00:ec2::254]/latest", "metadata"),
    ("http://127.0.0.1:8000/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://0x7f.0.0.1/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("http://017700000001/", "loopback"),
    ("http://127.0.0.1./", "loopback"),
    ("http://%31%32%37.0.0.1/", "loopback"),
    ("http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[0:0:0:0:0:0:0:1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::ffff:a9fe:a9fe]/", "metadata"),
    ("http://[64:ff9b::a9fe:a9fe]/", "metadata"),
    ("http://[2002:a9fe:a9fe::1]/", "metadata"),
    ("http://[::127.0.0.1]/", "loopback"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://10.1.2.3/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://169.254.1.1/", "link_local"),
    ("http://[fe80::1%25eth0]/", "link_local"),
    ("http://100.64.0.1/", "shared"),
    ("http://localhost/", "local_name"),
    ("http://LOCALHOST./", "local_name"),
    ("http://api.localhost/", "local_name"),
    ("http://metadata.google.internal/computeMetadata/v1/", "local_name"),
    ("http://user:pw@10.0.0.1:8080/", "private"),
    ("http://example.com@10.0.0.1/", "private"),
    ("http://10.0.0.1\\@example.com/", "private"),
    ("//10.0.0.1/x", "private"),
    ("gopher://127.0.0.1:6379/_x", "loopback"),
    ("see http://10.0.0.1/a and more", "private"),
]


@pytest.mark.parametrize(("url", "range_name"), BARRED_URLS)
def test_a_url_to_a_disallowed_address_is_found_in_every_spelling(url, range_name):
    found = find_destinations({"url": url}, frozenset({"url"}))
    names = [classify_host(item.host) for item in found]
    assert range_name in names


@pytest.mark.parametrize(
    "value",
    ["2130706433", "0x7f000001", "127.1", "::1", "[::ffff:127.0.0.1]", "localhost", "10.0.0.1"],
)
def test_a_host_argument_is_read_as_a_host_in_every_spelling(value):
    found = find_destinations({"host": value}, frozenset({"host"}))
    assert found and classify_host(found[0].host) is not None


@pytest.mark.parametrize(
    "arguments",
    [
        {"order_id": "4411"},
        {"order_id": "A1", "amount": 20},
        {"note": "ratio 1//2 and 5@10"},
        {"text": "version 1.2.3"},
        {"count": "2130706433"},
    ],
)
def test_values_that_are_not_destinations_are_not_taken_for_them(arguments):
    assert find_destinations(arguments) == []


@pytest.mark.parametrize(
    ("arguments", "form"),
    [
        ({"order_id": "https://refunds.invalid/4411"}, "url"),
        ({"note": "write to ana@x.com please"}, "email"),
        ({"note": "mailto:ana@x.com"}, "email"),
        ({"target": "10.0.0.5"}, "ip"),
        ({"target": "fe80::1"}, "ip"),
        ({"items": [{"link": "file:///etc/passwd"}]}, "url"),
    ],
)
def test_destinations_are_found_anywhere_in_the_arguments(arguments, form):
    found = find_destinations(arguments)
    assert found and found[0].form == form


def test_a_destination_is_named_by_its_json_pointer():
    found = find_destinations({"items": [{"a/b": "http://x.example/"}]})
    assert found[0].pointer == "/items/0/a~1b"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("1.2.3.4.5", None),
    ],
)
def test_ipv4_is_read_as_inet_aton_reads_it(text, expected):
    address = parse_ipv4_loose(text)
    assert (str(address) if address else None) == expected


def test_public_addresses_are_not_disallowed():
    for host in ("example.org", "93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"):
        assert classify_host(host) is None


def fetcher(settings=None) -> ToolCheck:
    data = {
        "tools": [
            {
                "name": "fetch_page",
                "kind": "sends_out",
                "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
            }
        ]
    }
    return ToolCheck(data, key=KEY, settings=settings)


def test_the_address_check_refuses_before_the_tool_check_and_can_be_switched_off():
    check = fetcher()
    call = {"tool": "fetch_page", "arguments": {"url": "http://169.254.169.254/latest"}}
    decision = check.check(call, session=check.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("disallowed_address",))
    assert decision.detail["range"] == "metadata" and "step" not in decision.detail
    off = check.check(call, session=check.new_history("s"), checks=sorted(NAMES - {"address"}))
    assert off.decision == "confirm"


def test_the_settings_may_allow_an_address_or_deny_more():
    check = fetcher(
        {"address": {"allow": ["10.1.2.3/32"], "deny": ["203.0.113.0/24", "corp.example"]}}
    )
    session = check.new_history("s")

    def reasons(url):
        return check.check(
            {"tool": "fetch_page", "arguments": {"url": url}}, session=session
        ).reasons

    assert reasons("http://10.1.2.3/") == ("argument_origin: url",)
    assert reasons("http://10.1.2.4/") == ("disallowed_address",)
    assert reasons("http://203.0.113.9/") == ("disallowed_address",)
    assert reasons("https://intranet.corp.example/") == ("disallowed_address",)
