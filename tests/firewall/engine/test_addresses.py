"""Address normalisation: every spelling of an address compares as the address."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address

import pytest

from firewall.engine.addresses import is_hostname, looks_like_ip, parse_ip, parse_network
from firewall.engine.errors import OperandInvalid

METADATA = IPv4Address("169.254.169.254")


@pytest.mark.parametrize(
    "spelling",
    [
        "169.254.169.254",
        "2852039166",
        "0xA9FEA9FE",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "169.254.43518",
        "169.16689662",
        "0xA9.0xFE.0xA9.0xFE",
        "::ffff:169.254.169.254",
        "::ffff:a9fe:a9fe",
        "[::ffff:169.254.169.254]",
        "::169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "169.254.169.254.",
        " 169.254.169.254 ",
    ],
)
def test_every_spelling_of_the_metadata_endpoint_normalises_to_it(spelling: str) -> None:
    assert parse_ip(spelling) == METADATA


@pytest.mark.parametrize(
    "text", ["256.0.0.1", "1.2.3.4.5", "08.1.1.1", "1..2", "", "example.com", "0x1g", "1.2.3.-4"]
)
def test_non_addresses_do_not_parse(text: str) -> None:
    assert parse_ip(text) is None


def test_ipv6_keeps_its_family_and_zone_is_dropped() -> None:
    assert parse_ip("fe80::1%eth0") == IPv6Address("fe80::1")
    assert parse_ip("::1") == IPv6Address("::1")


def test_looks_like_ip_wants_four_dotted_parts_or_ipv6() -> None:
    assert looks_like_ip("10.0.0.1")
    assert looks_like_ip("::1")
    assert not looks_like_ip("1.5")
    assert not looks_like_ip("2852039166")


def test_networks_parse_strictly_and_fold_mapped_ipv6() -> None:
    assert parse_network("10.0.0.0/8") == IPv4Network("10.0.0.0/8")
    assert parse_network("10.1.2.3") == IPv4Network("10.1.2.3/32")
    assert parse_network("::ffff:10.0.0.0/104") == IPv4Network("10.0.0.0/8")
    for bad in ("10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "x/8", "10.0.0.0/8/8"):
        with pytest.raises(OperandInvalid):
            parse_network(bad)


def test_hostnames_are_ascii_labels() -> None:
    assert is_hostname("api.example.com")
    assert not is_hostname("exa mple.com")
    assert not is_hostname("-bad.example")
    assert not is_hostname("a" * 64 + ".example")
    assert not is_hostname("caf\u00e9.example")
