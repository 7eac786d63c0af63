"""Egress scopes: the allow and deny lists of an egress rule, and whether a call falls in them.

Entries are CIDRs (`10.0.0.0/8`), IP literals in any spelling (`169.254.169.254`,
`0xA9FEA9FE`), exact hostnames (`api.example.com`, case-insensitive) or hostname suffixes
(`*.example.com`: any name with at least one label before `.example.com`, not the bare
`example.com`). A hostname destination is also resolved (best-effort, only when the lists hold
IPs or CIDRs) and every resolved address is checked against the IP and CIDR entries.

Polarity follows the verdict:

- `allow`: the rule fires when every destination is in scope. A destination is in scope when
  its name is on the allow list, or it has addresses and all of them are on the allow list;
  and neither its name nor any of its addresses is on the deny list (deny carves exceptions).
- any other verdict (enforcement): the rule fires when some destination is blocked. A
  destination is blocked when its name is on the deny list and not on the allow list, or one
  of its addresses is on the deny list and not on the allow list. Names excuse names and
  addresses excuse addresses, so an allowed hostname that resolves into a denied range is
  still blocked: to exempt an internal host from a private-range deny, list its IP or CIDR.

A rule whose call has no destination does not fire (fail closed for the rule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from firewall.engine.addresses import (
    IPAddress,
    IPNetwork,
    is_hostname,
    network_key,
    normalise_host,
    parse_ip,
    parse_network,
)
from firewall.engine.destinations import Destination
from firewall.engine.errors import OperandInvalid
from firewall.engine.vocabulary import EGRESS_FIELDS

#: At most this many distinct hostnames of one call are resolved.
MAX_LOOKUPS_PER_CALL = 8


@dataclass(frozen=True, slots=True)
class EntrySet:
    """One list of an egress rule, split by kind of entry."""

    hosts: frozenset[str]
    suffixes: tuple[str, ...]
    networks: tuple[IPNetwork, ...]
    ranges: tuple[tuple[int, int, int], ...] = ()

    def has_name(self, host: str) -> bool:
        if host in self.hosts:
            return True
        return any(host.endswith(suffix) for suffix in self.suffixes)

    def has_address(self, address: IPAddress) -> bool:
        version, value = address.version, int(address)
        return any(v == version and value & mask == base for v, base, mask in self.ranges)


def _entry_problem(entry: object, field: str) -> tuple[str, str] | None:
    if not isinstance(entry, str):
        return field, "must be a string"
    if "/" in entry or parse_ip(entry) is not None:
        try:
            parse_network(entry, field)
        except OperandInvalid as exc:
            return exc.field, exc.message
        return None
    host = normalise_host(entry)
    if host.startswith("*."):
        host = host[2:]
    if not is_hostname(host):
        return field, f"`{entry}` is not a CIDR, an IP address or a hostname"
    if host.rstrip(".").rsplit(".", 1)[-1].isdigit():
        # A hostname's last label is never all digits, so `192.168.1.300` is a mistyped address.
        return field, f"`{entry}` is not a valid IP address, and a hostname never ends in a number"
    return None


def egress_problems(egress: object, verdict: object) -> list[tuple[str, str]]:
    """Every problem of an `egress` object, as (field inside it, message) pairs."""
    if not isinstance(egress, dict):
        return [("", "must be an object with `allow` and/or `deny` lists")]
    problems: list[tuple[str, str]] = []
    for key in egress:
        if key not in EGRESS_FIELDS:
            problems.append((str(key), "unknown field"))
    sizes = {}
    for key in ("allow", "deny"):
        entries = egress.get(key)
        if entries is None:
            sizes[key] = 0
            continue
        if not isinstance(entries, list):
            problems.append((key, "must be a list of CIDRs, IP addresses or hostnames"))
            sizes[key] = 0
            continue
        sizes[key] = len(entries)
        for index, entry in enumerate(entries):
            problem = _entry_problem(entry, f"{key}[{index}]")
            if problem:
                problems.append(problem)
    if not problems or all(field.startswith(("allow[", "deny[")) for field, _ in problems):
        if sizes["allow"] == 0 and sizes["deny"] == 0:
            problems.append(("", "must list at least one entry in `allow` or `deny`"))
        elif verdict == "allow" and sizes["allow"] == 0:
            problems.append(("allow", "an `allow` rule needs entries here to define its scope"))
        elif verdict != "allow" and sizes["deny"] == 0:
            problems.append(
                ("deny", f"a `{verdict}` rule needs entries here to say what it blocks")
            )
    return problems


def _entry_set(entries: list[str]) -> EntrySet:
    hosts: set[str] = set()
    suffixes: list[str] = []
    networks: list[IPNetwork] = []
    for entry in entries:
        if "/" in entry or parse_ip(entry) is not None:
            networks.append(parse_network(entry))
            continue
        host = normalise_host(entry)
        if host.startswith("*."):
            suffixes.append(host[1:])
        else:
            hosts.add(host)
    return EntrySet(
        frozenset(hosts),
        tuple(dict.fromkeys(suffixes)),
        tuple(networks),
        tuple(network_key(network) for network in networks),
    )


class Lookup:
    """Hostname resolution for one decision: cached, bounded, failures kept as diagnostics."""

    __slots__ = ("_resolver", "_cache", "_allowed")

    def __init__(self, resolver: Callable[[str], Any], destinations: list[Destination]) -> None:
        self._resolver = resolver
        self._cache: dict[str, tuple[tuple[IPAddress, ...], str | None]] = {}
        names = [d.host for d in destinations if d.host is not None]
        self._allowed = frozenset(names[:MAX_LOOKUPS_PER_CALL])

    def addresses(self, host: str) -> tuple[tuple[IPAddress, ...], str | None]:
        """The addresses `host` resolves to, and the diagnostic when it could not be resolved."""
        cached = self._cache.get(host)
        if cached is not None:
            return cached
        if host not in self._allowed:
            result: tuple[tuple[IPAddress, ...], str | None] = (
                (),
                f"hostname `{host}` not resolved: a call may name at most "
                f"{MAX_LOOKUPS_PER_CALL} hostnames",
            )
        else:
            try:
                raw = list(self._resolver(host))
            except Exception:  # the resolver is best-effort: a failure only means "no addresses"
                result = ((), f"hostname `{host}` could not be resolved")
            else:
                found = []
                for text in raw:
                    address = parse_ip(str(text))
                    if address is not None and address not in found:
                        found.append(address)
                result = (tuple(found), None)
        self._cache[host] = result
        return result


@dataclass(frozen=True, slots=True)
class EgressScope:
    """A compiled `egress` object with the polarity its verdict gives it."""

    allow_polarity: bool
    allow: EntrySet
    deny: EntrySet

    @property
    def uses_addresses(self) -> bool:
        return bool(self.allow.networks or self.deny.networks)

    def _addresses(
        self, destination: Destination, lookup: Lookup, notes: list[str]
    ) -> tuple[IPAddress, ...]:
        if destination.ip is not None:
            return (destination.ip,)
        if not self.uses_addresses or destination.host is None:
            return ()
        addresses, note = lookup.addresses(destination.host)
        if note:
            notes.append(note)
        return addresses

    def fires(self, destinations: list[Destination], lookup: Lookup, notes: list[str]) -> bool:
        """Whether the rule fires for these destinations; lookup failures go to `notes`."""
        if not destinations:
            return False
        if self.allow_polarity:
            return all(self._in_scope(d, lookup, notes) for d in destinations)
        return any(self._blocked(d, lookup, notes) for d in destinations)

    def _in_scope(self, destination: Destination, lookup: Lookup, notes: list[str]) -> bool:
        host = destination.host
        addresses = self._addresses(destination, lookup, notes)
        if host is not None and self.deny.has_name(host):
            return False
        if any(self.deny.has_address(a) for a in addresses):
            return False
        if host is not None and self.allow.has_name(host):
            return True
        return bool(addresses) and all(self.allow.has_address(a) for a in addresses)

    def _blocked(self, destination: Destination, lookup: Lookup, notes: list[str]) -> bool:
        host = destination.host
        if host is not None and self.deny.has_name(host) and not self.allow.has_name(host):
            return True
        for address in self._addresses(destination, lookup, notes):
            if self.deny.has_address(address) and not self.allow.has_address(address):
                return True
        return False


def build_egress(egress: object, verdict: object) -> EgressScope:
    """Compile an `egress` object, or raise `OperandInvalid` with its first problem."""
    problems = egress_problems(egress, verdict)
    if problems:
        field, message = problems[0]
        raise OperandInvalid(field, message)
    assert isinstance(egress, dict)
    return EgressScope(
        allow_polarity=verdict == "allow",
        allow=_entry_set(egress.get("allow") or []),
        deny=_entry_set(egress.get("deny") or []),
    )
