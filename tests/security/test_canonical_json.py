"""Canonical JSON is RFC 8785: the form another SDK must reproduce to verify tokens and MACs.

The attacker's finding: `1e16` was written `1e+16` and keys were sorted by code point, so a
verifier written to the RFC disagreed with us on the bytes a history MAC or a token is made over.
The RFC's own examples (`data/rfc8785_vectors.json`) are the vectors.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib
import json
import struct
from pathlib import Path

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from guard.engine import History, NotJSON, ToolCheck, canonical_json
from guard.engine.canonical import is_json
from guard.engine.execution import intent_key

VECTORS = json.loads((Path(__file__).parent / "data" / "rfc8785_vectors.json").read_text())
HISTORY_KEY = b"h" * 32


def _double(hex_bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(hex_bits))[0]


@pytest.mark.parametrize(("bits", "written", "_note"), VECTORS["numbers"])
def test_every_number_of_the_rfcs_appendix_is_written_as_the_rfc_writes_it(bits, written, _note):
    assert canonical_json(_double(bits)) == written


@pytest.mark.parametrize(("bits", "_name"), VECTORS["no_form"])
def test_nan_and_infinity_have_no_canonical_form(bits, _name):
    with pytest.raises(NotJSON):
        canonical_json(_double(bits))
    assert not is_json(_double(bits))


@pytest.mark.parametrize("document", VECTORS["documents"], ids=lambda d: d["name"])
def test_the_rfcs_example_documents_canonicalise_byte_for_byte(document):
    assert canonical_json(json.loads(document["input"])) == document["canonical"]


def test_1e16_is_written_as_the_rfc_writes_it_and_not_as_1e_plus_16():
    assert canonical_json({"amount": 1e16}) == '{"amount":10000000000000000}'
    assert canonical_json([1e-7, 1e21, 0.000001]) == "[1e-7,1e+21,0.000001]"


def test_keys_are_sorted_by_utf16_code_units_not_by_code_point():
    # U+1F600 is the surrogate pair D83D DE00, which sorts before U+FB33 in UTF-16.
    assert canonical_json({"\ufb33": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\ufb33":1}'


def test_an_integer_a_reader_would_round_has_no_canonical_form():
    with pytest.raises(NotJSON):
        canonical_json({"order_id": 2**53 + 1})
    assert not is_json({"order_id": 2**53 + 1})
    assert canonical_json(2**60) == "1152921504606847000"


def test_a_lone_surrogate_has_no_canonical_form():
    with pytest.raises(NotJSON):
        canonical_json({"note": "\ud800"})
    assert not is_json({"note": "\ud800"})


def test_a_history_mac_is_made_over_the_rfc_8785_bytes():
    content = {"tool": "pay", "arguments": {"amount": 1e16, "\ufb33": 1, "\U0001f600": 2}}
    history = History("s-1", HISTORY_KEY)
    entry = history.append(content)
    # What a verifier written to the RFC computes, independently of our serialiser.
    message = (
        '["stalwart-history/1","s-1",0,'
        '{"arguments":{"amount":10000000000000000,"\U0001f600":2,"\ufb33":1},"tool":"pay"},""]'
    )
    expected = hmac.new(HISTORY_KEY, message.encode(), hashlib.sha256).hexdigest()
    assert entry.mac == expected


def test_a_confirmation_token_signs_the_rfc_8785_bytes_of_its_payload():
    catalogue = {
        "agents": {"desk": {"tools": ["pay"]}},
        "tools": [
            {
                "name": "pay",
                "kind": "write",
                "description": "pay",
                "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}},
            }
        ],
    }
    check = ToolCheck(catalogue, key=b"k" * 32)
    history = check.new_history("s-1")
    call = {"tool": "pay", "agent": "desk", "arguments": {"amount": 1e16}}
    token = check.issue_token(call, session=history, now=0)
    _, body, _ = token.split(".")
    payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    assert payload == canonical_json(json.loads(payload)).encode()
    arguments = hashlib.sha256(b'{"amount":10000000000000000}').hexdigest()
    assert json.loads(payload)["arguments"] == arguments


def test_an_idempotency_key_is_derived_from_the_rfc_8785_bytes_of_the_intent():
    key = intent_key(organisation="1", session="s", tool="pay", arguments={"amount": 1e16}, step=0)
    material = (
        '{"arguments":{"amount":10000000000000000},"compensation_of":null,'
        '"organisation":"1","session":"s","step":0,"tool":"pay","v":1}'
    )
    assert key == "ik1-" + hashlib.sha256(material.encode()).hexdigest()


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_the_fast_path_writes_exactly_what_rfc8785_writes(value):
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        with pytest.raises(NotJSON):
            canonical_json(value)
        return
    assert canonical_json(value).encode() == expected


MIGRATION = importlib.import_module("guard.migrations.0004_session_head_rfc8785")


@pytest.mark.django_db
def test_a_history_the_console_signed_before_the_change_still_verifies_after_the_migration(
    organisation,
):
    from django.apps import apps

    from guard.models import GuardSession
    from guard.services import _tool_check, session_history

    session = GuardSession.objects.create(
        organisation=organisation, agent="desk", catalogue={}, created_by="test"
    )
    key = MIGRATION._history_key(organisation.pk)
    # Signed the old way: `1e-07`, and the emoji key sorted after U+FB33 by code point. (Not 1e16:
    # PostgreSQL's jsonb hands it back as an integer, which the old form wrote differently.)
    sid = str(session.public_id)
    arguments = {"amount": 1e-7, "\ufb33": 1, "\U0001f600": 2}
    content = {"tool": "pay", "arguments": arguments, "result": None}
    message = f'["stalwart-history/1","{sid}",0,{MIGRATION._old_canonical(content)},""]'
    mac = hmac.new(key, message.encode(), hashlib.sha256).hexdigest()
    session.history = {"session": sid, "entries": [{"index": 0, "content": content, "mac": mac}]}
    session.save()
    MIGRATION.forwards(apps, None)
    session.refresh_from_db()
    check = _tool_check(session)
    assert len(session_history(check, session)) == 1
    assert session.head["length"] == 1 and session.head["mac"] != mac


@pytest.mark.django_db
def test_a_history_tampered_with_before_the_migration_is_not_re_signed_by_it(organisation):
    from django.apps import apps

    from guard.engine import HistoryInvalid
    from guard.models import GuardSession
    from guard.services import _tool_check, session_history

    session = GuardSession.objects.create(
        organisation=organisation, agent="desk", catalogue={}, created_by="test"
    )
    sid = str(session.public_id)
    forged = {"index": 0, "content": {"tool": "pay", "arguments": {}}, "mac": "0" * 64}
    session.history = {"session": sid, "entries": [forged]}
    session.save()
    MIGRATION.forwards(apps, None)
    session.refresh_from_db()
    assert session.history["entries"][0]["mac"] == "0" * 64
    with pytest.raises(HistoryInvalid):
        session_history(_tool_check(session), session)
