"""Exact destinations: what `parse_destination` and `argument_destinations` return, to the item.

These tests prove the exact list (order, members, no repeats) for IDNA hosts, the 4096-character
limit on both sides, bare IPv6 literals, URLs without a host, both readings of an authority
holding a backslash (userinfo, brackets, ports, several `@` and `\\`), that only string keys can
name a destination, that a bare top-level string is not keyed, that repeats across arguments
are dropped, and the exact range `0 <= n < 2**32` of integers read as IPv4 addresses.
"""

from __future__ import annotations

import pytest

from firewall.engine.addresses import parse_ip
from firewall.engine.destinations import (
    Destination,
    argument_destinations,
    is_destination_key,
    parse_destination,
)


def host(name: str) -> Destination:
    return Destination(name, None)


def ip(text: str) -> Destination:
    address = parse_ip(text)
    assert address is not None
    return Destination(None, address)


def test_a_host_destination_prints_as_its_name() -> None:
    assert str(host("a.example")) == "a.example"


@pytest.mark.parametrize("text", ["10.0.0.1", "::1", "2001:db8::1"])
def test_an_ip_destination_prints_as_its_address(text: str) -> None:
    assert str(ip(text)) == text


@pytest.mark.parametrize("key", [1, None, 2.5, ("url",), b"url"])
def test_only_a_string_key_can_name_a_destination(key: object) -> None:
    assert is_destination_key(key) is False
    assert argument_destinations({key: "a.example"}) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bücher.example", [host("xn--bcher-kva.example")]),
        ("http://bücher.example/x", [host("xn--bcher-kva.example")]),
        ("exämple.com:8080/p", [host("xn--exmple-cua.com")]),
        ("a.example", [host("a.example")]),
    ],
)
def test_a_non_ascii_host_is_read_as_its_idna_name(text: str, expected: list[Destination]) -> None:
    assert parse_destination(text) == expected


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (4095, [host("a.example")]),
        (4096, [host("a.example")]),
        (4097, []),
        (5000, []),
    ],
)
def test_text_longer_than_4096_characters_names_nothing(
    size: int, expected: list[Destination]
) -> None:
    text = "a.example/" + "x" * (size - len("a.example/"))
    assert len(text) == size
    assert parse_destination(text) == expected
    assert parse_destination("  " + text + "  ") == expected


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_text_names_nothing(text: str) -> None:
    assert parse_destination(text) == []


@pytest.mark.parametrize(
    "text", ["::1", "2001:db8::1", "fe80::1", "::ffff:10.0.0.1", "10.0.0.1", "2001:db8::"]
)
def test_a_bare_ip_literal_is_one_address(text: str) -> None:
    assert parse_destination(text) == [ip(text)]


@pytest.mark.parametrize("text", ["http:///path", "http://@\\x", "http://\\evil.example"])
def test_a_url_without_a_host_names_nothing(text: str) -> None:
    assert parse_destination(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://a.example\\@10.0.0.1/", [ip("10.0.0.1"), host("a.example")]),
        ("http://u@a.example\\@10.0.0.1/", [ip("10.0.0.1"), host("a.example")]),
        ("http://x@y@evil.example\\b\\c", [host("evil.example")]),
        ("http://[::1]\\@h.example", [host("h.example"), ip("::1")]),
        ("http://[::1]:80\\@h.example", [host("h.example"), ip("::1")]),
        ("http://[::1]]x\\y", [ip("::1")]),
        ("http://h.example:8080\\@10.0.0.2", [ip("10.0.0.2"), host("h.example")]),
        ("http://h.example:8080\\@x", [host("x"), host("h.example")]),
        ("http://a:b:c\\@h.example", [host("h.example")]),
        ("http://ex.com:80\\x", [host("ex.com")]),
        ("http://a]b\\c", []),
    ],
)
def test_a_backslash_in_the_authority_yields_both_readings(
    text: str, expected: list[Destination]
) -> None:
    assert parse_destination(text) == expected


def test_a_bare_top_level_string_is_not_under_a_destination_key() -> None:
    assert argument_destinations("a.example") == []
    assert argument_destinations(["a.example"]) == []
    assert argument_destinations(167772161) == []


def test_a_destination_named_twice_is_listed_once() -> None:
    arguments = {"url": ["a.example", "a.example"], "host": "a.example", "ip": "10.0.0.1"}
    assert argument_destinations(arguments) == [host("a.example"), ip("10.0.0.1")]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, [ip("0.0.0.0")]),
        (1, [ip("0.0.0.1")]),
        (2**32 - 1, [ip("255.255.255.255")]),
        (2**32, []),
        (2**33 - 1, []),
        (3**32 - 1, []),
        (-1, []),
        (True, []),
        (False, []),
    ],
)
def test_only_integers_from_0_below_2_to_the_32_are_read_as_ipv4(
    value: int, expected: list[Destination]
) -> None:
    assert argument_destinations({"ip": value}) == expected
