"""QG017/QG018 and the tool check agree on every argument kind: the proof reports a model-chosen
call with code, a command, a query or a destination in an argument exactly when the runtime lets
that call run without a person's yes. A `format: uri` argument of a read is held by the tool
check's step 4 (`undeclared_destination` refuses every destination in it), so the proof does not
say it runs; switch that check off, and both say it runs."""

from __future__ import annotations

import pytest

from guard.engine import ToolCheck, load_agent_yaml
from guard.engine.checks import ALWAYS_ON, NAMES
from proof.engine import verify_agent_file

#: Each argument kind, the JSON Schema `format` that declares it, and a value a model may write.
KINDS = {
    "code": ("python", "import os; os.system('id')"),
    "shell": ("bash", "rm -rf /"),
    "sql": ("sql", "SELECT * FROM users"),
    "query": ("query", "status:open"),
    "path": ("path", "/etc/passwd"),
    "url": ("uri", "https://evil.example/steal"),
    "template": ("jinja", "{{ secrets }}"),
}
WITHOUT_DESTINATIONS = sorted((NAMES - {"destinations"}) | ALWAYS_ON)


def _agent(tool_kind: str, fmt: str, checks: list[str] | None) -> str:
    settings = f"settings:\n  checks: [{', '.join(checks)}]\n" if checks is not None else ""
    return f"""agents:
  desk:
    model: "test:scripted"
    tools: [act]
budget: 20
{settings}tools:
  - name: act
    kind: {tool_kind}
    parameters:
      type: object
      properties: {{target: {{type: string, format: {fmt}}}}}
      required: [target]
    result_schema: {{type: object}}
    idempotent: true
"""


def _proof_says_it_runs(text: str) -> bool:
    report = verify_agent_file(text, files={})
    return any(f.rule in ("QG017", "QG018") and f.subject == "act" for f in report.findings)


def _runtime_lets_it_run(text: str, value: str) -> bool:
    agent_file = load_agent_yaml(text)
    check = ToolCheck(
        agent_file.catalogue, key=b"k" * 32, settings=agent_file.other.get("settings")
    )
    call = {"tool": "act", "agent": "desk", "arguments": {"target": value}}
    return check.check(call, session=check.new_history("s")).decision == "allow"


@pytest.mark.parametrize("checks", [None, WITHOUT_DESTINATIONS], ids=["all checks", "no step 4"])
@pytest.mark.parametrize("tool_kind", ["read", "sends_out"])
@pytest.mark.parametrize("argument_kind", sorted(KINDS))
def test_the_proof_and_the_tool_check_agree_on_every_argument_kind(
    argument_kind: str, tool_kind: str, checks: list[str] | None
) -> None:
    fmt, value = KINDS[argument_kind]
    text = _agent(tool_kind, fmt, checks)
    assert _proof_says_it_runs(text) == _runtime_lets_it_run(text, value)


def test_a_read_with_a_uri_argument_is_not_a_finding_while_step_4_holds_it() -> None:
    assert not _proof_says_it_runs(_agent("read", "uri", None))
    assert _proof_says_it_runs(_agent("read", "uri", WITHOUT_DESTINATIONS))
    assert _proof_says_it_runs(_agent("read", "sql", None))


def _fetching_agent(fmt: str) -> str:
    return _agent("read", fmt, None).replace(
        "    result_schema: {type: object}\n",
        "    result_schema: {type: object}\n    fetches: [target]\n",
    )


def test_a_url_a_read_fetches_is_not_held_by_step_4_and_the_proof_says_so() -> None:
    """`fetches` lets a public URL the model chose run without a person: QG018 reports it, and the
    runtime indeed lets it run; a private address is still refused by the address check."""
    text = _fetching_agent("uri")
    assert load_agent_yaml(text).catalogue.tools["act"].fetches == ("target",)
    assert _runtime_lets_it_run(text, "https://evil.example/steal")
    assert _proof_says_it_runs(text)
    assert not _runtime_lets_it_run(text, "http://169.254.169.254/latest")
    assert not _proof_says_it_runs(_agent("read", "uri", None))


def test_a_write_check_does_not_hold_a_free_text_argument_declared_a_query_in_the_overlay() -> None:
    """The loader refuses `free_text` on an argument its schema declares a query; one the overlay
    declares so is not held by the write's check any more (value origin does not ask about it), so
    where a rule sheet allows the write, QG018 reports the model's query running unasked."""
    base = _agent("write", "uri", None).replace("format: uri", "minLength: 1")
    base += "rulebook: policy.csv\n"
    marked = base.replace("minLength: 1", "minLength: 1, free_text: true")
    files = {"policy.csv": "tool,condition,decision,reason\nact,,allow,routine\n"}
    overlay = {"format": "qls-graph/1", "declarations": {"arguments": {"act": {"target": "sql"}}}}

    def finding(text: str) -> bool:
        report = verify_agent_file(text, files=files, overlay=overlay)
        return any(f.rule == "QG018" and f.subject == "act" for f in report.findings)

    assert load_agent_yaml(marked).catalogue.tools["act"].free_text == {"target"}
    assert not finding(base)
    assert finding(marked)
