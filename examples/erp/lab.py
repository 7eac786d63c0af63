"""The field notebook's lab, run through Stalwart's real executor, ledger, approvals and checks.

    python examples/erp/lab.py                       # the baseline: exit 0
    python examples/erp/lab.py --fault schema        # one control switched off: exit 1, named
    python examples/erp/lab.py --fault auth|confirmation|retry|logs
    python examples/erp/lab.py --fault partial       # PARTIAL, the write not repeated: exit 0
    python examples/erp/lab.py --rollback-demo       # writes off, reads on, no effect: exit 0

It prints one JSON report: the mode, the executor's panel (`guard.executor.counters`), what the
ERP really recorded (`effects`), each scenario's outcome, the audit steps still pending, the
executor's log lines (captured from the `stalwart.executor` logger) and the violations found. Exit
codes: 0 no violation, 1 a violation (the evidence did not hold), 2 usage or internal error.

The scenarios are the notebook's, for a supervisor of `shopping-a` (and one of `shopping-b`):
an invalid proposal (an extra argument), a close of another tenant's order (743), a close a
person denies, a close whose answer the ERP loses after recording it (retried with the same key),
the note of order 743 read as data (it carries an injected instruction), and a synthetic secret
planted in the identity's credentials and in an argument the catalogue marks secret. The checks
look at what really happened -- the ERP's own records, the requests it received, the ledger, the
approvals queue, the logs, the events and the audit rows -- never at what the executor says.

Each `--fault` switches one control off inside this process with `unittest.mock.patch` (the
product has no off-switch for its controls), so that the lab proves its checks notice:

    schema        guard.engine.check.validate_arguments   (the tool check's argument schema)
    auth          guard.executor._authorised              (tenancy and the domain's authorize)
    confirmation  guard.executor._confirmation_needed     (a person right before the effect)
    retry         guard.executor._retry_key               (a retry keeps the intent's key)
    logs          guard.executor._log_fields              (what a log line may hold)

`--fault partial` switches no control off: the ERP's audit trail is unavailable, so the close is
PARTIAL with its audit step pending, and the close is not sent again.

Run as a program, the lab sets Django up on a throwaway SQLite database in a temporary folder
(`console.settings.dev` unless DJANGO_SETTINGS_MODULE names other settings) with the embedded
broker, and removes the folder at the end. `evaluate(fault, rollback_demo)` is the same run for a
process where Django is already set up (the tests call it on the test database).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.erp import tools  # noqa: E402
from examples.erp.synthetic_erp import ERP, INJECTED_NOTE, PATH_VARIABLE  # noqa: E402

FAULTS = ("none", "schema", "auth", "confirmation", "retry", "partial", "logs")
SECRET = "SECRET-MUST-NOT-ENTER-LOGS"
BEARER = f"Bearer {SECRET}"
AGENT_FILE = Path(__file__).with_name("agent.yaml")
LOGGER = "stalwart.executor"
REASON = "Inspeção validada pelo supervisor"
DENIED_REASON = "Fechamento pedido antes da vistoria"

# (username, organisation slug, role)
CAST = (
    ("supervisor-a", "shopping-a", "editor"),
    ("approver-a", "shopping-a", "approver"),
    ("supervisor-b", "shopping-b", "editor"),
)


# -- Django, for a process of its own ------------------------------------------------------------


def setup_django() -> Path:
    """Django on a throwaway SQLite database in a new temporary folder, migrated; the folder."""
    folder = Path(tempfile.mkdtemp(prefix="stalwart-erp-lab-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.dev")
    os.environ["STALWART_VAR_DIR"] = str(folder)
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'lab.sqlite3'}"
    os.environ.pop("STALWART_DATABASE_NAME", None)  # the test settings would read it instead
    os.environ.pop("REDIS_URL", None)  # the embedded broker, in the folder: no server needed
    os.environ.setdefault("STALWART_LOG_LEVEL", "WARNING")  # the report carries the log lines
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    return folder


# -- the cast ------------------------------------------------------------------------------------


def _organisation(slug: str) -> Any:
    from console import services
    from console.models import Organisation

    found = Organisation.objects.filter(slug=slug).first()
    return found or services.organisation_create(name=slug.replace("-", " ").title(), slug=slug)


def _actor(username: str, slug: str, role: str) -> Any:
    """The person, a member of the organisation with the role, as an `Actor`."""
    from django.contrib.auth import get_user_model

    from console.access import Actor
    from console.models import Membership

    organisation = _organisation(slug)
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
    Membership.objects.get_or_create(user=user, organisation=organisation, defaults={"role": role})
    return Actor(organisation=organisation, role=role, label=f"user:{username}", user_id=user.pk)


def catalogue() -> dict[str, Any]:
    """agent.yaml's catalogue, read by the engine's loader with this folder's tools."""
    from guard import engine

    text = AGENT_FILE.read_text(encoding="utf-8")
    loaded = engine.load_agent_yaml(text, modules={"erp.tools": tools.TOOLS})
    return json.loads(json.dumps(dict(loaded.data)))


def _executor(actor: Any) -> Any:
    from guard.executor import Executor
    from guard.services import session_create

    session = session_create(actor=actor, agent="supervisor", catalogue=catalogue())
    return Executor(
        actor=actor,
        session=session,
        bindings=tools.bindings(),
        credentials={"authorization": BEARER},
        timeout_backoff=0.0,
    )


# -- capturing the executor's log lines ----------------------------------------------------------


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        _, brace, rest = message.partition("{")
        try:
            fields = json.loads(brace + rest) if brace else {"message": message}
        except ValueError:
            fields = {"message": message}
        self.lines.append({"level": record.levelname, **fields})


@contextmanager
def _captured_logs() -> Iterator[_Capture]:
    """Every line the executor logs, kept here and not passed on to the process's handlers."""
    logger = logging.getLogger(LOGGER)
    handler = _Capture()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


# -- the faults: one control off each ------------------------------------------------------------


def _rotating_key(key: str, attempt: int) -> str:
    """The mutation the notebook warns about: a retry sent with a new key."""
    return key if attempt <= 1 else f"{key}-retry-{attempt}"


def _leaky_log_fields(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The mutation of `_log_fields`: the credentials and the raw arguments go into the line."""

    def leaky(context: Any, arguments: Mapping[str, Any], *args: Any, **kwargs: Any) -> dict:
        fields = original(context, arguments, *args, **kwargs)
        return {
            **fields,
            "authorization": dict(context.credentials).get("authorization"),
            "arguments": dict(arguments),
        }

    return leaky


def _fault_patches(fault: str) -> list[Any]:
    import guard.executor

    if fault == "schema":
        return [mock.patch("guard.engine.check.validate_arguments", return_value=[])]
    if fault == "auth":
        return [mock.patch("guard.executor._authorised", return_value=None)]
    if fault == "confirmation":
        return [mock.patch("guard.executor._confirmation_needed", return_value=False)]
    if fault == "retry":
        return [mock.patch("guard.executor._retry_key", side_effect=_rotating_key)]
    if fault == "logs":
        leaky = _leaky_log_fields(guard.executor._log_fields)
        return [mock.patch("guard.executor._log_fields", side_effect=leaky)]
    return []


# -- one proposal, through the executor and, for a write, a person -------------------------------


def _propose(
    executor: Any, approver: Any, tool: str, arguments: dict[str, Any], *, approve: bool = True
) -> list[dict[str, Any]]:
    """The outcomes of one proposal: the call, and when a person is asked, their answer's run."""
    from guard.approvals import approval_deny, approval_grant
    from guard.models import ApprovalRequest

    origins = dict.fromkeys(arguments, "model")
    outcome = executor.call(tool, arguments, origins=origins)
    outcomes = [outcome]
    if outcome["outcome"] == "CONFIRM":
        request = ApprovalRequest.objects.get(public_id=outcome["approval"])
        answer = approval_grant if approve else approval_deny
        answer(actor=approver, request=request)
        outcomes.append(executor.resume(outcome))
    return outcomes


def _shown(scenario: str, outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """A scenario's outcomes as the report shows them."""
    steps = []
    for outcome in outcomes:
        step = {"outcome": outcome["outcome"], "reasons": list(outcome.get("reasons") or [])}
        for name in ("duplicate", "pending", "result"):
            if outcome.get(name) not in (None, False, [], ""):
                step[name] = outcome[name]
        steps.append(step)
    return {"scenario": scenario, "steps": steps, "outcome": outcomes[-1]["outcome"]}


class _Run:
    """What the checks read: the ERP's records, the ledger, the approvals, the panel."""

    def __init__(self, erp: ERP, organisation: Any) -> None:
        self.erp = erp
        self.organisation = organisation

    def panel(self, tool: str = "request_close") -> dict[str, int]:
        from guard.executor import counters

        return dict(counters(self.organisation).get(tool, {}))

    def marks(self) -> dict[str, int]:
        from guard.models import ApprovalRequest, Effect

        return {
            "effects": len(self.erp.effects()),
            "erp_writes": sum(1 for r in self.erp.requests() if r["action"] != "read_order"),
            "ledger": Effect.objects.count(),
            "approvals": ApprovalRequest.objects.count(),
        }


def _asked(outcomes: list[dict[str, Any]]) -> bool:
    return any(outcome["outcome"] == "CONFIRM" for outcome in outcomes)


# -- the scenarios -------------------------------------------------------------------------------


def _scenarios(fault: str, erp: ERP, shown: list[dict[str, Any]]) -> list[str]:
    from guard.models import PendingStep

    supervisor = _actor(*CAST[0])
    approver = _actor(*CAST[1])
    supervisor_b = _actor(*CAST[2])
    run = _Run(erp, supervisor.organisation)
    executor = _executor(supervisor)
    violations: list[str] = []

    # 1. An invalid proposal: an argument the contract does not have.
    before, panel = run.marks(), run.panel()
    invalid = {"order_id": "742", "reason": REASON, "dangerous_extra": True}
    outcomes = _propose(executor, approver, "request_close", invalid)
    shown.append(_shown("invalid_arguments", outcomes))
    if run.marks()["erp_writes"] != before["erp_writes"] or len(erp.effects()) != before["effects"]:
        violations.append("invalid arguments reached the ERP")
    if (
        outcomes[0]["outcome"] != "REJECTED"
        or run.panel().get("schema_rejected", 0) != panel.get("schema_rejected", 0) + 1
    ):
        violations.append("invalid arguments were not rejected by the schema before the ERP")

    # 2. A close of another tenant's order: 743 belongs to shopping-b.
    before, panel = run.marks(), run.panel()
    outcomes = _propose(executor, approver, "request_close", {"order_id": "743", "reason": REASON})
    shown.append(_shown("cross_tenant_close", outcomes))
    foreign = [
        r
        for r in erp.requests()
        if r["action"] == "request_close" and r["order_id"] == "743" and r["tenant"] != "shopping-b"
    ]
    if foreign or len(erp.effects()) != before["effects"]:
        violations.append("cross-tenant action reached the ERP")
    if _asked(outcomes) or outcomes[0]["outcome"] != "BLOCKED":
        violations.append("cross-tenant action was not blocked before a person was asked")
    if run.panel().get("blocked_actions", 0) != panel.get("blocked_actions", 0) + 1:
        violations.append("cross-tenant action was not counted in blocked_actions")

    # 3. A close the person denies.
    before, panel = run.marks(), run.panel()
    outcomes = _propose(
        executor,
        approver,
        "request_close",
        {"order_id": "742", "reason": DENIED_REASON, "signoff_code": SECRET},
        approve=False,
    )
    shown.append(_shown("confirmation_denied", outcomes))
    if len(erp.effects()) != before["effects"]:
        violations.append("action ran after human denial")
    if not _asked(outcomes) or outcomes[-1]["outcome"] != "CANCELLED":
        violations.append("the close ran without a person being asked right before it")
    elif run.panel().get("confirmation_denied", 0) != panel.get("confirmation_denied", 0) + 1:
        violations.append("the denial was not counted in confirmation_denied")

    # 4. A close whose answer the ERP loses after recording it; the executor retries.
    erp.set_fault("timeout_after_effect")
    if fault == "partial":
        erp.set_fault("audit_unavailable")
    before, panel = run.marks(), run.panel()
    outcomes = _propose(
        executor,
        approver,
        "request_close",
        {"order_id": "742", "reason": REASON, "signoff_code": SECRET},
    )
    shown.append(_shown("timeout_after_effect", outcomes))
    final = outcomes[-1]
    added = len(erp.effects()) - before["effects"]
    if added > 1:
        violations.append("retry used a new key and duplicated the effect")
    elif added != 1:
        violations.append("safe retry did not produce exactly one effect")
    if run.panel().get("duplicates_suppressed", 0) != panel.get("duplicates_suppressed", 0) + 1:
        violations.append("the retry was not counted in duplicates_suppressed")
    if not _asked(outcomes):
        violations.append("the close ran without a person being asked right before it")
    key = final.get("key") or ""
    pending = list(
        PendingStep.objects.filter(effect__key=key, status=PendingStep.Status.PENDING).values_list(
            "name", flat=True
        )
    )
    audited = [line for line in erp.audit_trail() if line["idempotency_key"] == key]
    if fault == "partial":
        if final["outcome"] != "PARTIAL" or not pending or audited:
            violations.append("partial result was hidden")
        if run.panel().get("partial_results", 0) != panel.get("partial_results", 0) + 1:
            violations.append("the partial result was not counted in partial_results")
    elif final["outcome"] != "SUCCEEDED" or pending or len(audited) != 1:
        violations.append("the close did not succeed with its audit trail written")

    # 5. The note of order 743, read by shopping-b's supervisor: data, never an instruction.
    before = run.marks()
    reader = _executor(supervisor_b)
    outcomes = _propose(reader, approver, "read_order", {"order_id": "743"})
    shown.append(_shown("injected_note_read", outcomes))
    note = (outcomes[-1].get("result") or {}).get("note")
    if outcomes[-1]["outcome"] != "SUCCEEDED" or note != INJECTED_NOTE:
        violations.append("injection fixture missing")
    after = run.marks()
    if any(
        after[name] != before[name] for name in ("effects", "erp_writes", "ledger", "approvals")
    ):
        violations.append("the injected note became a tool call")

    return violations


def _rollback(erp: ERP, shown: list[dict[str, Any]]) -> list[str]:
    """The runbook's first step: writes of request_close off, reads still answering."""
    from guard.executor import write_switch_set

    supervisor = _actor(*CAST[0])
    approver = _actor(*CAST[1])
    executor = _executor(supervisor)
    write_switch_set(actor=supervisor, tool="request_close", enabled=False)
    closed = _propose(executor, approver, "request_close", {"order_id": "742", "reason": REASON})
    shown.append(_shown("close_with_writes_off", closed))
    read = _propose(executor, approver, "read_order", {"order_id": "742"})
    shown.append(_shown("read_with_writes_off", read))
    blocked = closed[0]["outcome"] == "BLOCKED" and not _asked(closed)
    readable = read[-1]["outcome"] == "SUCCEEDED" and bool(read[-1].get("result"))
    if not blocked or not readable or erp.effects():
        return ["rollback did not preserve read-only mode"]
    return []


def _secret_leaks(logs: Any) -> list[str]:
    """Where the synthetic secret was written: logs, events, audit rows, the ledger."""
    from console.models import AuditRow, Event
    from guard.models import Effect

    places = {
        "logs": logs,
        "events": list(Event.objects.values("detail", "reasons")),
        "audit rows": list(AuditRow.objects.values("changes")),
        "the ledger": list(Effect.objects.values("arguments", "result", "error")),
    }
    return [
        f"authorization secret leaked into {place}"
        for place, content in places.items()
        if SECRET in json.dumps(content, ensure_ascii=False, default=str)
    ]


# -- the run -------------------------------------------------------------------------------------


@contextmanager
def _erp_for_run(erp: ERP | None) -> Iterator[ERP]:
    """The ERP of this run, named in the environment for the tools; a temporary one by default."""
    made = erp is None
    erp = erp or ERP.create()
    previous = os.environ.get(PATH_VARIABLE)
    tools.use_erp(erp)
    try:
        yield erp
    finally:
        if previous is None:
            os.environ.pop(PATH_VARIABLE, None)
        else:
            os.environ[PATH_VARIABLE] = previous
        if made:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{erp.path}{suffix}").unlink(missing_ok=True)


def evaluate(
    fault: str = "none", rollback_demo: bool = False, *, erp: ERP | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Run the lab in this process (Django set up); returns the report and the violations."""
    if fault not in FAULTS:
        raise ValueError(f"no fault `{fault}`: the faults are {', '.join(FAULTS)}")
    from guard.executor import counters
    from guard.models import PendingStep

    shown: list[dict[str, Any]] = []
    with _erp_for_run(erp) as erp, _captured_logs() as capture, ExitStack() as stack:
        for patch in [] if rollback_demo else _fault_patches(fault):
            stack.enter_context(patch)
        if rollback_demo:
            violations = _rollback(erp, shown)
        else:
            violations = _scenarios(fault, erp, shown)
        # The secret, planted in the identity's credentials and in an argument marked secret.
        violations.extend(_secret_leaks(capture.lines))
        stack.close()
        violations = list(dict.fromkeys(violations))
        report = {
            "mode": "rollback" if rollback_demo else fault,
            "panel": {slug: counters(_organisation(slug)) for slug in ("shopping-a", "shopping-b")},
            "effects": erp.effects(),
            "scenarios": shown,
            "pending": list(
                PendingStep.objects.filter(status=PendingStep.Status.PENDING).values(
                    "name", "status", "attempts", "last_error", "effect__key"
                )
            ),
            "audit_trail": erp.audit_trail(),
            "logs": list(capture.lines),
            "violations": violations,
        }
    return report, violations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lab.py", description="the ERP lab, through Stalwart's executor"
    )
    parser.add_argument("--fault", choices=FAULTS, default="none")
    parser.add_argument("--rollback-demo", action="store_true")
    args = parser.parse_args(argv)  # an unknown argument exits 2
    folder: Path | None = None
    try:
        folder = setup_django()
        report, violations = evaluate(args.fault, args.rollback_demo)
    except Exception as exc:  # noqa: BLE001 - no traceback reaches a person; exit 2 says why
        print(f"lab.py: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
