"""Confirmation tokens: a person's yes, signed, covering one call at one point of the history.

A token is `stw1.<payload>.<mac>`, both parts base64url without padding. The payload is canonical
JSON:

    {"v": 1, "purpose": "call", "agent": ..., "tool": ...,
     "arguments": sha256 of their canonical JSON, "session": ...,
     "at": history length, "head": history MAC at that length, "exp": unix seconds}

and the MAC is HMAC-SHA256 of the payload under the token key. Checking a token against a call
answers with one reason: `token_invalid` (not a token of ours, or its signature fails),
`token_mismatch` (it was issued for another agent, tool, arguments, session or point of the history:
the detail lists which), or `token_expired`. A mismatch is reported before an expiry. Since a token
names the history head, it is spent as soon as the call runs and the history moves on.

Plan tokens (`purpose: "plan"`) sign an approved plan the same way: its id, the canonical JSON
digest of its steps, the session and an expiry.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .canonical import NotJSON, canonical_bytes, canonical_json

PREFIX = "stw1"
DEFAULT_TTL_SECONDS = 900


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def digest(value: Any) -> str:
    """SHA-256 hex of a value's canonical JSON."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def sign(payload: Mapping[str, Any], key: bytes) -> str:
    """Make a token from a payload."""
    body = canonical_bytes(payload)
    mac = hmac.new(key, body, hashlib.sha256).digest()
    return f"{PREFIX}.{_b64(body)}.{_b64(mac)}"


def open_token(token: Any, key: bytes) -> dict[str, Any] | None:
    """The payload of a token whose signature verifies, or None."""
    if not isinstance(token, str) or len(token) > 4096:
        return None
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        return None
    try:
        body = _unb64(parts[1])
        mac = _unb64(parts[2])
    except (binascii.Error, ValueError):
        return None
    if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest(), mac):
        return None
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


@dataclass(frozen=True)
class CallPoint:
    """What a confirmation token covers: this call, in this session, at this history point."""

    agent: str | None
    tool: str
    arguments: Mapping[str, Any]
    session: str
    at: int
    head: str

    def payload(self, expires: int) -> dict[str, Any]:
        return {
            "v": 1,
            "purpose": "call",
            "agent": self.agent,
            "tool": self.tool,
            "arguments": digest(self.arguments),
            "session": self.session,
            "at": self.at,
            "head": self.head,
            "exp": expires,
        }


def issue_call_token(point: CallPoint, *, key: bytes, now: float, ttl: int) -> str:
    """Sign a person's yes to exactly this call at this point, valid for `ttl` seconds."""
    return sign(point.payload(int(now) + int(ttl)), key)


def check_call_token(
    token: Any, point: CallPoint, *, key: bytes, now: float
) -> tuple[str, list[str]] | None:
    """None if the token covers the call; else the reason and the fields that differ."""
    payload = open_token(token, key)
    if payload is None or payload.get("purpose") != "call" or payload.get("v") != 1:
        return "token_invalid", []
    try:
        arguments = digest(point.arguments)
    except NotJSON:
        return "token_mismatch", ["arguments"]
    expected = {
        "agent": point.agent,
        "tool": point.tool,
        "arguments": arguments,
        "session": point.session,
        "history": [point.at, point.head],
    }
    found = {
        "agent": payload.get("agent"),
        "tool": payload.get("tool"),
        "arguments": payload.get("arguments"),
        "session": payload.get("session"),
        "history": [payload.get("at"), payload.get("head")],
    }
    differing = [name for name in expected if expected[name] != found[name]]
    if differing:
        return "token_mismatch", differing
    expires = payload.get("exp")
    if not isinstance(expires, int) or now >= expires:
        return "token_expired", []
    return None


def plan_payload(plan_id: str, steps: Any, session: str, expires: int) -> dict[str, Any]:
    return {
        "v": 1,
        "purpose": "plan",
        "plan": plan_id,
        "steps": hashlib.sha256(canonical_json(steps).encode("utf-8")).hexdigest(),
        "session": session,
        "exp": expires,
    }


def check_plan_token(
    token: Any, plan_id: str, steps: Any, session: str, *, key: bytes, now: float
) -> str | None:
    """None if the plan token approves these steps in this session; else what is wrong."""
    payload = open_token(token, key)
    if payload is None or payload.get("purpose") != "plan":
        return "the plan token is not valid"
    try:
        expected = plan_payload(plan_id, steps, session, payload.get("exp", 0))
    except NotJSON:
        return "the plan is not JSON"
    if payload != expected:
        return "the plan token was issued for another plan or session"
    if not isinstance(payload.get("exp"), int) or now >= payload["exp"]:
        return "the plan token expired"
    return None
