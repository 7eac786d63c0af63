"""Decision logs on the agent's side: the session's records, the durable spool, and the shipper's
handling of a console that refuses, without a console (the live console is in
test_decision_log_faults.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid

import pytest

from stalwart_agents import runtime
from stalwart_agents.spool import Shipper, ShipRefused, Spool, SpoolFull
from tests.guard.engine.conftest import lab_catalogue

KEY = b"k" * 32


def _session(**state):
    return runtime.open_session("assistant", catalogue=lab_catalogue(), key=KEY, **state)


def test_a_session_hands_its_sink_one_record_per_decision_and_per_call_that_ran():
    records: list[dict] = []
    session = _session(sink=records.append, policy_version=7)
    session.check("get_order", {"order_id": "A1"})
    ran = session.execute("get_order", {"order_id": "A2"}, lambda order_id: {"id": order_id})
    assert ran["outcome"] == "SUCCEEDED"
    assert [(r["kind"], r["tool"], r["sequence"]) for r in records] == [
        ("decision", "get_order", 1),
        ("decision", "get_order", 2),
        ("execution", "get_order", 3),
    ]
    first = records[0]
    assert uuid.UUID(first["id"]) and len({r["id"] for r in records}) == 3
    assert first["session"] == session.history.session and first["agent"] == "assistant"
    assert first["decision"] == "allow" and first["policy_version"] == 7
    assert records[2]["outcome"] == "SUCCEEDED" and isinstance(first["at"], float)
    assert json.loads(json.dumps(records)) == records  # plain JSON


def test_a_check_then_the_execution_of_the_same_call_is_one_decision_in_the_logs():
    """A door that checks a call, then executes it (the gateway, asking its firewall in between):
    the executor's check of the same call at the same point, with the same answer, is the same
    decision. A check repeated without running is two attempts, and another call is another."""
    records: list[dict] = []
    session = _session(sink=records.append)
    session.check("get_order", {"order_id": "A1"})
    ran = session.execute("get_order", {"order_id": "A1"}, lambda order_id: {"id": order_id})
    assert ran["outcome"] == "SUCCEEDED"
    assert [(r["kind"], r["detail"]["call"]["arguments"]) for r in records] == [
        ("decision", {"order_id": "A1"}),
        ("execution", {"order_id": "A1"}),
    ]
    records.clear()
    session.check("get_order", {"order_id": "A2"})
    session.check("get_order", {"order_id": "A2"})
    session.execute("get_order", {"order_id": "A3"}, lambda order_id: {"id": order_id})
    assert [(r["kind"], r["detail"]["call"]["arguments"]) for r in records] == [
        ("decision", {"order_id": "A2"}),
        ("decision", {"order_id": "A2"}),
        ("decision", {"order_id": "A3"}),
        ("execution", {"order_id": "A3"}),
    ]


def test_an_execution_no_door_checked_first_is_a_decision_each_time_even_refused_again():
    """A door that lets the executor's check be its only one (the gateway): the same call refused
    twice at the same point is two attempts in the logs, and a door's check followed by two
    executions of it is the check once and the second execution's own decision."""
    records: list[dict] = []
    session = _session(sink=records.append)
    for _ in range(2):
        refused = session.execute("no_such_tool", {}, lambda: None, undo_on_refusal=False)
        assert refused["outcome"] == "REFUSED"
    assert [(r["kind"], r["tool"], r["decision"]) for r in records] == [
        ("decision", "no_such_tool", "refuse"),
        ("decision", "no_such_tool", "refuse"),
    ]
    records.clear()
    session.check("no_such_tool", {})
    session.execute("no_such_tool", {}, lambda: None)
    session.execute("no_such_tool", {}, lambda: None)
    assert [r["kind"] for r in records] == ["decision", "decision"]


def test_a_record_is_redacted_through_the_credential_table():
    records: list[dict] = []
    session = _session(sink=records.append)
    session.check(
        "save_note",
        {"text": "key AKIAIOSFODNN7EXAMPLE here", "password": "hunter2"},
    )
    text = json.dumps(records)
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "hunter2" not in text
    assert "[redacted" in text


def test_a_record_too_large_keeps_its_fields_but_not_its_arguments():
    records: list[dict] = []
    _session(sink=records.append).check("save_note", {"text": "x" * 100_000})
    (record,) = records
    assert record["tool"] == "save_note" and record["detail"]["truncated"] > 100_000
    assert len(json.dumps(record)) < runtime.RECORD_MAX_BYTES


def test_the_spool_writes_the_text_a_record_was_measured_by_and_a_plain_dict_as_it_is(tmp_path):
    spool = Spool(tmp_path / "s.sqlite3")
    session = _session(sink=spool)
    session.check("save_note", {"text": "key AKIAIOSFODNN7EXAMPLE here", "é": (1, 2)})
    session.check("save_note", {"text": "x" * 100_000})
    spool({"id": "plain", "n": (1, 2)})
    bodies = [body for _, body in spool.peek(10)]
    first, large, plain = (json.loads(body) for body in bodies)
    assert "AKIAIOSFODNN7EXAMPLE" not in bodies[0] and first["detail"]["call"]["arguments"][
        "é"
    ] == [1, 2]
    assert large["detail"]["truncated"] > 100_000 and len(bodies[1]) < runtime.RECORD_MAX_BYTES
    assert plain == {"id": "plain", "n": [1, 2]}
    # The text is the record's own, byte for byte, as a second writing out would give.
    assert bodies[:2] == [json.dumps(json.loads(b), separators=(",", ":")) for b in bodies[:2]]


def test_a_sink_of_its_own_gets_a_plain_dict_and_what_it_changes_is_what_a_spool_writes(tmp_path):
    spool = Spool(tmp_path / "s.sqlite3")
    handed: list = []

    def tagging(record):  # a host's sink that edits each record, then spools it
        handed.append(type(record))
        record["detail"]["host"] = "tagged"
        spool(record)

    _session(sink=tagging).check("get_order", {"order_id": "A1"})
    assert handed == [dict]
    ((_, body),) = spool.peek(10)
    assert json.loads(body)["detail"]["host"] == "tagged"


def test_a_failing_sink_changes_no_decision_and_its_records_are_handed_again_in_order():
    taken: list[dict] = []
    failing = {"on": True}

    def sink(record):
        if failing["on"]:
            raise OSError("disk gone")
        taken.append(record)

    plain = _session()
    logged = _session(sink=sink)
    for tool, arguments in (
        ("get_order", {"order_id": "A1"}),
        ("refund_card", {"order_id": "A1", "amount": 5}),
    ):
        assert logged.check(tool, arguments).decision == plain.check(tool, arguments).decision
    assert len(logged.unlogged) == 2 and taken == []
    failing["on"] = False
    logged.check("get_order", {"order_id": "A3"})
    assert [r["sequence"] for r in taken] == [1, 2, 3] and logged.unlogged == []


def test_the_spool_keeps_records_across_a_process_that_is_killed(tmp_path):
    path = tmp_path / "spool.sqlite3"
    code = (
        "import os, sys; sys.path.insert(0, '.');"
        "from stalwart_agents.spool import Spool;"
        f"s = Spool({str(path)!r});"
        "[s({'id': str(i), 'session': 's', 'sequence': i}) for i in range(1, 51)];"
        "os._exit(9)"  # no close, no flush: as if killed
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 9
    spool = Spool(path)
    rows = spool.peek(100)
    assert [json.loads(body)["sequence"] for _, body in rows] == list(range(1, 51))
    assert spool.pending() == 50


def test_a_full_spool_refuses_the_record_and_says_so(tmp_path, caplog):
    spool = Spool(tmp_path / "s.sqlite3", max_records=2)
    spool({"id": "1"})
    spool({"id": "2"})
    with pytest.raises(SpoolFull):
        spool({"id": "3"})
    status = spool.status()
    assert status["full"] and status["refused"] == 1 and status["pending"] == 2
    assert "is full" in caplog.text
    spool.ack([position for position, _ in spool.peek(1)])
    spool({"id": "3"})  # room again
    assert [json.loads(b)["id"] for _, b in spool.peek(10)] == ["2", "3"]


def test_a_session_whose_spool_is_full_still_decides_and_keeps_the_record(tmp_path):
    spool = Spool(tmp_path / "s.sqlite3", max_records=1)
    session = _session(sink=spool)
    session.check("get_order", {"order_id": "A1"})
    assert session.check("get_order", {"order_id": "A2"}).decision == "allow"
    assert len(session.unlogged) == 1 and spool.pending() == 1


class _Refusing(Shipper):
    """A shipper whose console refuses every batch holding the record `bad` (400)."""

    def __init__(self, spool):
        super().__init__(spool, url="http://127.0.0.1:9", api_key="k", batch=8)
        self.sent: list[list[str]] = []

    def _post(self, bodies):
        ids = [json.loads(body)["id"] for body in bodies]
        self.sent.append(ids)
        if "bad" in ids:
            raise ShipRefused(400, {"records": ["refused"]})
        return {"stored": len(ids), "duplicates": 0, "unreadable": []}


def test_a_record_the_console_refuses_alone_is_parked_and_the_rest_ship_in_order(tmp_path):
    spool = Spool(tmp_path / "s.sqlite3")
    for ident in ["a", "b", "c", "bad", "d", "e"]:
        spool({"id": ident})
    shipper = _Refusing(spool)
    while spool.pending():
        shipper.ship_once()
    shipped = [i for batch in shipper.sent for i in batch if "bad" not in batch]
    assert shipped == ["a", "b", "c", "d", "e"]
    assert spool.status()["parked"] == 1


def test_a_position_given_again_never_overwrites_a_parked_record_and_order_holds(tmp_path):
    # A position is one past the highest waiting: once the top records left, it is given again.
    spool = Spool(tmp_path / "s.sqlite3")
    spool({"id": "first"})
    ((position, _),) = spool.peek(10)
    spool.park(position, "refused: first")
    spool({"id": "second"})
    ((again, _),) = spool.peek(10)
    assert again == position
    spool.park(again, "refused: second")
    rows = spool._reader.execute("SELECT id, reason FROM parked ORDER BY number").fetchall()
    assert rows == [("first", "refused: first"), ("second", "refused: second")]
    for ident in ["a", "b", "c"]:
        spool({"id": ident})
    top = spool.peek(10)[-1][0]
    spool.ack([top])
    spool({"id": "d"})
    assert [json.loads(body)["id"] for _, body in spool.peek(10)] == ["a", "b", "d"]


def test_a_spool_made_before_keeps_working(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE records (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, "
        "session TEXT NOT NULL, hash INTEGER NOT NULL, body TEXT NOT NULL, size INTEGER NOT NULL, "
        "written REAL NOT NULL);"
        "CREATE TABLE parked (position INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL, "
        "reason TEXT NOT NULL, parked REAL NOT NULL);"
    )
    old.execute(
        "INSERT INTO records (id, session, hash, body, size, written) VALUES (?, ?, ?, ?, ?, ?)",
        ("waiting", "s", 0, '{"id":"waiting"}', 16, 0.0),
    )
    old.commit()
    old.close()
    spool = Spool(path)
    spool({"id": "new", "session": "s"})
    assert [json.loads(body)["id"] for _, body in spool.peek(10)] == ["waiting", "new"]
    position = spool.peek(1)[0][0]
    spool.park(position, "refused")
    assert spool.status()["parked"] == 1 and spool.pending() == 1


class _Counting(Shipper):
    """A shipper whose console takes every batch, counting the posts."""

    def __init__(self, spool, linger):
        super().__init__(spool, url="http://127.0.0.1:9", api_key="k", lanes=1, linger=linger)
        self.sent: list[list[str]] = []

    def _post(self, bodies):
        self.sent.append([json.loads(body)["id"] for body in bodies])
        return {"stored": len(bodies), "duplicates": 0, "unreadable": []}


@pytest.mark.parametrize("linger", [0.0, 0.1])
def test_a_stream_of_records_ships_in_a_few_batches_in_order(tmp_path, linger):
    import time

    spool = Spool(tmp_path / "s.sqlite3")
    shipper = _Counting(spool, linger).start()
    try:
        for n in range(60):
            spool({"id": f"r{n}", "session": "s"})
            time.sleep(0.005)
        assert shipper.flush(timeout=10)
    finally:
        shipper.stop()
    assert [i for batch in shipper.sent for i in batch] == [f"r{n}" for n in range(60)]
    if linger:  # each post waits for the records of the next 0.1 s: a handful of posts
        assert len(shipper.sent) <= 15
    else:  # without it, nearly a post per record (what cost the runtime its tail)
        assert len(shipper.sent) > 30


def test_a_linger_longer_than_the_interval_is_refused(tmp_path):
    with pytest.raises(ValueError, match="linger"):
        Shipper(Spool(tmp_path / "s.sqlite3"), url="http://x", api_key="k", linger=1.0)


def test_by_default_a_batch_lingers_one_interval(tmp_path):
    """Five posts a second per lane at most, however fast the decisions come (the runtime's p99
    met a post every 25 ms at 0.05 s); a shorter interval given shortens it with it."""
    spool = Spool(tmp_path / "s.sqlite3")
    assert Shipper(spool, url="http://x", api_key="k").linger == 0.2
    assert Shipper(spool, url="http://x", api_key="k", interval=0.05).linger == 0.05


def test_by_default_a_stream_of_records_is_a_few_posts_a_second(tmp_path):
    import time

    spool = Spool(tmp_path / "s.sqlite3")
    shipper = _Counting(spool, None).start()
    try:
        began = time.monotonic()
        for n in range(100):
            spool({"id": f"r{n}", "session": "s"})
            time.sleep(0.005)
        assert shipper.flush(timeout=10)
        took = time.monotonic() - began
    finally:
        shipper.stop()
    assert [i for batch in shipper.sent for i in batch] == [f"r{n}" for n in range(100)]
    # One lane, a post at most every 0.2 s (and one more for what the flush found).
    assert len(shipper.sent) <= took / 0.2 + 2


def _records(count: int, session: str = "s") -> list[dict]:
    return [{"id": f"{session}-{n}", "session": session, "n": n} for n in range(count)]


def test_the_shipper_reads_a_batch_while_a_decision_holds_the_writer(tmp_path):
    """A peek reads through the shipper's own connection: a decision's append (the writer's
    lock) never waits for a batch being read out, and a peek never waits for an append."""
    import threading

    spool = Spool(tmp_path / "s.sqlite3")
    for record in _records(3):
        spool.append(record)
    read: list = []
    with spool._lock:  # an append in progress
        reader = threading.Thread(target=lambda: read.extend(spool.peek(10)))
        reader.start()
        reader.join(timeout=5)
        assert not reader.is_alive(), "the peek waited for the writer's lock"
    assert [json.loads(body)["n"] for _, body in read] == [0, 1, 2]


class _CountingLock:
    def __init__(self) -> None:
        import threading

        self.lock, self.taken = threading.Lock(), 0

    def __enter__(self):  # noqa: ANN204
        self.lock.acquire()
        self.taken += 1
        return self

    def __exit__(self, *exc):  # noqa: ANN002, ANN204
        self.lock.release()


def test_an_ack_deletes_a_chunk_at_a_time_under_the_writers_lock(tmp_path):
    """A decision's append waits for one chunk of a batch's delete, never the whole batch."""
    from stalwart_agents import spool as spool_module

    spool = Spool(tmp_path / "s.sqlite3")
    for record in _records(100):
        spool.append(record)
    rows = spool.peek(100)
    spool._lock = _CountingLock()
    spool.ack([position for position, _ in rows[:70]])
    assert spool._lock.taken == -(-70 // spool_module.ACK_CHUNK) == 3
    assert spool.pending() == 30
    assert spool.status()["bytes"] == sum(len(body.encode()) for _, body in rows[70:])
    left = spool.peek(100)
    assert [json.loads(body)["n"] for _, body in left] == list(range(70, 100))
    spool.ack([position for position, _ in left])
    assert spool.status()["pending"] == 0 and spool.status()["bytes"] == 0


def test_an_ack_deletes_only_the_positions_given_of_its_lane(tmp_path):
    spool = Spool(tmp_path / "s.sqlite3")
    for record in _records(4, "a") + _records(4, "b"):
        spool.append(record)
    lanes = {lane: spool.peek(10, lane, 2) for lane in (0, 1)}
    first, other = (lanes[0], lanes[1]) if lanes[0] else (lanes[1], lanes[0])
    lane = 0 if lanes[0] is first else 1
    # The other lane's positions, given to this lane's ack, are not this lane's: kept.
    spool.ack([position for position, _ in other], lane, 2)
    assert spool.pending() == 8
    spool.ack([position for position, _ in first[:2]], lane, 2)
    assert spool.pending() == 6
    assert [p for p, _ in spool.peek(10, lane, 2)] == [p for p, _ in first[2:]]


def test_the_shipper_checkpoints_the_wal_so_that_no_append_has_to(tmp_path):
    from stalwart_agents import spool as spool_module

    spool = Spool(tmp_path / "s.sqlite3")
    # SQLite's default is 1,000 pages: the append crossing it would wait for the checkpoint.
    assert spool._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == spool_module.WAL_PAGES
    assert spool_module.WAL_PAGES >= 10_000
    for record in _records(50):
        spool.append(record)
    checked: list = []
    original = spool.checkpoint
    spool.checkpoint = lambda: checked.append(original()) or checked[-1]
    assert _Counting(spool, 0.0).ship_once() == 50  # one batch, shipped and deleted
    assert len(checked) == 1
    pages, copied = checked[0]
    assert pages > 0 and copied == pages


def test_a_shipper_that_cannot_reach_the_console_still_checkpoints(tmp_path):
    import threading

    spool = Spool(tmp_path / "s.sqlite3")
    spool.append({"id": "1", "session": "s"})
    checked = threading.Event()
    original = spool.checkpoint
    spool.checkpoint = lambda: (checked.set(), original())[1]
    with socket.socket() as probe:  # a port the OS gave, closed again: nobody answers there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    shipper = Shipper(spool, url=url, api_key="k", backoff=(0.01, 0.02), lanes=1)
    shipper.start()
    try:
        assert checked.wait(5)
    finally:
        shipper.stop()
    assert spool.pending() == 1 and shipper.failures >= 1


def test_a_spool_is_one_console_and_keys_and_refuses_another(tmp_path):
    """A shipper sends what waits in its spool with its own key: a spool file is claimed by the
    first console and key that ships it, and another is refused it (its records would otherwise
    go to the other key's organisation). The same one may open it again (a restart)."""
    from stalwart_agents.spool import SpoolTaken, decision_log

    path = tmp_path / "decisions.sqlite3"
    url = "http://127.0.0.1:9"
    spool, shipper = decision_log(url=url, api_key="key-a", path=path)
    shipper.stop()
    spool.close()
    with pytest.raises(SpoolTaken, match="another console or API key"):
        decision_log(url=url, api_key="key-b", path=path)
    with pytest.raises(SpoolTaken):
        decision_log(url="http://127.0.0.1:10", api_key="key-a", path=path)
    again, shipper = decision_log(url=url, api_key="key-a", path=path)
    shipper.stop()
    again.close()


def test_a_spools_lock_has_one_holder_and_is_free_again_once_let_go(tmp_path):
    from stalwart_agents.spool import SpoolLock

    path = tmp_path / "s.sqlite3"
    first, second = SpoolLock(path), SpoolLock(path)
    assert first.acquire() and first.acquire()  # held: taking it again is a no-op
    assert not second.acquire()  # another open of the file, even in this process, waits
    first.release()
    assert second.acquire() and not first.acquire()
    second.release()


def test_where_there_is_no_flock_the_lock_is_always_granted(tmp_path, monkeypatch):
    from stalwart_agents import spool as spool_module

    monkeypatch.setattr(spool_module, "fcntl", None)
    path = tmp_path / "s.sqlite3"
    assert spool_module.SpoolLock(path).acquire() and spool_module.SpoolLock(path).acquire()
