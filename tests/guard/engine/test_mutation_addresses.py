"""Disallowed addresses in spellings mutation testing found unguarded.

The checks page, "Endereço não permitido": a call may not reach an address the installation does
not allow, like the cloud metadata service or the internal network, however the address is spelt:
URL parsers disagree on `@` and `\\`, IPv6 hides IPv4 addresses, resolvers accept odd IPv4 forms.
"""

from __future__ import annotations

import pytest

from guard.engine import ToolCheck
from guard.engine.addresses import classify_host, find_destinations, parse_ip, parse_ipv4_loose

from .conftest import KEY, NOW, lab_catalogue


def ranges(url: str) -> list[str | None]:
    return [
        classify_host(item.host) for item in find_destinations({"url": url}, frozenset({"url"}))
    ]


@pytest.mark.parametrize(
    ("url", "range_name"),
    [
        ("http://a@b@169.254.169.254/", "metadata"),
        ("http://169.254.169.254\\a\\b.example.com/", "metadata"),
        ("http://[::1]:8080/", "loopback"),
        ("http://[::1/", "loopback"),
        ("http://[169.254.169.254/", "metadata"),
        ("http://169\u3002254\u3002169\u3002254/", "metadata"),
        ("http://[::1%]/", "loopback"),
        ("http://[::1%%]/", "loopback"),
        ("http://[::2]/", "unspecified"),
        ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", "private"),
    ],
)
def test_a_disallowed_address_is_found_however_the_url_spells_it(url, range_name):
    assert range_name in ranges(url)


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.1.", "127.0.0.1"),
        ("0x7f.0x.0.1", "127.0.0.1"),
        ("255.255.255.255", "255.255.255.255"),
        ("1.2.3.255", "1.2.3.255"),
        ("1.2.65535", "1.2.255.255"),
        ("0", "0.0.0.0"),
    ],
)
def test_ipv4_is_read_in_the_forms_inet_aton_accepts(text, address):
    assert str(parse_ipv4_loose(text)) == address


@pytest.mark.parametrize(
    "text",
    ["1.2.3.4.0", "256.0.0.1", "1.256.0.1", "1.2.256.1", "1.2.3.256", "127.0.0.08", "1.2.65536"],
)
def test_ipv4_forms_inet_aton_refuses_are_not_addresses(text):
    assert parse_ipv4_loose(text) is None


def test_a_half_bracketed_address_is_not_an_address():
    assert parse_ip("[1.2.3.4", loose=True) is None
    assert parse_ip("1.2.3.4]", loose=True) is None
    assert str(parse_ip("[::1]", loose=False)) == "::1"


def check_with(allow: list[str]) -> ToolCheck:
    return ToolCheck(lab_catalogue(), key=KEY, settings={"address": {"allow": allow}})


def fetch(check: ToolCheck, url: str):
    call = {"tool": "fetch_page", "arguments": {"url": url}, "origins": {"url": "typed"}}
    return check.check(call, session=check.new_history("s"), now=NOW)


def test_allowing_an_ipv6_spelling_does_not_allow_the_ipv4_address_inside_it():
    mapped = "http://[::ffff:10.0.0.1]/"
    decision = fetch(check_with(["::ffff:10.0.0.1/128"]), mapped)
    assert (decision.reasons, decision.detail["range"]) == (("disallowed_address",), "private")
    assert fetch(check_with(["10.0.0.1"]), mapped).decision == "confirm"


def test_an_allowed_loopback_is_not_refused_for_the_ipv4_it_could_be_read_as():
    assert fetch(check_with(["::1/128"]), "http://[::1]/").decision == "confirm"
    assert fetch(check_with([]), "http://[::1]/").detail["range"] == "loopback"
