"""Address parsing at its edges: the length bounds, the prefixes of folded networks, hostnames.

Each bound is tested on both sides (the longest text accepted, one character more refused), so a
bound moved by one is caught; the folded networks are the IPv6 spellings of IPv4 ranges a rule's
CIDR may be written in.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address

import pytest

from firewall.engine.addresses import (
    carried_ipv4,
    ip_key,
    is_hostname,
    looks_like_ip,
    normalise_host,
    parse_ip,
    parse_network,
)
from firewall.engine.errors import OperandInvalid

METADATA = IPv4Address("169.254.169.254")


def test_an_upper_case_hex_prefix_is_read_as_hex() -> None:
    assert parse_ip("0XA9FEA9FE") == METADATA
    assert parse_ip("0XA9.0XFE.0XA9.0XFE") == METADATA


def test_a_dotted_spelling_of_64_characters_is_read_and_one_of_65_is_not() -> None:
    longest = "0x" + "0" * 54 + "A9FEA9FE"
    assert len(longest) == 64
    assert parse_ip(longest) == METADATA
    assert parse_ip("0x" + "0" * 55 + "A9FEA9FE") is None


def test_any_text_of_128_characters_is_read_and_one_of_129_is_not() -> None:
    padded = " " * (128 - len("169.254.169.254")) + "169.254.169.254"
    assert len(padded) == 128
    assert parse_ip(padded) == METADATA
    assert parse_ip(" " + padded) is None
    assert parse_ip(" " * 200 + "169.254.169.254") is None


@pytest.mark.parametrize("value", [12345, 3.5, None, ["1.2.3.4"], b"1.2.3.4"])
def test_a_value_that_is_not_text_is_no_address(value: object) -> None:
    assert ip_key(value) is None
    assert parse_ip(value) is None


def test_a_6to4_address_is_the_ipv4_address_it_carries() -> None:
    assert ip_key("2002:a9fe:a9fe::1") == (4, int(METADATA))
    assert parse_ip("2002:a9fe:a9fe::1") == METADATA


@pytest.mark.parametrize(
    ("cidr", "network"),
    [
        ("2002:0a00::/24", "10.0.0.0/8"),
        ("2002::/16", "0.0.0.0/0"),
        ("2002:0a00:0001::/48", "10.0.0.1/32"),
        ("2002:0a00:0001::/56", "10.0.0.1/32"),
        ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
        ("::ffff:0.0.0.0/96", "0.0.0.0/0"),
        ("::ffff:169.254.169.254/128", "169.254.169.254/32"),
    ],
)
def test_an_ipv6_spelling_of_an_ipv4_network_folds_its_prefix(cidr: str, network: str) -> None:
    assert parse_network(cidr) == IPv4Network(network)


@pytest.mark.parametrize("cidr", ["2002::/15", "::ffff:0.0.0.0/95", "::ffff:0.0.0.0/0"])
def test_a_folded_network_shorter_than_its_ipv4_part_is_refused(cidr: str) -> None:
    with pytest.raises(OperandInvalid, match="prefix too short"):
        parse_network(cidr, "value")


@pytest.mark.parametrize("value", [10, None, ["10.0.0.0/8"]])
def test_a_network_that_is_not_text_is_refused_naming_its_field(value: object) -> None:
    with pytest.raises(OperandInvalid) as raised:
        parse_network(value, "egress.deny[0]")
    assert (raised.value.field, raised.value.message) == ("egress.deny[0]", "must be a string")
    assert str(raised.value) == "egress.deny[0]: must be a string"
    with pytest.raises(OperandInvalid) as unnamed:
        parse_network(value)
    assert (unnamed.value.field, str(unnamed.value)) == ("", "must be a string")


def test_every_ipv4_address_an_ipv6_address_carries() -> None:
    assert carried_ipv4(IPv6Address("::ffff:169.254.169.254")) == (METADATA,)
    assert carried_ipv4(IPv6Address("2002:a9fe:a9fe::1")) == (METADATA,)
    teredo = IPv6Address("2001:0:4136:e378:8000:63bf:3fff:fdd2")
    assert carried_ipv4(teredo) == (IPv4Address("65.54.227.120"), IPv4Address("192.0.2.45"))
    assert carried_ipv4(IPv6Address("2001:db8::1")) == ()
    assert carried_ipv4(METADATA) == ()


def test_a_dotted_address_with_its_trailing_dot_looks_like_an_address() -> None:
    assert looks_like_ip("169.254.169.254.")
    assert looks_like_ip("169.254.169.254")
    assert not looks_like_ip("1.2.3.4.5.6")
    assert not looks_like_ip("169.254.43518")  # an address, but not as it appears among strings


def test_a_host_is_folded_to_the_form_a_resolver_reads() -> None:
    assert normalise_host("ｅｘａｍｐｌｅ．ｃｏｍ") == "example.com"
    assert normalise_host("example\u3002com") == "example.com"
    assert normalise_host("Example.COM.") == "example.com"
    assert normalise_host("example.com..") == "example.com.."
    assert normalise_host("%65xample.com") == "example.com"


def test_a_hostname_of_253_characters_is_one_and_of_254_is_not() -> None:
    name = ".".join(["a" * 62] * 4) + "." + "b"  # 4 x 62 + 4 dots + 1 = 253
    assert len(name) == 253
    assert is_hostname(name)
    assert not is_hostname(name + "b")


def test_a_label_of_63_characters_is_one_and_of_64_is_not() -> None:
    assert is_hostname("a" * 63 + ".com")
    assert not is_hostname("a" * 64 + ".com")


@pytest.mark.parametrize("name", ["a", "x.y", "a-b.c_d"])
def test_short_names_are_hostnames(name: str) -> None:
    assert is_hostname(name)


@pytest.mark.parametrize("name", ["", "a..b", ".a", "abc-.com", "-abc.com", "exämple.com", "a b"])
def test_malformed_names_are_not_hostnames(name: str) -> None:
    assert not is_hostname(name)
