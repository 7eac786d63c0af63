"""What is signed, in the formats the engine documents, where mutation testing found it unguarded.

Histories and tokens outlive the process that signed them (the console signs, a runtime of another
version checks), so their formats are contracts: each history entry is an HMAC-SHA256 over the
canonical JSON of `["stalwart-history/1", session, index, content, previous MAC]`; a token is
`stw1.<payload>.<mac>` over its documented payload; each purpose has its own key derived from the
one secret. A plan token covers the approved steps: a step changed after the approval is refused
(the checks page, "Fora do plano aprovado").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import string

import pytest

from guard.engine import KeyTooShort, ToolCheck, canonical_json
from guard.engine.keys import Keys

from .conftest import KEY, NOW, lab_catalogue

HISTORY_KEY = hmac.new(KEY, b"stalwart/history/1", hashlib.sha256).digest()
TOKEN_KEY = hmac.new(KEY, b"stalwart/token/1", hashlib.sha256).digest()


def opened(token: str, key: bytes = TOKEN_KEY) -> dict:
    prefix, body, mac = token.split(".")
    assert prefix == "stw1"
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    signature = base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))
    assert hmac.compare_digest(hmac.new(key, raw, hashlib.sha256).digest(), signature)
    return json.loads(raw)


def sha256(value) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def test_each_history_entry_is_signed_over_the_documented_message_with_the_history_key():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = check.new_history("sessão-1")
    previous = ""
    for index, order_id in enumerate(("A1", "A2")):
        entry = check.record(
            history, {"tool": "get_order", "arguments": {"order_id": order_id}}, {"ok": True}
        )
        message = json.dumps(
            [
                "stalwart-history/1",
                "sessão-1",
                index,
                json.loads(canonical_json(entry.content)),
                previous,
            ],
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=True,
        )
        expected = hmac.new(HISTORY_KEY, message.encode("utf-8"), hashlib.sha256).hexdigest()
        assert entry.mac == expected
        previous = entry.mac
    assert [entry.index for entry in history] == [0, 1]


def test_a_confirmation_token_carries_the_documented_payload_under_the_token_key():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = check.new_history("s")
    call = {"tool": "pay", "arguments": {"amount": 5}}
    payload = opened(check.issue_token(call, session=history, now=NOW, ttl=60))
    assert payload == {
        "v": 1,
        "purpose": "call",
        "agent": "assistant",
        "tool": "pay",
        "arguments": sha256({"amount": 5}),
        "session": "s",
        "at": 0,
        "head": "",
        "exp": int(NOW.timestamp()) + 60,
    }


PLAN = {
    "id": "p1",
    "steps": [{"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}}],
}


def test_a_plan_token_carries_the_documented_payload_under_the_token_key():
    check = ToolCheck(lab_catalogue(), key=KEY)
    payload = opened(check.issue_plan_token(PLAN, session="s", now=NOW, ttl=60))
    assert payload == {
        "v": 1,
        "purpose": "plan",
        "plan": "p1",
        "steps": sha256(PLAN["steps"]),
        "session": "s",
        "exp": int(NOW.timestamp()) + 60,
    }


def test_a_plan_whose_steps_changed_after_the_approval_is_refused():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = check.new_history("s")
    check.record(history, {"tool": "get_order", "arguments": {"order_id": "A1"}}, {})
    token = check.issue_plan_token(PLAN, session=history, now=NOW)
    changed_plan = {
        "id": "p1",
        "steps": [{"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 900}}],
    }
    call = {
        "tool": "refund_card",
        "arguments": {"order_id": "A1", "amount": 900},
        "origins": {"order_id": "typed", "amount": "typed"},
        "plan": changed_plan,
        "plan_token": token,
    }
    decision = check.check(call, session=history, now=NOW)
    assert (decision.decision, decision.reasons) == ("refuse", ("off_plan",))
    assert decision.detail["problem"] == "the plan token was issued for another plan or session"
    approved = {**call, "arguments": PLAN["steps"][0]["arguments"], "plan": PLAN}
    assert check.check(approved, session=history, now=NOW).reasons == ("write",)


def test_a_key_given_as_text_is_its_utf8_bytes():
    text_key = "uma chave de assinatura longa o bastante ✓"
    as_text = ToolCheck(lab_catalogue(), key=text_key)
    as_bytes = ToolCheck(lab_catalogue(), key=text_key.encode("utf-8"))
    history = as_text.new_history("s")
    call = {"tool": "pay", "arguments": {"amount": 5}}
    token = as_text.issue_token(call, session=history, now=NOW)
    assert as_bytes.check(call, session=history, token=token, now=NOW).reasons == ("confirmed",)


def test_a_key_shorter_than_16_bytes_or_not_bytes_is_refused():
    assert ToolCheck(lab_catalogue(), key=b"k" * 16)
    for key in (b"k" * 15, "k" * 15, 1234567890123456789, None):
        with pytest.raises(KeyTooShort, match=r"^a signing key needs at least 16 bytes$"):
            ToolCheck(lab_catalogue(), key=key)


def test_the_keys_never_show_in_their_repr():
    assert repr(Keys.from_secret(string.ascii_letters)) == "Keys(...)"


def signed(payload: dict, key: bytes = TOKEN_KEY) -> str:
    body = canonical_json(payload).encode("utf-8")
    mac = hmac.new(key, body, hashlib.sha256).digest()
    encode = base64.urlsafe_b64encode
    return f"stw1.{encode(body).rstrip(b'=').decode()}.{encode(mac).rstrip(b'=').decode()}"


def test_a_token_of_another_version_or_prefix_is_not_ours():
    check = ToolCheck(lab_catalogue(), key=KEY)
    history = check.new_history("s")
    call = {"tool": "pay", "arguments": {"amount": 5}}
    token = check.issue_token(call, session=history, now=NOW, ttl=60)
    assert "=" not in token
    payload = opened(token)
    assert check.check(call, session=history, token=signed(payload), now=NOW).reasons == (
        "confirmed",
    )
    newer = signed({**payload, "v": 2})
    assert check.check(call, session=history, token=newer, now=NOW).reasons == ("token_invalid",)
    renamed = "stw2." + token.split(".", 1)[1]
    assert check.check(call, session=history, token=renamed, now=NOW).reasons == ("token_invalid",)


def test_a_history_signed_with_another_key_is_refused_saying_so():
    check = ToolCheck(lab_catalogue(), key=KEY)
    other = ToolCheck(lab_catalogue(), key=b"another key that is long enough")
    decision = check.check(
        {"tool": "pay", "arguments": {"amount": 5}}, session=other.new_history("s")
    )
    assert decision.reasons == ("history_invalid",)
    assert decision.detail["problem"] == "the history is not signed with this check's key"
