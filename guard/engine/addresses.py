"""Destinations in arguments (URLs, e-mail addresses, hosts, IPs) and the disallowed ones.

Two checks read this module. Step 4 of the tool check (`undeclared_destination`) asks whether an
argument holds a destination at all; the admission check `address` asks whether one reaches an
address the installation does not allow: cloud metadata services, private, loopback, link-local,
shared and unspecified ranges, and the host names that lead to them.

Where a destination is looked for:
- a URL (`scheme://authority...` or `mailto:`) anywhere in any string argument, or a string that
  starts with `//authority`;
- an e-mail address (`name@host` whose host has a dot, is bracketed, or is a local name) anywhere in
  any string argument;
- a whole string value that is an IP address in its standard spelling (`10.0.0.5`, `::1`, `[::1]`);
- in a *host argument* (its name says url, uri, host, ip, address, endpoint, domain, server, link,
  webhook, callback, or its schema's `format` is uri, hostname, ipv4, ipv6, email ...), the whole
  value read as a host: a name with a dot, or an IP in any spelling.

IPs are read in every spelling a resolver or a URL parser accepts, by the one address module both
engines share (`firewall/engine/addresses.py`, so the firewall and this check never disagree on
an address): dotted quads with fewer parts (`127.1`), hexadecimal and octal parts (`0x7f.0.0.1`,
`0177.0.0.1`), a single integer (`2130706433`, `0x7f000001`), a trailing dot, percent-encoded or
full-width digits, IPv6 with brackets and zone ids, and IPv6 forms that carry an IPv4 address
(IPv4-mapped `::ffff:127.0.0.1`, IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, Teredo).
An argument a read declares it fetches (`fetches: [url]`) is read more strictly still
(`fetched_hosts`): each word of it is read as an address with or without its scheme, and with any
number of slashes or backslashes after it, so `169.254.169.254/latest`, `http:///127.0.0.1` and
`http:\\\\[::1]` each name the host a lenient URL parser would reach.

Integer and hexadecimal spellings are read only
where a host is expected (a URL's authority or a host argument), so an order id `4411` is never
taken for an address. Names are not resolved (the engine does no I/O): a public name that points to
a private address is out of reach of this check.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from firewall.engine import addresses as shared

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Each disallowed range with the name a refusal gives it; the first match names the address.
DISALLOWED_RANGES: tuple[tuple[str, Network], ...] = tuple(
    (name, ipaddress.ip_network(cidr))
    for name, cidr in (
        ("metadata", "169.254.169.254/32"),
        ("metadata", "169.254.170.2/32"),
        ("metadata", "fd00:ec2::254/128"),
        ("metadata", "100.100.100.200/32"),
        ("metadata", "168.63.129.16/32"),
        ("metadata", "192.0.0.192/32"),
        ("loopback", "127.0.0.0/8"),
        ("loopback", "::1/128"),
        ("unspecified", "0.0.0.0/8"),
        ("unspecified", "::/128"),
        ("private", "10.0.0.0/8"),
        ("private", "172.16.0.0/12"),
        ("private", "192.168.0.0/16"),
        ("private", "fc00::/7"),
        ("private", "fec0::/10"),
        ("link_local", "169.254.0.0/16"),
        ("link_local", "fe80::/10"),
        ("shared", "100.64.0.0/10"),
        ("reserved", "192.0.0.0/24"),
        ("reserved", "198.18.0.0/15"),
        ("reserved", "240.0.0.0/4"),
        ("broadcast", "255.255.255.255/32"),
        ("multicast", "224.0.0.0/4"),
        ("multicast", "ff00::/8"),
    )
)

# Host names that lead to the ranges above without any DNS.
DISALLOWED_NAMES = frozenset(
    {
        "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "metadata",
        "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    }
)  # fmt: skip
DISALLOWED_SUFFIXES = (".localhost", ".internal", ".local", ".home.arpa")

HOST_ARGUMENT_WORDS = frozenset(
    {
        "url", "uri", "urls", "host", "hostname", "hosts", "ip", "ips", "address", "addr",
        "endpoint", "domain", "server", "link", "href", "webhook", "callback", "origin",
        "destination", "redirect",
    }
)  # fmt: skip
HOST_FORMATS = frozenset(
    {"uri", "uri-reference", "iri", "iri-reference", "hostname", "idn-hostname", "ipv4", "ipv6",
     "email", "idn-email", "url"}
)  # fmt: skip

_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]{0,31}://([^\s/?#]*)")
_SCHEME_RELATIVE = re.compile(r"^//([^\s/?#]+)")
_MAILTO = re.compile(r"(?i)\bmailto:([^\s?#]+)")
_EMAIL = re.compile(
    r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-]+@(\[[0-9A-Fa-f:.]+\]|[^\s@,;<>()\[\]\"'/?#]+)"
)
_HOSTNAME = re.compile(r"(?i)^(?=.{1,253}$)[a-z0-9\-_]{1,63}(?:\.[a-z0-9\-_]{1,63})+\.?$")
_IPV4_PART = re.compile(r"(?i)^(?:0x[0-9a-f]*|[0-9]+)$")
# Shapes an address in its standard spelling can have, tried before parsing (parsing raises,
# slowly).
_IPV4_SHAPE = re.compile(r"^[0-9]{1,3}(?:\.[0-9]{1,3}){3}$")
_IPV6_SHAPE = re.compile(r"^\[?[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[^\]]*)?\]?$")


@dataclass(frozen=True)
class Found:
    """A destination in an argument: where (`/order_id`), the host it reaches, how it was seen."""

    pointer: str
    host: str
    form: str  # url, email, ip, host


def argument_is_host(name: str, schema: object) -> bool:
    """Say whether an argument holds a host by its name or its schema's `format`."""
    if isinstance(schema, dict) and schema.get("format") in HOST_FORMATS:
        return True
    lowered = name.lower()
    if lowered in HOST_ARGUMENT_WORDS:
        return True
    return any(part in HOST_ARGUMENT_WORDS for part in re.split(r"[_\-.]", lowered))


normalise_host = shared.normalise_host


def _hosts_in_authority(authority: str) -> list[str]:
    """The hosts an authority can name: URL parsers disagree on `\\` and `@`: keep each reading."""
    candidates = []
    for text in {authority, authority.split("\\", 1)[0]}:
        rest = text.rsplit("@", 1)[-1]
        if rest.startswith("["):
            end = rest.find("]")
            candidates.append(rest[1:end] if end != -1 else rest[1:])
            continue
        if rest.count(":") == 1:
            rest = rest.split(":", 1)[0]
        candidates.append(rest)
    return [candidate for candidate in candidates if candidate]


def parse_ipv4_loose(text: str) -> ipaddress.IPv4Address | None:
    """Read an IPv4 address the way `inet_aton` does: 1 to 4 parts, each decimal, octal or hex."""
    address = shared.parse_ip(text) if ":" not in text else None
    return address if isinstance(address, ipaddress.IPv4Address) else None


def parse_ip(text: str, *, loose: bool) -> IPAddress | None:
    """Read an IP address; with `loose`, IPv4 in every spelling `inet_aton` accepts.

    Without `loose`, IPv4 is read only in its standard dotted-quad spelling (so an order id `4411`
    is not an address); either way the address is the shared module's, IPv6 forms that carry an
    IPv4 address folded to it.
    """
    text = text.strip()
    if not loose and ":" not in text:
        try:
            ipaddress.IPv4Address(text)
        except ValueError:
            return None
    return shared.parse_ip(text)


def embedded_addresses(address: IPAddress) -> list[IPAddress]:
    """The address itself and every IPv4 address an IPv6 address carries."""
    return [address, *shared.carried_ipv4(address)]


def classify_address(
    address: IPAddress,
    *,
    allow: Iterable[Network] = (),
    deny: Iterable[tuple[str, Network]] = (),
) -> str | None:
    """Name the disallowed range an address (or an IPv4 address inside it) falls in, or None."""
    for candidate in embedded_addresses(address):
        if any(candidate.version == net.version and candidate in net for net in allow):
            continue
        for name, network in (*deny, *DISALLOWED_RANGES):
            if candidate.version == network.version and candidate in network:
                return name
    return None


def classify_host(
    host: str,
    *,
    allow: Iterable[Network] = (),
    allow_names: frozenset[str] = frozenset(),
    deny: Iterable[tuple[str, Network]] = (),
    deny_names: frozenset[str] = frozenset(),
) -> str | None:
    """Name why a host is disallowed (`metadata`, `private`, `loopback`, ...), or None."""
    host = normalise_host(host)
    if not host or host in allow_names:
        return None
    address = parse_ip(host, loose=True)
    if address is not None:
        return classify_address(address, allow=allow, deny=deny)
    if host in DISALLOWED_NAMES or host.endswith(DISALLOWED_SUFFIXES):
        return "local_name"
    if host in deny_names or any(host.endswith("." + name) for name in deny_names):
        return "denied_name"
    return None


def _strings(value: object, pointer: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{pointer}/{_escape(str(key))}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


_LOOSE_SCHEME = re.compile(r"(?i)^[a-z][a-z0-9+.\-]{0,31}:")
_WORDS = re.compile(r"[\s,;<>\"']+")


def fetched_hosts(text: str) -> list[str]:
    """Every host a fetched value could reach, read the way lenient URL parsers read it.

    Each word is read as it is and without its scheme (`mailto:`, `http:`), its leading slashes and
    backslashes dropped (`http:///host`, `http:\\\\host`), up to the first `/`, `?`, `#` or `\\`,
    then as an authority (user info and port dropped, brackets read).
    """
    hosts: list[str] = []
    for word in _WORDS.split(text):
        if not word:
            continue
        for candidate in dict.fromkeys((word, _LOOSE_SCHEME.sub("", word, count=1))):
            rest = candidate.lstrip("/\\")
            if rest.startswith("["):
                end = rest.find("]")
                authority = (
                    rest
                    if end == -1
                    else rest[: end + 1] + re.split(r"[/?#\\]", rest[end + 1 :], maxsplit=1)[0]
                )
            else:
                authority = re.split(r"[/?#\\]", rest, maxsplit=1)[0]
            for host in _hosts_in_authority(authority):
                if host not in hosts:
                    hosts.append(host)
    return hosts


def find_fetched(arguments: dict[str, object], fetches: Iterable[str]) -> list[Found]:
    """The hosts each fetched argument could reach, each with its JSON pointer (form `fetch`)."""
    found: list[Found] = []
    for name in fetches:
        if name not in arguments:
            continue
        for pointer, text in _strings(arguments[name], "/" + _escape(name)):
            found.extend(Found(pointer, host, "fetch") for host in fetched_hosts(text))
    return found


def in_arguments(pointer: str, names: Iterable[str]) -> bool:
    """Whether a JSON pointer lies in one of the named top-level arguments."""
    return any(
        pointer == (top := "/" + _escape(name)) or pointer.startswith(top + "/") for name in names
    )


def find_destinations(
    arguments: dict[str, object], host_arguments: frozenset[str] = frozenset()
) -> list[Found]:
    """Every destination in the arguments, each with its JSON pointer, in argument order."""
    found: list[Found] = []
    for name, value in arguments.items():
        is_host = name in host_arguments
        for pointer, text in _strings(value, "/" + _escape(name)):
            found.extend(_destinations_in(pointer, text, is_host))
    return found


def _destinations_in(pointer: str, text: str, is_host: bool) -> Iterator[Found]:
    if "/" in text or ":" in text:
        for match in _URL.finditer(text):
            hosts = _hosts_in_authority(match.group(1)) or [""]
            for host in hosts:
                yield Found(pointer, host, "url")
        match = _SCHEME_RELATIVE.match(text.strip())
        if match is not None:
            for host in _hosts_in_authority(match.group(1)):
                yield Found(pointer, host, "url")
        for match in _MAILTO.finditer(text):
            yield Found(pointer, match.group(1).rsplit("@", 1)[-1], "email")
    if "@" in text:
        for match in _EMAIL.finditer(text):
            host = match.group(1).rstrip(".")
            if host.startswith("[") or "." in host or normalise_host(host) in DISALLOWED_NAMES:
                yield Found(pointer, host.strip("[]"), "email")
    stripped = text.strip()
    if not stripped or " " in stripped:
        return
    if (_IPV4_SHAPE.match(stripped) or _IPV6_SHAPE.match(stripped)) and parse_ip(
        stripped, loose=False
    ) is not None:
        yield Found(pointer, stripped, "ip")
        return
    if is_host:
        folded = normalise_host(stripped)
        if (
            parse_ip(folded, loose=True) is not None
            or _HOSTNAME.match(folded)
            or folded in DISALLOWED_NAMES
        ):
            yield Found(pointer, folded, "host")
