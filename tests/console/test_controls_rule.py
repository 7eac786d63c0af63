"""The rule of tool switches and session holds (console/controls.py) is one rule: the ORM's
`Exists` (tool checks and firewall calls off the steady path), the SQL of the steady paths' one
statement, and the sets a process keeps all answer every call alike, and as the rule says."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection
from django.utils import timezone

from console import controls
from console.models import Organisation, SessionHold, ToolSwitch

pytestmark = pytest.mark.django_db

AGENTS = ("desk", "Desk", "bot", "other")
TOOLS = ("crm.update", "CRM.Update", "crm.delete", "files.read")
SESSIONS = ("s1", "s2", "s3", "")


@pytest.fixture
def rows(organisation, other_organisation):
    now = timezone.now()
    for org, agent, tool, enabled in (
        (organisation, "desk", "crm.update", None),
        (organisation, "desk", "crm.delete", now),  # switched on again
        (other_organisation, "bot", "crm.update", None),  # another organisation's
    ):
        ToolSwitch.objects.create(
            organisation=org, agent=agent, tool=tool, reason="r", enabled_at=enabled
        )
    for org, agent, session, released in (
        (organisation, "desk", "s1", None),
        (organisation, "desk", "s2", now),  # released
        (organisation, "bot", "s3", None),
        (organisation, "other", "", None),  # no session: holds nothing
        (other_organisation, "other", "s1", None),
    ):
        SessionHold.objects.create(
            organisation=org, agent=agent, session=session, reason="r", released_at=released
        )
    return organisation


def _rule(agents: set[str], tool: str, session: str) -> tuple[bool, bool]:
    """The rule as the module's docstring states it, over the fixture's rows."""
    switched = "desk" in agents and tool.casefold() == "crm.update"
    held = bool(session) and (
        ("desk" in agents and session == "s1") or ("bot" in agents and session == "s3")
    )
    return switched, held


def _orm(org, agent, tool, session, also=()):
    return tuple(
        controls.call_flags(
            Organisation.objects.filter(pk=org.pk),
            organisation_id=org.pk,
            agent=agent,
            tool=tool,
            session=session,
            also=also,
        )
        .values_list("tool_switched", "session_held")
        .get()
    )


def _sql(org, agent, tool, session, also=()):
    agents = controls.held_agents(agent, *also)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {controls.switched_sql('w')}, {controls.held_sql('h', len(agents))}",
            [
                *controls.switched_params(org.pk, agent, tool),
                *controls.held_params(org.pk, agents, session),
            ],
        )
        switched, held = cursor.fetchone()
    return bool(switched), bool(held)


def _kept(org) -> controls.Kept:
    with connection.cursor() as cursor:
        cursor.execute(controls.kept_sql(100), [org.pk, org.pk])
        return controls.Kept.of(cursor.fetchall())


def test_every_reader_answers_every_call_as_the_rule_says(rows):
    kept = _kept(rows)
    answers = set()
    for agent, tool, session in itertools.product(AGENTS, TOOLS, SESSIONS):
        expected = _rule({agent.casefold()}, tool, session)
        answers.add(expected)
        assert _orm(rows, agent, tool, session) == expected, (agent, tool, session)
        assert _sql(rows, agent, tool, session) == expected, (agent, tool, session)
        assert kept.flags(agent=agent, tool=tool, session=session) == expected
    # the grid reaches every answer, so no reader passes by answering one thing
    assert answers == {(False, False), (True, False), (False, True), (True, True)}


def test_a_check_is_held_by_the_hold_of_the_sessions_own_agent_too(rows):
    # a handoff: `other` calls in `desk`'s session s1, which desk's hold stops
    assert _orm(rows, "other", "crm.update", "s1") == (False, False)
    for read in (_orm, _sql):
        assert read(rows, "other", "crm.update", "s1", also=("Desk",)) == (False, True)
        assert read(rows, "other", "crm.update", "s3", also=("desk",)) == (False, False)
    assert controls.held_agents("Other", "desk", "DESK") == ["desk", "other"]


def test_rows_in_force_leave_out_what_was_switched_on_or_released(rows):
    assert sorted(controls.switches_in_force(organisation=rows).values_list("tool", flat=True)) == [
        "crm.update"
    ]
    assert sorted(controls.holds_in_force(organisation=rows).values_list("session", flat=True)) == [
        "",
        "s1",
        "s3",
    ]
    kept = _kept(rows)
    assert kept.switched == {("desk", "crm.update")}
    assert kept.held == {("desk", "s1"), ("bot", "s3")}  # the hold of no session is not kept


def test_kept_sets_never_hold_a_call_that_names_no_session():
    kept = controls.Kept(switched=frozenset(), held=frozenset({("desk", ""), ("desk", "s1")}))
    assert kept.flags(agent="Desk", tool="t", session="s1") == (False, True)
    assert kept.flags(agent="desk", tool="t", session="") == (False, False)
