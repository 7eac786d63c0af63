"""Tokens for calls the firewall held for a person: signed over the whole call, spent once.

A `require_approval` verdict puts the call in the approvers' queue; approving it signs a token over
the call as the firewall evaluated it: the organisation, the tool, the skill, the stage (with its
default filled in, as the engine reads it), the destination, the canonical JSON of the arguments,
the agent, the session, the kind and the person the call is for, and the approval it answers.
The same call sent to `evaluate` again with the token is allowed (`confirmed`) once: the approval
records the token as spent in the transaction of that call, so a second call with it is refused
(`token_spent`). Any other call (another destination, stage, argument or session) is refused as
`token_mismatch`, and a token past its time as `token_expired`.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import uuid
from typing import Any

from django.conf import settings
from django.utils import timezone

from firewall.engine.calls import read_call
from guard.engine import NotJSON, canonical_json

# The parts of a call a token covers, beside the organisation and the arguments' digest.
COVERED = ("tool", "skill", "stage", "destination", "agent", "session", "kind", "user")


def _key(organisation_id: int) -> bytes:
    return hmac.new(
        settings.SECRET_KEY.encode(),
        f"stalwart-firewall:{organisation_id}".encode(),
        hashlib.sha256,
    ).digest()


def covered(organisation_id: int, call: dict[str, Any]) -> dict[str, Any] | None:
    """The call as the firewall evaluates it, in the form a token signs; None if it cannot be read."""
    view = read_call(call)
    if isinstance(view, str):
        return None
    try:
        arguments = hashlib.sha256(canonical_json(view.arguments).encode()).hexdigest()
    except NotJSON:  # arguments that have no canonical form match no token
        return None
    return {
        "o": organisation_id,
        "tool": view.tool,
        "skill": view.skill or "",
        "stage": view.stage,
        "destination": view.destination or "",
        "agent": str(call.get("agent") or ""),
        "session": str(call.get("session") or ""),
        "kind": str(call.get("kind") or "write"),
        "user": str(call.get("user") or ""),
        "arguments": arguments,
    }


def issue_token(
    organisation_id: int, call: dict[str, Any], *, expires: dt.datetime, approval: str
) -> str:
    """Sign a person's yes to exactly this call, for the approval `approval`, until `expires`."""
    covers = covered(organisation_id, call)
    if covers is None:
        raise ValueError("the held call cannot be read, so no token can cover it")
    payload = {**covers, "approval": approval, "e": int(expires.timestamp())}
    body = base64.urlsafe_b64encode(json.dumps(payload, sort_keys=True).encode()).decode()
    mac = hmac.new(_key(organisation_id), body.encode(), hashlib.sha256).hexdigest()
    return f"fw2.{body}.{mac}"


def token_payload(organisation_id: int, token: Any) -> dict[str, Any] | None:
    """The payload of a token of this organisation whose signature verifies, or None."""
    if not isinstance(token, str) or len(token) > 8192 or token.count(".") != 2:
        return None
    prefix, body, mac = token.split(".")
    if prefix != "fw2":
        return None
    expected = hmac.new(_key(organisation_id), body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, expected):
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(body.encode()))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def token_problem(organisation_id: int, call: dict[str, Any], token: Any) -> tuple[str, list[str]]:
    """`("", [])` when the token covers exactly this call and has not expired; else the reason and
    the parts of the call that differ. Whether it was spent is the caller's to ask (`spend`)."""
    payload = token_payload(organisation_id, token)
    if payload is None:
        return "token_invalid", []
    covers = covered(organisation_id, call)
    if covers is None:
        return "token_mismatch", ["call"]
    differing = [name for name in covers if payload.get(name) != covers[name]]
    if differing:
        return "token_mismatch", differing
    expires = payload.get("e")
    if not isinstance(expires, int) or timezone.now().timestamp() >= expires:
        return "token_expired", []
    return "", []


def spend(organisation_id: int, token: str) -> bool:
    """Mark the token's approval spent; False when it was spent already (or was never approved).

    One conditional UPDATE, in the caller's transaction: of two calls racing with one token, the
    second waits for the first's row lock and then finds the token spent.
    """
    from guard.models import ApprovalRequest

    approval = (token_payload(organisation_id, token) or {}).get("approval")
    try:
        approval = uuid.UUID(str(approval))
    except ValueError:
        return False
    return bool(
        ApprovalRequest.objects.filter(
            organisation_id=organisation_id,
            public_id=approval,
            source="firewall",
            status=ApprovalRequest.Status.APPROVED,
            token_spent_at__isnull=True,
        ).update(token_spent_at=timezone.now())
    )
