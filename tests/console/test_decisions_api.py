"""`POST /v1/decisions`: a runtime's decision-log records stored in the event feed, once each."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from console import services
from console.models import Event, MatchState

pytestmark = pytest.mark.django_db


def record(**over):
    base = {
        "id": str(uuid.uuid4()),
        "session": "local-s1",
        "sequence": 1,
        "kind": "decision",
        "at": time.time(),
        "agent": "assistant",
        "tool": "get_order",
        "decision": "allow",
        "reasons": [],
        "rule": "",
        "policy_version": 3,
        "outcome": None,
        "detail": {"call": {"tool": "get_order", "arguments": {"order_id": "A1"}}},
    }
    base.update(over)
    return base


def _nested(keys: str) -> dict:
    nest: dict = {}
    for key in reversed(keys):
        nest = {key: nest}
    return nest


@pytest.fixture
def send(client_for, admin, organisation, actor_for):
    def make(role="editor", who=None, org=None):
        _, plain = services.api_key_create(
            actor=actor_for(who or admin, org or organisation), name="runtime", role=role
        )
        client = client_for()

        def post(body, raw=False):
            return client.post(
                "/v1/decisions",
                body if raw else json.dumps(body),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {plain}",
            )

        return post

    return make


def test_a_batch_is_stored_in_the_feed_as_pending_matcher_input(send, organisation):
    records = [record(sequence=i) for i in (1, 2, 3)]
    response = send()({"records": records})
    assert response.status_code == 200, response.content
    assert response.json() == {"stored": 3, "duplicates": 0, "unreadable": []}
    events = list(Event.objects.filter(organisation=organisation).order_by("id"))
    assert [e.detail["record"]["sequence"] for e in events] == [1, 2, 3]
    assert {e.source for e in events} == {"runtime"}
    assert {e.match_state for e in events} == {MatchState.PENDING}
    assert str(events[0].record_id) == records[0]["id"]
    assert abs(events[0].at.timestamp() - records[0]["at"]) < 0.001


def test_a_batch_sent_twice_is_stored_once(send, organisation):
    post = send()
    batch = {"records": [record(sequence=1), record(sequence=2)]}
    assert post(batch).json()["stored"] == 2
    again = post(batch).json()
    assert again == {"stored": 0, "duplicates": 2, "unreadable": []}
    assert Event.objects.filter(organisation=organisation).count() == 2


def test_a_record_twice_in_one_batch_is_stored_once(send, organisation):
    one = record()
    assert send()({"records": [one, one]}).json()["duplicates"] == 1
    assert Event.objects.filter(organisation=organisation).count() == 1


def test_a_call_that_ran_is_in_the_feed_but_not_matched_twice(send, organisation):
    ran = record(kind="execution", outcome="SUCCEEDED", sequence=2)
    assert send()({"records": [record(), ran]}).status_code == 200
    executed = Event.objects.get(record_id=ran["id"])
    assert (executed.stage, executed.verdict) == ("execute", "succeeded")
    assert executed.match_state == MatchState.SKIPPED


def test_a_malformed_record_is_refused_by_its_path_and_kept_as_unreadable(send, organisation):
    bad = record(sequence="two")
    response = send()({"records": [record(), bad]})
    assert response.status_code == 200
    (refused,) = response.json()["unreadable"]
    assert refused == {
        "index": 1,
        "id": bad["id"],
        "field": "records[1].sequence",
        "problem": "must be a whole number from 1",
    }
    kept = Event.objects.get(record_id=bad["id"])
    assert kept.match_state == MatchState.UNREADABLE
    assert kept.reasons == ["malformed_record: records[1].sequence"]
    assert kept.match_note.startswith("records[1].sequence")
    # sent again, the unreadable record is not stored twice either
    assert send()({"records": [bad]}).json()["duplicates"] == 1


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"id": "nope"}, "records[0].id"),
        ({"tool": ""}, "records[0].tool"),
        ({"decision": "maybe"}, "records[0].decision"),
        ({"at": 10.0}, "records[0].at"),
        ({"at": time.time() + 3600}, "records[0].at"),
        ({"kind": "execution", "outcome": None}, "records[0].outcome"),
        ({"reasons": [1]}, "records[0].reasons[0]"),
        ({"colour": "red"}, "records[0].colour"),
        ({"session": "s" * 129}, "records[0].session"),
        (
            {"detail": _nested("abcdefghijklmnop")},
            "records[0].detail." + ".".join("abcdefghijklmno"),
        ),
    ],
)
def test_each_field_is_validated_and_named(send, over, field):
    response = send()({"records": [record(**over)]})
    assert response.status_code == 200
    (refused,) = response.json()["unreadable"]
    assert refused["field"] == field, refused


def test_a_record_past_its_size_is_refused(send, settings):
    settings.STALWART_DECISIONS_MAX_RECORD_BYTES = 2000
    (refused,) = send()({"records": [record(detail={"x": "y" * 5000})]}).json()["unreadable"]
    assert refused["field"] == "records[0]" and "bytes" in refused["problem"]
    kept = Event.objects.get(record_id=refused["id"])
    assert kept.detail["truncated"] is True and len(kept.detail["record_text"]) == 2000


def test_a_secret_in_a_record_is_redacted_by_the_console_too(send):
    leaked = record(
        detail={"call": {"arguments": {"api_key": "sk-live-abc", "note": "AKIAIOSFODNN7EXAMPLE"}}}
    )
    send()({"records": [leaked]})
    text = json.dumps(Event.objects.get(record_id=leaked["id"]).detail)
    assert "sk-live-abc" not in text and "AKIAIOSFODNN7EXAMPLE" not in text


def test_the_batch_is_bounded(send, settings):
    settings.STALWART_DECISIONS_MAX_BATCH = 2
    response = send()({"records": [record(), record(), record()]})
    assert response.status_code == 400
    assert "more than 2" in response.json()["records"][0]
    assert send()({"records": []}).status_code == 400
    assert send()({"records": {}}).status_code == 400
    assert send()({"records": [record()], "more": 1}).json() == {"more": ["not a field here"]}
    assert Event.objects.count() == 0


def test_a_body_that_is_not_json_is_refused_and_kept_as_unreadable(send, organisation):
    response = send()('{"records": [', raw=True)
    assert response.status_code == 400
    kept = Event.objects.get(organisation=organisation)
    assert kept.match_state == MatchState.UNREADABLE and kept.source == "runtime"


def test_it_needs_an_api_key_with_the_check_role(client_for, send, auditor, organisation):
    anonymous = client_for().post(
        "/v1/decisions", json.dumps({"records": [record()]}), content_type="application/json"
    )
    assert anonymous.status_code in (401, 403)
    assert send(role="auditor")({"records": [record()]}).status_code == 403
    assert Event.objects.count() == 0


def test_records_go_to_the_keys_organisation_only(send, outsider, other_organisation, organisation):
    one = record()
    assert send(who=outsider, org=other_organisation)({"records": [one]}).status_code == 200
    assert Event.objects.get(record_id=one["id"]).organisation == other_organisation
    assert not Event.objects.filter(organisation=organisation).exists()


def test_the_feed_shows_a_runtimes_decisions(send, client_for, admin, organisation):
    one = record(session="local-feed-1", tool="refund_card", decision="confirm", reasons=["write"])
    send()({"records": [one]})
    page = client_for(admin).get("/events/")
    assert page.status_code == 200
    assert b"refund_card" in page.content and b"local-feed-1" in page.content
    listed = client_for(admin).get("/v1/events?session=local-feed-1").json()
    (event,) = listed["results"]
    assert (event["source"], event["decision"], event["reasons"]) == (
        "runtime",
        "confirm",
        ["write"],
    )
    assert event["detail"]["record"]["sequence"] == 1


def test_a_record_id_of_another_organisation_suppresses_nothing(
    send, outsider, other_organisation, organisation
):
    """The ids are each organisation's: a key of another organisation that sends a record with
    an id this organisation's runtime will send (or has sent) neither hides that record nor
    learns that it exists."""
    ours = record(session="ours-1")
    theirs = {**ours, "session": "theirs-1", "tool": "decoy"}
    answer = send(who=outsider, org=other_organisation)({"records": [theirs]}).json()
    assert answer == {"stored": 1, "duplicates": 0, "unreadable": []}
    answer = send()({"records": [ours]}).json()
    assert answer == {"stored": 1, "duplicates": 0, "unreadable": []}
    (kept,) = Event.objects.filter(organisation=organisation)
    assert (kept.session, kept.tool) == ("ours-1", "get_order")
    # and sent again, each is a duplicate in its own organisation only
    assert send()({"records": [ours]}).json()["duplicates"] == 1
    assert Event.objects.filter(organisation=other_organisation).count() == 1


def test_an_unreadable_record_keeps_no_secret_named_by_its_key(send, settings):
    """A record the console cannot read is kept as text: the values of its secret keys are
    masked in that text as in a readable record's detail, and a credential cut where the text is
    cut is not kept half."""
    settings.STALWART_DECISIONS_MAX_RECORD_BYTES = 2000
    leaked = record(
        detail={"call": {"arguments": {"password": "hunter2-correct-horse"}}}, surplus=1
    )
    (refused,) = send()({"records": [leaked]}).json()["unreadable"]
    kept = json.dumps(Event.objects.get(record_id=refused["id"]).detail)
    assert "hunter2-correct-horse" not in kept
    key = "AKIAIOSFODNN7EXAMPLE"
    for cut in range(4, len(key)):
        padded = record(detail={"pad": ""})
        before = len(json.dumps(padded, separators=(",", ":")))
        # the key starts `cut` characters before the text is cut
        padded["detail"]["pad"] = "x" * (2000 - before - cut) + " " + key + " " + "y" * 3000
        (refused,) = send()({"records": [padded]}).json()["unreadable"]
        kept = Event.objects.get(record_id=refused["id"]).detail["record_text"]
        assert key[:cut] not in kept, (cut, kept[-40:])


def test_a_firewall_decision_names_its_stage_and_verdict(send, organisation):
    """A runtime's `evaluate` records its stage and verdict; the matchers read an egress."""
    egress = record(
        tool="http.post",
        stage="egress",
        verdict="deny",
        decision="refuse",
        detail={"call": {"tool": "http.post", "destination": "https://example.org/x"}},
    )
    answer = send()(
        {
            "records": [
                egress,
                record(kind="execution", outcome="SUCCEEDED", stage="egress"),
                record(verdict="deny"),
                record(stage="execute"),
            ]
        }
    ).json()
    assert answer["stored"] == 1
    assert [item["field"] for item in answer["unreadable"]] == [
        "records[1].stage",
        "records[2].verdict",
        "records[3].stage",
    ]
    kept = Event.objects.get(record_id=egress["id"])
    assert (kept.stage, kept.verdict, kept.match_state) == ("egress", "deny", MatchState.PENDING)


def test_a_number_past_what_json_can_hold_is_refused_not_a_server_error(send, organisation):
    """`1e400` is JSON's grammar but no number any store keeps (Python reads it as infinity,
    which PostgreSQL's JSON refuses): the body is refused at the edge (400, kept as unreadable)
    rather than failing the batch's write with a 500 that a shipper would send again forever."""
    body = json.dumps({"records": [record(detail={"x": 1})]}).replace('"x": 1', '"x": 1e400')
    response = send()(body, raw=True)
    assert response.status_code == 400, response.content
    kept = Event.objects.get(organisation=organisation)
    assert kept.match_state == MatchState.UNREADABLE
