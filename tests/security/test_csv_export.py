"""The events export as CSV: a cell a spreadsheet would run as a formula is written as text."""

from __future__ import annotations

import csv
import io

import pytest

from console import services

pytestmark = pytest.mark.django_db

#: What an attacker names a tool (or an agent, a session) so that opening the export runs it.
FORMULAS = [
    "=cmd|' /C calc'!A0",
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+9)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "\uff1dcmd|' /C calc'!A0",
]


def _exported(client) -> dict[str, str]:
    body = client.get("/events/export.csv").getvalue().decode()
    return next(csv.DictReader(io.StringIO(body)))


@pytest.mark.parametrize("formula", FORMULAS)
def test_a_tool_named_as_a_formula_is_exported_as_text(organisation, auditor, client_for, formula):
    services.event_record(
        organisation=organisation, source="firewall", decision="refuse", tool=formula
    )
    assert _exported(client_for(auditor))["tool"] == "'" + formula


def test_an_agent_and_a_session_named_as_formulas_are_exported_as_text(
    organisation, auditor, client_for
):
    services.event_record(
        organisation=organisation,
        source="firewall",
        decision="refuse",
        agent='=HYPERLINK("http://evil.example/","x")',
        session="@cmd",
        tool="shell.exec",
    )
    row = _exported(client_for(auditor))
    assert row["agent"].startswith("'=") and row["session"] == "'@cmd"
    assert row["tool"] == "shell.exec"
