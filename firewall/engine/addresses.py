"""IP addresses, networks and hostnames: the one address module of both engines.

The firewall's egress lists and `cidr` clauses and the tool check's disallowed addresses
(`guard/engine/addresses.py`) read every address through this module, so the two can never
disagree on what an address is. Every spelling is normalised before it is compared, so that a
blocked address cannot be reached under another name:

- IPv4 in the forms `inet_aton` accepts: dotted quads, fewer parts (`169.254.43518`), a single
  integer (`2852039166`), hex (`0xA9FEA9FE`) or octal (`0251.0376.0251.0376`) parts, a trailing
  dot, and full-width digits and dots (NFKC);
- IPv6, with brackets or a zone (`fe80::1%eth0`) stripped, and IPv6 that carries an IPv4 address
  folded to that IPv4 address: IPv4-mapped `::ffff:169.254.169.254`, IPv4-compatible
  `::169.254.169.254`, the NAT64 well-known prefix `64:ff9b::/96` and 6to4 `2002::/16`
  (`2002:a9fe:a9fe::` is 169.254.169.254); `carried_ipv4` also names the two IPv4 addresses of a
  Teredo address (`2001::/32`), which the tool check refuses by;
- hostnames percent-decoded, NFKC-folded (full-width letters, the ideographic full stop),
  lower-cased, with one trailing dot removed.

Networks given as IPv6 inside those ranges are folded to the IPv4 networks they carry the same way
(`::ffff:10.0.0.0/104` is `10.0.0.0/8`, `2002:a9fe::/32` is `169.254.0.0/16`).
"""

from __future__ import annotations

import ipaddress
import unicodedata
from functools import lru_cache
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from urllib.parse import unquote

from firewall.engine.errors import OperandInvalid

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network


_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
_DECIMAL = frozenset("0123456789")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")


def _ipv4_part(text: str) -> int | None:
    """One part as `inet_aton` reads it: `0x` hex, leading-zero octal, or decimal."""
    if text[:2] in ("0x", "0X"):
        digits = text[2:]
        if not _HEX.issuperset(digits):
            return None
        return int(digits, 16) if digits else 0
    if not text or not _DECIMAL.issuperset(text):
        return None
    if len(text) > 1 and text[0] == "0":
        return int(text, 8) if _OCTAL.issuperset(text) else None
    return int(text)


def _parse_ipv4(text: str) -> int | None:
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or len(text) > 64:
        return None
    numbers = []
    for part in parts:
        number = _ipv4_part(part)
        if number is None:
            return None
        numbers.append(number)
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for n in head:
        value = value * 256 + n
    return value * 256 ** (4 - len(head)) + last


_NAT64_PREFIX = 0x0064FF9B << 64
_SIX_TO_FOUR = 0x2002
_TEREDO = 0x20010000


def _fold(value: int) -> tuple[int, int]:
    """An IPv6 address as (version, value), folded to IPv4 when it carries an IPv4 address."""
    high = value >> 32
    if high == 0xFFFF or high == _NAT64_PREFIX:
        return 4, value & 0xFFFFFFFF
    if high == 0 and value > 1:
        return 4, value
    if value >> 112 == _SIX_TO_FOUR:
        return 4, (value >> 80) & 0xFFFFFFFF
    return 6, value


def _folded_prefix(original: IPv6Address, prefix: int) -> int | None:
    """The IPv4 prefix an IPv6 network that folds carries, or None when it is too short."""
    if int(original) >> 112 == _SIX_TO_FOUR:
        # 2002:AABB:CCDD::/48 is the 6to4 site of AA.BB.CC.DD: bits past 48 name no IPv4 bits.
        return min(prefix, 48) - 16 if prefix >= 16 else None
    return prefix - 96 if prefix >= 96 else None


def carried_ipv4(address: IPAddress) -> tuple[IPv4Address, ...]:
    """Every IPv4 address an IPv6 address carries (Teredo carries two: server and client)."""
    if not isinstance(address, IPv6Address):
        return ()
    value = int(address)
    found: list[IPv4Address] = []
    version, folded = _fold(value)
    if version == 4:
        found.append(IPv4Address(folded))
    if value >> 96 == _TEREDO and address.teredo is not None:
        found.extend(address.teredo)
    return tuple(found)


def ip_key(text: object) -> tuple[int, int] | None:
    """The normalised address `text` spells as (version, integer), or None.

    The integer form is what the hot paths compare (`network_key`); `parse_ip` wraps it in
    an `ipaddress` object for everyone else. Results are cached: calls repeat addresses.
    """
    if not isinstance(text, str) or not text or len(text) > 128:
        return None
    return _ip_key(text)


@lru_cache(maxsize=4096)
def _ip_key(text: str) -> tuple[int, int] | None:
    if not text.isascii():
        # full-width digits and dots (`１６９．２５４...`) are the same address to a resolver
        text = unicodedata.normalize("NFKC", text).replace("\u3002", ".")
        if not text.isascii():
            return None
    text = text.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        text = text.split("%", 1)[0]
        try:
            return _fold(int(IPv6Address(text)))
        except ValueError:
            return None
    if text.endswith("."):
        text = text[:-1]
    value = _parse_ipv4(text)
    return None if value is None else (4, value)


def parse_ip(text: object) -> IPAddress | None:
    """The normalised address `text` spells, or None when it does not spell one."""
    key = ip_key(text)
    if key is None:
        return None
    return IPv4Address(key[1]) if key[0] == 4 else IPv6Address(key[1])


def network_key(network: IPNetwork) -> tuple[int, int, int]:
    """A network as (version, network integer, mask integer), for fast membership tests."""
    return network.version, int(network.network_address), int(network.netmask)


def looks_like_ip(text: str) -> bool:
    """An IP literal as it may appear among other strings: four dotted parts, or IPv6."""
    if ":" in text:
        return parse_ip(text) is not None
    return text.count(".") in (3, 4) and parse_ip(text) is not None


def parse_network(text: object, field: str = "") -> IPNetwork:
    """A CIDR (`10.0.0.0/8`, `fd00::/8`) or an IP literal (as a /32 or /128), normalised."""
    if not isinstance(text, str):
        raise OperandInvalid(field, "must be a string")
    return _parse_network(text, field)


# compiling a policy reads each CIDR literal several times (validated, compiled, indexed), and
# `ipaddress` is slow at it; the networks are immutable, so one parse serves all of them
@lru_cache(maxsize=16384)
def _parse_network(text: str, field: str) -> IPNetwork:
    address_text, slash, prefix_text = text.partition("/")
    address = parse_ip(address_text)
    if address is None:
        raise OperandInvalid(field, f"`{text}` is not a valid CIDR")
    if not slash:
        return ipaddress.ip_network(address)
    if not prefix_text.isdigit() or len(prefix_text) > 3:
        raise OperandInvalid(field, f"`{text}` is not a valid CIDR")
    prefix = int(prefix_text)
    try:
        original = ipaddress.ip_address(address_text.strip().strip("[]").split("%", 1)[0])
    except ValueError:
        original = address
    if isinstance(original, IPv6Address) and isinstance(address, IPv4Address):
        # an IPv6 spelling of an IPv4 network (`::ffff:10.0.0.0/104`): fold the prefix too
        folded = _folded_prefix(original, prefix)
        if folded is None or prefix > 128:
            raise OperandInvalid(field, f"`{text}` is not a valid CIDR: prefix too short")
        prefix = folded
    try:
        return ipaddress.ip_network((address, prefix), strict=True)
    except ValueError as exc:
        reason = "host bits set" if "host bits" in str(exc) else "prefix out of range"
        raise OperandInvalid(field, f"`{text}` is not a valid CIDR: {reason}") from None


def normalise_host(text: str) -> str:
    """A hostname as both engines compare it: percent-decoded, NFKC-folded (full-width letters and
    digits, the ideographic full stop), lower case, without one trailing dot."""
    text = unquote(text)
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).replace("\u3002", ".")
    text = text.strip().lower()
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def is_hostname(text: str) -> bool:
    """A syntactically valid hostname (already normalised), at most 253 characters."""
    if not 0 < len(text) <= 253 or not text.isascii():
        return False
    for label in text.split("."):
        if not 0 < len(label) <= 63 or not _LABEL_CHARS.issuperset(label):
            return False
        if label[0] == "-" or label[-1] == "-":
            return False
    return True
