"""Where a call goes: its `destination`, else the URLs, hosts and IPs among its arguments.

A destination is a hostname or a normalised IP address. The call's own `destination` wins when
present; otherwise the arguments are walked (iteratively, so depth cannot exhaust the stack)
and these are taken:

- every string under a destination-like key (`url`, `uri`, `href`, `link`, `endpoint`, `host`,
  `hostname`, `domain`, `ip`, `server`, `destination`, `target`, their plurals, and keys ending
  in `_url`, `_uri`, `_host`, `_hostname`, `_ip`, `_domain` or `_endpoint`), read as a URL, a
  host or an IP in any spelling; integers under such keys are read as integer IPv4 addresses;
- every URL (`scheme://...`) found inside any string;
- every string that is as a whole an IP literal with four dotted parts, or IPv6.

A URL whose authority holds a backslash yields both readings (`evil.example\\@10.0.0.1` is
`evil.example` to a browser and `10.0.0.1` to other parsers), so a deny list sees both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import re2

from firewall.engine.addresses import (
    IPAddress,
    is_hostname,
    looks_like_ip,
    normalise_host,
    parse_ip,
)
from firewall.engine.values import utf8_safe

_URL_IN_TEXT = re2.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")

_KEYS = frozenset(
    {
        "url",
        "uri",
        "href",
        "link",
        "endpoint",
        "host",
        "hostname",
        "domain",
        "ip",
        "server",
        "destination",
        "target",
    }
)
_KEYS_ALL = _KEYS | {key + "s" for key in _KEYS}
_KEY_SUFFIXES = ("_url", "_uri", "_host", "_hostname", "_ip", "_domain", "_endpoint")
_KEY_SUFFIXES_ALL = _KEY_SUFFIXES + tuple(suffix + "s" for suffix in _KEY_SUFFIXES)


@dataclass(frozen=True, slots=True)
class Destination:
    """One place a call reaches: a hostname (`host`) or an address (`ip`), never both."""

    host: str | None
    ip: IPAddress | None

    def __str__(self) -> str:
        return self.host if self.host is not None else str(self.ip)


def is_destination_key(key: object) -> bool:
    """Whether an argument's key names a destination."""
    if not isinstance(key, str):
        return False
    lowered = key.lower()
    return lowered in _KEYS_ALL or lowered.endswith(_KEY_SUFFIXES_ALL)


def _host_destination(text: str) -> Destination | None:
    # Normalised first: a percent-encoded or full-width address is an address, not a name.
    host = normalise_host(text)
    ip = parse_ip(host)
    if ip is not None:
        return Destination(None, ip)
    if host and not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    return Destination(host, None) if is_hostname(host) else None


def parse_destination(text: str) -> list[Destination]:
    """The destinations a URL, `host[:port][/path]` or IP literal names (empty when none)."""
    text = text.strip()
    if not text or len(text) > 4096:
        return []
    ip = parse_ip(text)
    if ip is not None:
        return [Destination(None, ip)]
    try:
        parts = urlsplit(text if "://" in text else "//" + text)
        netloc = parts.netloc
        hosts = [parts.hostname or ""]
    except ValueError:
        return []
    if "\\" in netloc:
        # a backslash ends the authority for browsers but not for urllib: keep both readings
        browser = netloc.split("\\", 1)[0].rsplit("@", 1)[-1]
        if browser.startswith("["):
            browser = browser.split("]", 1)[0] + "]"
        elif browser.count(":") == 1:
            browser = browser.split(":", 1)[0]
        hosts.append(browser)
    found: list[Destination] = []
    for host in hosts:
        destination = _host_destination(host) if host else None
        if destination is not None and destination not in found:
            found.append(destination)
    return found


def argument_destinations(arguments: Any) -> list[Destination]:
    """Every destination named inside the arguments, in a stable order, without repeats."""
    found: list[Destination] = []
    seen: set[Destination] = set()

    def add(items: list[Destination]) -> None:
        for item in items:
            if item not in seen:
                seen.add(item)
                found.append(item)

    stack: list[tuple[bool, Any]] = [(False, arguments)]
    while stack:
        keyed, value = stack.pop()
        if isinstance(value, str):
            if keyed:
                add(parse_destination(value))
            else:
                if "://" in value:
                    for match in _URL_IN_TEXT.finditer(utf8_safe(value)):
                        add(parse_destination(match.group(0)))
                stripped = value.strip()
                if looks_like_ip(stripped):
                    add(parse_destination(stripped))
        elif isinstance(value, dict):
            items = list(value.items())
            for key, item in reversed(items):
                stack.append((is_destination_key(key), item))
        elif isinstance(value, list):
            for item in reversed(value):
                stack.append((keyed, item))
        elif keyed and isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value < 2**32:
                add(parse_destination(str(value)))
    return found
