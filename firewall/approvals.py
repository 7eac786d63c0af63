"""Tokens for calls the firewall held for a person: signed over exactly that call, and expiring.

A `require_approval` verdict puts the call in the approvers' queue; approving it signs a token over
the organisation, the agent, the session, the tool and the canonical JSON of the arguments. The
same call sent to `evaluate` again with the token is allowed (`confirmed`); any other call, a changed
argument, another session or an expired token is not.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
from typing import Any

from django.conf import settings
from django.utils import timezone

from guard.engine import canonical_json


def _key(organisation_id: int) -> bytes:
    return hmac.new(
        settings.SECRET_KEY.encode(),
        f"stalwart-firewall:{organisation_id}".encode(),
        hashlib.sha256,
    ).digest()


def _covers(organisation_id: int, call: dict[str, Any]) -> dict[str, Any]:
    arguments = hashlib.sha256(canonical_json(call.get("arguments") or {}).encode()).hexdigest()
    return {
        "o": organisation_id,
        "g": str(call.get("agent", "")),
        "s": str(call.get("session", "")),
        "t": str(call.get("tool", "")),
        "a": arguments,
    }


def issue_token(organisation_id: int, call: dict[str, Any], *, expires: dt.datetime) -> str:
    payload = {**_covers(organisation_id, call), "e": int(expires.timestamp())}
    body = base64.urlsafe_b64encode(json.dumps(payload, sort_keys=True).encode()).decode()
    mac = hmac.new(_key(organisation_id), body.encode(), hashlib.sha256).hexdigest()
    return f"fw1.{body}.{mac}"


def token_problem(organisation_id: int, call: dict[str, Any], token: Any) -> str | None:
    """None when the token covers exactly this call and has not expired; else why not."""
    if not isinstance(token, str) or token.count(".") != 2 or not token.startswith("fw1."):
        return "token_invalid"
    _, body, mac = token.split(".")
    expected = hmac.new(_key(organisation_id), body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, expected):
        return "token_invalid"
    try:
        payload = json.loads(base64.urlsafe_b64decode(body.encode()))
    except ValueError:
        return "token_invalid"
    if {k: v for k, v in payload.items() if k != "e"} != _covers(organisation_id, call):
        return "token_mismatch"
    if timezone.now().timestamp() >= payload.get("e", 0):
        return "token_expired"
    return None
