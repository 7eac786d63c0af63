"""`events_insert`, how a batch of events is written: on PostgreSQL a small batch goes as one JSON
parameter and a large one by COPY, and what either stores is what `bulk_create` stores, to the
character (quotes, backslashes, COPY's own `\\N` and tabs, newlines, non-ASCII, empty and absent
values, a time's microseconds), with ids in list order; a row the table refuses writes nothing of
the batch and leaves the events to be written again."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from console import services
from console.models import Event

pytestmark = pytest.mark.django_db

TRICKY = [
    'say "hi"',
    "back\\slash and \\N and \\\\N",
    "tab\there\nnew line\r\nend",
    "é ü 日本 🚀",
    "",
    "{not json}",
    "'single' ; DROP TABLE x; --",
]


def _events(organisation, count: int, *, tag: str) -> list[Event]:
    at = dt.datetime(2026, 12, 4, 12, 0, tzinfo=dt.UTC)
    events = []
    for index in range(count):
        text = TRICKY[index % len(TRICKY)]
        events.append(
            services._event_row(
                organisation=organisation,
                source="runtime",
                decision=["allow", "refuse", "confirm"][index % 3],
                session=f"s-{index % 4}",
                agent=text[:20],
                tool=f"tool_{index}",
                stage="tool_call",
                verdict="require_approval" if index % 3 == 2 else "",
                reasons=[text, f"r{index}"],
                rule=text,
                detail={"call": {"arguments": {"q": text, "n": index, "none": None}}, "k": [text]},
                run_id=text[:10],
                at=at + dt.timedelta(seconds=index, microseconds=index * 7919),
                record_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{tag}/{index}"),
                match_state="pending" if index % 2 else None,
                match_note=text,
            )
        )
    return events


def _stored(ids) -> list[dict]:
    rows = Event.objects.filter(pk__in=ids).order_by("pk").values()
    return [{k: v for k, v in row.items() if k not in ("id", "record_id")} for row in rows]


def _inserts(sql_seen: list[str]):
    def wrapper(execute, sql, params, many, context):  # noqa: ANN001, ANN202
        sql_seen.append(sql)
        return execute(sql, params, many, context)

    return wrapper


def test_a_large_batch_stores_what_bulk_create_stores_with_ids_in_order(organisation):
    count = services.COPY_FROM * 2 + 3
    plain = Event.objects.bulk_create(_events(organisation, count, tag="plain"))
    seen: list[str] = []
    with connection.execute_wrapper(_inserts(seen)), transaction.atomic():
        copied = services.events_insert(_events(organisation, count, tag="copied"))
    ids = [event.pk for event in copied]
    assert ids == sorted(ids) and len(set(ids)) == count and None not in ids
    assert all(not event._state.adding for event in copied)
    assert _stored(ids) == _stored([event.pk for event in plain])
    assert _stored(ids)[1]["detail"]["call"]["arguments"]["q"] == TRICKY[1]
    wrote_by_insert = any("INSERT" in sql.upper() and "console_event" in sql for sql in seen)
    assert wrote_by_insert == (connection.vendor != "postgresql")  # COPY is not an INSERT


@pytest.mark.parametrize("count", [1, 2, services.COPY_FROM - 1])
def test_a_small_batch_is_one_insert_storing_what_bulk_create_stores(organisation, count):
    plain = Event.objects.bulk_create(_events(organisation, count, tag=f"plain{count}"))
    seen: list[str] = []
    with connection.execute_wrapper(_inserts(seen)), transaction.atomic():
        small = services.events_insert(_events(organisation, count, tag=f"s{count}"))
    ids = [event.pk for event in small]
    assert ids == sorted(ids) and len(set(ids)) == count and None not in ids
    assert all(not event._state.adding for event in small)
    assert _stored(ids) == _stored([event.pk for event in plain])
    assert _stored(ids)[-1]["at"].microsecond == (count - 1) * 7919 % 1_000_000
    written = [sql for sql in seen if "console_event" in sql]
    assert len(written) == 1 and written[0].upper().startswith("INSERT"), written
    # on PostgreSQL the rows travel as one JSON parameter, not as the ORM's parameters
    assert ("jsonb_to_recordset" in written[0]) == (connection.vendor == "postgresql")


def test_an_event_without_a_record_id_or_a_match_state_gets_its_own_id_and_the_default(
    organisation,
):
    (event,) = services.events_insert(
        [services._event_row(organisation=organisation, source="firewall", decision="allow")]
    )
    (other,) = services.events_insert(
        [services._event_row(organisation=organisation, source="firewall", decision="allow")]
    )
    stored = Event.objects.get(pk=event.pk)
    # an id of its own (the event writer finds a write whose commit was not answered by it)
    assert isinstance(stored.record_id, uuid.UUID) and stored.record_id == event.record_id
    assert Event.objects.get(pk=other.pk).record_id != stored.record_id
    assert (stored.match_state, stored.detail, stored.reasons) == ("pending", {}, [])
    assert stored.at == event.at


def test_a_value_too_long_for_its_column_is_refused_and_nothing_is_written(organisation):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite keeps text of any length in a varchar column")
    events = _events(organisation, 3, tag="long")
    events[1].tool = "t" * 201  # past the column's 200, as _event_row would never leave it
    before = Event.objects.count()
    with pytest.raises(DatabaseError), transaction.atomic():
        services.events_insert(events)
    assert Event.objects.count() == before


def test_a_refused_row_writes_nothing_of_the_batch_and_the_events_can_be_written_again(
    organisation,
):
    first = _events(organisation, 1, tag="twice")
    Event.objects.bulk_create(first)
    batch = _events(organisation, services.COPY_FROM + 4, tag="other")
    batch[7].record_id = first[0].record_id  # already stored
    before = Event.objects.count()
    with pytest.raises(IntegrityError), transaction.atomic():
        services.events_insert(batch)
    assert Event.objects.count() == before
    assert all(event.pk is None for event in batch)
    batch[7].record_id = uuid.uuid4()
    with transaction.atomic():
        services.events_insert(batch)
    assert Event.objects.count() == before + len(batch)


def test_a_large_ingested_batch_with_one_record_stored_before_stores_the_rest(
    organisation, actor_for, admin
):
    from tests.console.test_decisions_api import record

    actor = actor_for(admin, organisation)
    old = record()
    assert services.decisions_ingest(actor=actor, records=[old])["stored"] == 1
    batch = [record(sequence=n + 1, detail={"note": TRICKY[n % len(TRICKY)]}) for n in range(40)]
    batch[20] = old
    answer = services.decisions_ingest(actor=actor, records=batch)
    assert answer == {"stored": 39, "duplicates": 1, "unreadable": []}
    notes = Event.objects.filter(source="runtime").exclude(record_id=old["id"])
    assert sorted(e.detail["note"] for e in notes) == sorted(
        r["detail"]["note"] for r in batch if r is not old
    )
