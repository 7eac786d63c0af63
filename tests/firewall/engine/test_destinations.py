"""Where a call goes: its destination, or the URLs, hosts and IPs in its arguments."""

from __future__ import annotations

from ipaddress import IPv4Address

from firewall.engine.destinations import Destination, argument_destinations, parse_destination


def ip(text: str) -> Destination:
    return Destination(None, IPv4Address(text))


def host(text: str) -> Destination:
    return Destination(text, None)


def test_urls_hosts_and_ips_parse_to_destinations() -> None:
    assert parse_destination("http://169.254.169.254/latest/meta-data") == [ip("169.254.169.254")]
    assert parse_destination("http://[::ffff:a9fe:a9fe]:80/") == [ip("169.254.169.254")]
    assert parse_destination("https://user:pw@0xA9FEA9FE/x") == [ip("169.254.169.254")]
    assert parse_destination("HTTPS://Api.Example.COM.:8443/x") == [host("api.example.com")]
    assert parse_destination("10.0.0.5:8080") == [ip("10.0.0.5")]
    assert parse_destination("api.example.com/path") == [host("api.example.com")]


def test_backslash_in_the_authority_yields_both_readings() -> None:
    found = parse_destination("http://good.example\\@10.0.0.1/")
    assert ip("10.0.0.1") in found
    assert host("good.example") in found


def test_text_that_names_no_host_yields_nothing() -> None:
    assert parse_destination("http://[broken") == []
    assert parse_destination("not a host") == []
    assert parse_destination("") == []


def test_arguments_are_searched_for_destinations_at_any_depth() -> None:
    arguments = {
        "url": "http://a.example/x",
        "note": "see https://b.example/y for details",
        "ip": 2852039166,
        "nested": [{"host": "c.example"}, "192.168.1.1", "1.5", "order 12345"],
        "callback_urls": ["d.example"],
    }
    assert argument_destinations(arguments) == [
        host("a.example"),
        host("b.example"),
        ip("169.254.169.254"),
        host("c.example"),
        ip("192.168.1.1"),
        host("d.example"),
    ]


def test_plain_words_and_numbers_outside_destination_keys_are_not_destinations() -> None:
    assert argument_destinations({"count": 2852039166, "text": "hello world", "v": "1.2"}) == []


def test_deeply_nested_arguments_do_not_exhaust_the_stack() -> None:
    deep: object = "http://10.0.0.1/"
    for _ in range(5000):
        deep = {"x": [deep]}
    assert argument_destinations(deep) == [ip("10.0.0.1")]
