"""Control-removal mutation testing of the executor: each control taken out in turn must fail a test.

mutmut mutates the pure engines (`scripts/mutation.sh`); the executor's controls live in Django
code whose tests need a database, so here each mutation is a named edit that removes or weakens
one control of `guard/executor.py` (or of the code it relies on). Every mutant is applied to a
copy of the repository and the executor's tests run there on SQLite; a mutant no test kills is a
control nothing proves, and the script exits 1 naming it.

    python scripts/mutation_controls.py [--list] [name ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/guard_console/test_executor.py",
    "tests/guard_console/test_executor_api.py",
    "tests/guard_console/test_panel.py",
    "tests/examples_erp",
]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str


MUTANTS = [
    Mutant(
        "confirmation skipped",
        "guard/executor.py",
        'return decision.get("decision") == "confirm"',
        "return False",
    ),
    Mutant(
        "authorization skipped",
        "guard/executor.py",
        "    named = foreign_tenant(arguments, context.tenant)\n",
        "    return None\n    named = foreign_tenant(arguments, context.tenant)\n",
    ),
    Mutant(
        "tenant arguments not read",
        "guard/executor.py",
        "named = foreign_tenant(arguments, context.tenant)",
        "named = None",
    ),
    Mutant(
        "domain check ignored",
        "guard/executor.py",
        "        if allowed is not True:\n",
        "        if False:\n",
    ),
    Mutant(
        "retry with a new key",
        "guard/executor.py",
        "    return key\n",
        '    return f"{key}-{attempt}"\n',
    ),
    Mutant(
        "logs unredacted",
        "guard/executor.py",
        '"target": redact(dict(arguments), secret_keys=secret),',
        '"target": dict(arguments), "credentials": dict(context.credentials),',
    ),
    Mutant(
        "events keep secret arguments",
        "guard/executor.py",
        "            secret_keys=secret,\n        )\n        fields",
        "        )\n        fields",
    ),
    Mutant(
        "write switch ignored",
        "guard/executor.py",
        'return switches.get("", True) and switches.get(tool, True)',
        "return True",
    ),
    Mutant(
        "write switch blocks reads",
        "guard/executor.py",
        "if write and not writes_enabled(organisation.pk, tool):",
        "if not writes_enabled(organisation.pk, tool):",
    ),
    Mutant(
        "ledger not read before the effect",
        "guard/executor.py",
        "if effect is not None and effect.status == Effect.Status.DONE:",
        "if False:",
    ),
    Mutant(
        "uncertain writes run again",
        "guard/executor.py",
        "elif effect.status == Effect.Status.CLAIMED and not (known and known.idempotent):",
        "elif False:",
    ),
    Mutant(
        "schema not counted",
        "guard/executor.py",
        "                count(organisation, tool, counter)\n",
        "                pass\n",
    ),
    Mutant(
        "schema refusals not told apart",
        "guard/executor.py",
        'kind = "REJECTED" if counter == "schema_rejected" else "REFUSED"',
        'kind = "REFUSED"',
    ),
    Mutant(
        "blocked not counted",
        "guard/executor.py",
        '                count(organisation, tool, "blocked_actions")\n                return self._decided(\n                    "BLOCKED"',
        '                return self._decided(\n                    "BLOCKED"',
    ),
    Mutant(
        "replays not counted",
        "guard/executor.py",
        '                if replayed:\n                    count(organisation, tool, "duplicates_suppressed")',
        '                if False:\n                    count(organisation, tool, "duplicates_suppressed")',
    ),
    Mutant(
        "every completion counted as an effect",
        "guard/executor.py",
        '                if first:\n                    count(organisation, tool, "effects")',
        '                if True:\n                    count(organisation, tool, "effects")',
    ),
    Mutant(
        "a confirmed call counted twice",
        "guard/executor.py",
        "            if counter is not None and not token:",
        "            if counter is not None:",
    ),
    Mutant(
        "partial hidden",
        "guard/executor.py",
        "        if pending:\n            with transaction.atomic():",
        "        if False:\n            with transaction.atomic():",
    ),
    Mutant(
        "no undo on a refusal",
        "guard/executor.py",
        'if outcome["outcome"] in STOPPING and self.writes and self.undo_on_refusal:',
        "if False:",
    ),
    Mutant(
        "a timeout is not retried",
        "guard/engine/execution.py",
        "            if attempt == TIMEOUT_ATTEMPTS:\n",
        "            if True:\n",
    ),
    Mutant(
        "a report may name another call",
        "guard/executor.py",
        '            if self._key(tool, arguments, effect.step, call.get("compensation_of")) != key:\n',
        "            if False:\n",
    ),
    Mutant(
        "a failed step counts as done",
        "guard/executor.py",
        '            step.status = PendingStep.Status.GAVE_UP\n        step.save(update_fields=["attempts", "last_error", "next_attempt_at", "status"])\n        return False',
        '            step.status = PendingStep.Status.GAVE_UP\n        step.save(update_fields=["attempts", "last_error", "next_attempt_at", "status"])\n        return True',
    ),
    Mutant(
        "a denial is not counted",
        "guard/approvals.py",
        '        count(actor.organisation, request.tool, "confirmation_denied")\n',
        "",
    ),
    Mutant(
        "a denied call runs",
        "guard/executor.py",
        "        if request.status != ApprovalRequest.Status.APPROVED or not request.token:\n",
        "        if False:\n",
    ),
]


def _copy() -> Path:
    target = Path(tempfile.mkdtemp(prefix="stalwart-mutant-"))
    ignore = shutil.ignore_patterns(".venv*", "var", "mutants", ".git", "__pycache__", "*.pyc")
    shutil.copytree(ROOT, target / "repo", ignore=ignore)
    return target / "repo"


def run(mutant: Mutant, python: str) -> tuple[bool, float]:
    """Apply one mutant to a fresh copy and run the tests there: True when a test failed."""
    repo = _copy()
    try:
        if mutant.path:
            path = repo / mutant.path
            text = path.read_text()
            if text.count(mutant.old) != 1:
                raise SystemExit(f"mutant `{mutant.name}`: its text is not found exactly once")
            path.write_text(text.replace(mutant.old, mutant.new))
        tests = [test for test in TESTS if (repo / test).exists()]
        start = time.monotonic()
        done = subprocess.run(
            [
                python,
                "-m",
                "pytest",
                "-x",
                "-q",
                "-p",
                "no:cacheprovider",
                "-m",
                "not integration and not browser",
                *tests,
            ],
            cwd=repo,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo), "HOME": str(repo)},
        )
        if mutant.name == "baseline" and done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-2000:], file=sys.stderr)
        return done.returncode != 0, time.monotonic() - start
    finally:
        shutil.rmtree(repo.parent, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run only these mutants")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if not args.names or m.name in args.names]
    if args.list:
        print("\n".join(m.name for m in MUTANTS))
        return 0
    unknown = set(args.names) - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutant(s): {', '.join(sorted(unknown))}")
    python = str(ROOT / ".venv" / "bin" / "python")
    failed, seconds = run(Mutant("baseline", "", "", ""), python)
    if failed:
        print("the executor's tests fail without any mutant: fix them first", file=sys.stderr)
        return 2
    print(f"baseline passes ({seconds:.0f} s)", flush=True)
    survivors = []
    for mutant in chosen:
        killed, seconds = run(mutant, python)
        print(f"{'killed  ' if killed else 'SURVIVED'} {mutant.name} ({seconds:.0f} s)", flush=True)
        if not killed:
            survivors.append(mutant.name)
    score = 100 * (len(chosen) - len(survivors)) / max(len(chosen), 1)
    print(f"executor controls: {len(chosen) - len(survivors)}/{len(chosen)} killed ({score:.1f}%)")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
