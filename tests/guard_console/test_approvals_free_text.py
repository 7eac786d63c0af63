"""The approvals page shows which arguments the catalogue marks as free text (issue 14)."""

from __future__ import annotations

import pytest

from tests.guard_console.test_sessions_api import _post

pytestmark = pytest.mark.django_db

NOTES = {
    "agents": {"desk": {"tools": ["save_note"]}},
    "tools": [
        {
            "name": "save_note",
            "kind": "write",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "text": {"type": "string", "free_text": True},
                },
                "required": ["order_id", "text"],
            },
        }
    ],
}


def test_the_page_marks_a_free_text_argument_and_no_other(editor, approver, client_for):
    client = client_for(editor)
    opened = _post(client, "/v1/sessions", {"agent": "desk", "catalogue": NOTES})
    assert opened.status_code == 201, opened.content
    call = {
        "tool": "save_note",
        "arguments": {"order_id": "A1", "text": "call the customer back"},
        "origins": {"order_id": "typed"},
    }
    body = _post(client, f"/v1/sessions/{opened.json()['id']}/check", call).json()
    assert (body["decision"], body["reasons"]) == ("confirm", ["write"])
    content = client_for(approver).get("/approvals/").content.decode()
    assert 'data-free-text="text"' in content
    assert 'data-free-text="order_id"' not in content
