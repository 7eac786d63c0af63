"""The signed session history: what it catches, what it costs, and the lookups the check reads."""

from __future__ import annotations

import copy
import hashlib
import hmac

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guard.engine import History, HistoryInvalid, canonical_json
from guard.engine.keys import Keys

from .conftest import KEY

HISTORY_KEY = Keys.from_secret(KEY).history

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
entry_contents = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["get_order", "refund_card", "read_inbox"]),
        "arguments": st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=3),
        "result": json_values,
    }
)


def build(contents, session: str = "s-1") -> History:
    history = History(session, HISTORY_KEY)
    for content in contents:
        history.append(content)
    return history


def own_head(data) -> dict | None:
    """The head a document claims for itself: what the chain alone is checked against."""
    try:
        entries = data["entries"]
        return {
            "session": data["session"],
            "length": len(entries),
            "mac": entries[-1]["mac"] if entries else "",
        }
    except (TypeError, KeyError, IndexError):
        return None


def verifies(data) -> bool:
    """Whether the chain holds (against the head the document claims, so only the MACs decide)."""
    try:
        History.from_json(data, key=HISTORY_KEY, head=own_head(data))
    except HistoryInvalid:
        return False
    return True


def test_a_history_verifies_as_it_was_written():
    history = build([{"tool": "get_order", "arguments": {"order_id": "4411"}, "result": {"a": 1}}])
    again = History.from_json(history.to_json(), key=HISTORY_KEY, head=history.head)
    assert again.head == history.head
    assert again.to_json() == history.to_json()


def test_each_mac_covers_the_session_the_index_the_content_and_the_previous_mac():
    history = build([{"tool": "get_order", "arguments": {}, "result": None}] * 2)
    second = history[1]
    message = (
        '["stalwart-history/1","s-1",1,{"arguments":{},"result":null,"tool":"get_order"},'
        f'"{history[0].mac}"]'
    )
    expected = hmac.new(HISTORY_KEY, message.encode(), hashlib.sha256).hexdigest()
    assert second.mac == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entry_contents, min_size=1, max_size=6), st.data())
def test_a_history_edited_anywhere_is_caught(contents, data):
    history = build(contents)
    document = history.to_json()
    index = data.draw(st.integers(min_value=0, max_value=len(contents) - 1))
    entry = document["entries"][index]
    where = data.draw(st.sampled_from(["tool", "arguments", "result", "extra", "mac", "index"]))
    if where == "tool":
        entry["content"]["tool"] = entry["content"]["tool"] + "x"
    elif where == "arguments":
        entry["content"]["arguments"]["__edited"] = data.draw(json_values)
    elif where == "result":
        new = data.draw(json_values)
        # one JSON number may be spelled as an int or a float: compare the canonical forms
        if canonical_json(new) == canonical_json(entry["content"]["result"]):
            new = [new]
        entry["content"]["result"] = new
    elif where == "extra":
        entry["content"]["note"] = "added by hand"
    elif where == "mac":
        entry["mac"] = ("0" if entry["mac"][0] != "0" else "1") + entry["mac"][1:]
    else:
        entry["index"] = index + 1
    assert not verifies(document)


@settings(max_examples=100, deadline=None)
@given(st.lists(entry_contents, min_size=2, max_size=6), st.data())
def test_a_history_with_an_entry_dropped_or_two_swapped_is_caught(contents, data):
    document = build(contents).to_json()
    entries = document["entries"]
    first = data.draw(st.integers(min_value=0, max_value=len(entries) - 2))
    if data.draw(st.booleans()):
        dropped = copy.deepcopy(document)
        del dropped["entries"][first]
        assert not verifies(dropped)
    swapped = copy.deepcopy(document)
    swapped["entries"][first], swapped["entries"][first + 1] = entries[first + 1], entries[first]
    assert not verifies(swapped)


@settings(max_examples=100, deadline=None)
@given(st.lists(entry_contents, min_size=1, max_size=4))
def test_an_entry_replayed_from_another_session_is_caught(contents):
    theirs = build(contents, session="s-other").to_json()
    ours = build(contents, session="s-1").to_json()
    assert not verifies({"session": "s-1", "entries": theirs["entries"]})
    ours["entries"][0] = theirs["entries"][0]
    assert not verifies(ours)


def test_entries_cut_off_at_the_end_are_caught_against_the_head_the_server_kept():
    history = build([{"tool": "get_order", "arguments": {}, "result": n} for n in range(3)])
    kept = history.head
    document = history.to_json()
    document["entries"].pop()
    assert verifies(document)
    with pytest.raises(HistoryInvalid):
        History.from_json(document, key=HISTORY_KEY, head=kept)


def test_another_key_does_not_verify():
    history = build([{"tool": "get_order", "arguments": {}, "result": 1}])
    with pytest.raises(HistoryInvalid):
        History.from_json(
            history.to_json(), key=Keys.from_secret(b"x" * 32).history, head=history.head
        )


@pytest.mark.parametrize(
    "document",
    [
        None,
        [],
        {"session": "s", "entries": {}},
        {"session": "", "entries": []},
        {"session": "s", "entries": [], "head": {}},
        {"session": "s", "entries": [{"index": 0, "content": {"tool": "x"}}]},
        {"session": "s", "entries": [{"index": 0, "content": {"tool": "x"}, "mac": "zz"}]},
        {"session": "s", "entries": [{"index": True, "content": {"tool": "x"}, "mac": "0" * 64}]},
    ],
)
def test_a_malformed_history_is_invalid(document):
    assert not verifies(document)


def test_appending_malformed_content_is_refused():
    history = History("s", HISTORY_KEY)
    for content in (
        {"arguments": {}},
        {"tool": "x", "labels": "web"},
        {"tool": "x", "result": {1, 2}},
    ):
        with pytest.raises(HistoryInvalid):
            history.append(content)
    assert len(history) == 0


def test_accept_verifies_one_entry_signed_elsewhere_as_the_next():
    writer = build([{"tool": "get_order", "arguments": {}, "result": 1}])
    reader = History.from_json(writer.to_json(), key=HISTORY_KEY, head=writer.head)
    entry = writer.append({"tool": "refund_card", "arguments": {"a": 1}, "result": None})
    reader.accept(entry.to_dict())
    assert reader.head == writer.head
    forged = entry.to_dict() | {"index": 2}
    with pytest.raises(HistoryInvalid):
        reader.accept(forged)


def test_appending_and_accepting_cost_one_signature_each_however_long_the_history(monkeypatch):
    writer = build([{"tool": "get_order", "arguments": {"n": n}, "result": n} for n in range(2000)])
    reader = History.from_json(writer.to_json(), key=HISTORY_KEY, head=writer.head)
    calls = []
    original = History._mac

    def counting(self, *args):
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(History, "_mac", counting)
    entry = writer.append({"tool": "get_order", "arguments": {}, "result": None})
    assert len(calls) == 1
    reader.accept(entry.to_dict())
    assert len(calls) == 2


def test_the_lookups_follow_new_entries():
    history = build(
        [
            {"tool": "get_order", "arguments": {"order_id": "1"}, "result": {"status": "open"}},
            {"tool": "get_order", "arguments": {"order_id": "2"}, "result": {"status": "paid"}},
        ]
    )
    assert history.latest("get_order", ("order_id", "1"))["result"] == {"status": "open"}
    assert history.matching("get_order", ("result", "status"), "paid") == [1]
    history.append(
        {"tool": "get_order", "arguments": {"order_id": "1"}, "result": {"status": "paid"}}
    )
    assert history.latest("get_order", ("order_id", "1"))["result"] == {"status": "paid"}
    assert history.matching("get_order", ("result", "status"), "paid") == [1, 2]
    assert history.count("get_order") == 3 and history.latest("refund_card") is None
    history.append(
        {"tool": "refund_card", "arguments": {}, "compensation_of": 0, "labels": ["web"]}
    )
    assert history.undone_by(0) == 3 and history.labels == {"web"}


def test_equal_json_values_meet_and_a_number_and_its_text_do_not():
    history = build([{"tool": "t", "arguments": {"n": 40.0}, "result": None}])
    assert history.latest("t", ("n", 40)) is not None
    assert history.latest("t", ("n", "40")) is None


def test_the_results_view_reads_the_history_without_copying_it():
    history = build([{"tool": "t", "arguments": {}, "result": n} for n in range(5)])
    assert len(history.results) == 5
    assert history.results[-1]["result"] == 4
    assert [item["result"] for item in reversed(history.results)] == [4, 3, 2, 1, 0]
    assert [item["result"] for item in history.results[1:3]] == [1, 2]
