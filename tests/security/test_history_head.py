"""A session's history cannot be cut short, emptied or swapped without `history_invalid`.

The attacker handed `ToolCheck.check` (and `stalwart check --history`) a history with its last
entry cut off, an empty history, and another session's whole history, and each was taken. A hash
chain alone cannot see any of the three; whoever keeps a history for a session now keeps its head
(session id, length, last MAC) beside it, and a history is only verified against that head.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guard.models import GuardSession
from stalwart_agents import Agent, Client
from stalwart_agents.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop" / "agent.yaml"
KEY = "a signing key of the tests, long enough"
GET = {"tool": "get_order", "agent": "desk", "arguments": {"order_id": "4411"}}


@pytest.fixture(scope="module")
def desk():
    return Agent.from_file(SHOP, verify=False)


@pytest.fixture
def check(desk):
    from guard.engine import ToolCheck

    return ToolCheck(desk.catalogue(), key=KEY, rulebook=desk.rules().record)


def _two_reads(check, session="s-1"):
    history = check.new_history(session)
    for order in ("4411", "4412"):
        check.record(history, {**GET, "arguments": {"order_id": order}}, {"paid": True})
    return history


def _reasons(decision):
    return decision.decision, decision.reasons


# -- the engine ----------------------------------------------------------------------------------


def test_a_history_with_its_last_entry_cut_off_is_refused(check):
    history = _two_reads(check)
    cut = history.to_json()
    cut["entries"].pop()
    decision = check.check(GET, session=cut, head=history.head)
    assert _reasons(decision) == ("refuse", ("history_invalid",))


def test_an_emptied_history_is_refused(check):
    history = _two_reads(check)
    emptied = {"session": history.session, "entries": []}
    decision = check.check(GET, session=emptied, head=history.head)
    assert _reasons(decision) == ("refuse", ("history_invalid",))


def test_another_sessions_whole_history_is_refused(check):
    ours, theirs = _two_reads(check, "s-ours"), _two_reads(check, "s-theirs")
    swapped = check.check(GET, session=theirs.to_json(), head=ours.head)
    assert _reasons(swapped) == ("refuse", ("history_invalid",))
    # Relabelled as ours, its MACs still name the other session: the id comes from the head.
    relabelled = {**theirs.to_json(), "session": "s-ours"}
    decision = check.check(GET, session=relabelled, head=ours.head)
    assert _reasons(decision) == ("refuse", ("history_invalid",))


def test_another_sessions_history_object_is_refused_against_this_sessions_head(check):
    ours, theirs = _two_reads(check, "s-ours"), _two_reads(check, "s-theirs")
    decision = check.check(GET, session=theirs, head=ours.head)
    assert _reasons(decision) == ("refuse", ("history_invalid",))


def test_a_history_handed_in_without_the_head_it_must_end_at_is_refused(check):
    history = _two_reads(check)
    assert _reasons(check.check(GET, session=history.to_json())) == (
        "refuse",
        ("history_invalid",),
    )
    assert check.check(GET, session=history.to_json(), head=history.head).decision == "allow"


# -- the SDK: LocalSession keeps the head per session ---------------------------------------------


def test_a_local_session_given_another_sessions_history_refuses(desk):
    with Client(url="") as client:
        ours = client.session("desk", catalogue=desk.catalogue(), rulebook=desk.rules().record)
        theirs = client.session("desk", catalogue=desk.catalogue(), rulebook=desk.rules().record)
    theirs.record("get_order", {"order_id": "4411"}, {"paid": True})
    ours.history = theirs.history
    decision = ours.check_tool_call("get_order", {"order_id": "4411"})
    assert (decision.decision, decision.reasons) == ("refuse", ["history_invalid"])


def test_a_local_session_whose_history_was_emptied_refuses(desk):
    with Client(url="") as client:
        session = client.session("desk", catalogue=desk.catalogue(), rulebook=desk.rules().record)
    session.record("get_order", {"order_id": "4411"}, {"paid": True})
    session.history = session._check.new_history(session.history.session)
    decision = session.check_tool_call("get_order", {"order_id": "4411"})
    assert (decision.decision, decision.reasons) == ("refuse", ["history_invalid"])


# -- the console: the server keeps the head per session -------------------------------------------


def _post(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_a_history_cut_short_behind_the_consoles_back_is_refused(desk, editor, client_for):
    client = client_for(editor)
    opened = _post(
        client,
        "/v1/sessions",
        {"agent": "desk", "catalogue": desk.catalogue(), "rulebook": desk.rules().record},
    )
    session_id = opened.json()["id"]
    read = {"tool": "get_order", "arguments": {"order_id": "4411"}}
    for _ in range(2):
        recorded = _post(client, f"/v1/sessions/{session_id}/record", {**read, "result": {}})
        assert recorded.status_code in (200, 201), recorded.content
    before = _post(client, f"/v1/sessions/{session_id}/check", read).json()
    assert before["decision"] == "allow"
    session = GuardSession.objects.get(public_id=session_id)
    session.history = {**session.history, "entries": session.history["entries"][:1]}
    session.save(update_fields=["history"])
    body = _post(client, f"/v1/sessions/{session_id}/check", read).json()
    assert (body["decision"], body["reasons"]) == ("refuse", ["history_invalid"])


@pytest.mark.django_db
def test_another_sessions_history_copied_into_a_console_session_is_refused(
    desk, editor, client_for
):
    client = client_for(editor)
    opened = [
        _post(
            client,
            "/v1/sessions",
            {"agent": "desk", "catalogue": desk.catalogue(), "rulebook": desk.rules().record},
        ).json()["id"]
        for _ in range(2)
    ]
    read = {"tool": "get_order", "arguments": {"order_id": "4411"}}
    _post(client, f"/v1/sessions/{opened[1]}/record", {**read, "result": {}})
    ours, theirs = (GuardSession.objects.get(public_id=i) for i in opened)
    ours.history = theirs.history
    ours.save(update_fields=["history"])
    body = _post(client, f"/v1/sessions/{opened[0]}/check", read).json()
    assert (body["decision"], body["reasons"]) == ("refuse", ["history_invalid"])


# -- the CLI: a signed history comes with the head it must end at ---------------------------------


def _write(path: Path, data) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def _cli(tmp_path, history, head=None):
    call = _write(tmp_path / "call.json", {"tool": "get_order", "arguments": {"order_id": "4411"}})
    argv = ["check", "--agent", str(SHOP), "--agent-name", "desk", "--call", call]
    argv += ["--history", _write(tmp_path / "history.json", history)]
    if head is not None:
        argv += ["--history-head", _write(tmp_path / "head.json", head)]
    return main(argv)


def test_stalwart_check_refuses_a_signed_history_given_without_its_head(
    check, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("STALWART_HISTORY_KEY", KEY)
    history = _two_reads(check)
    emptied = {"session": history.session, "entries": []}
    assert _cli(tmp_path, emptied) == 1
    assert "--history-head" in capsys.readouterr().err


def test_stalwart_check_refuses_a_signed_history_cut_short_of_its_head(
    check, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("STALWART_HISTORY_KEY", KEY)
    history = _two_reads(check)
    cut = history.to_json()
    cut["entries"].pop()
    assert _cli(tmp_path, cut, history.head) == 1
    assert json.loads(capsys.readouterr().out)["reasons"] == ["history_invalid"]
    assert _cli(tmp_path, history.to_json(), history.head) == 0
