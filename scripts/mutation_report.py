"""Prints an engine's mutation score from mutmut's results in mutants/, and its survivors.

Run by scripts/mutation.sh after `mutmut run`; it reads what mutmut left in `mutants/` (a `.meta`
file of exit codes beside each mutated module) and never runs a test itself. The score counts a
mutant as killed when a test failed on it or it timed out. Mutants that no test can tell apart from
the original (equivalent mutants) are listed with a reason each in
scripts/mutation_equivalent.toml, keyed by name and by the mutated line, so that an entry whose
mutant was renumbered by an edit is reported as stale instead of silently excusing another mutant.

    python scripts/mutation_report.py guard [--min 90] [--survivors] [--module NAME ...]

`--module clause_index` (repeatable) scores only those modules of the engine, for runs made module
by module (`scripts/mutation.sh firewall 'firewall.engine.clause_index.*'`); mutants of a module not
run yet are "not checked", so a module's score means something only once its run has finished.

Exit status: 0 when the score of non-equivalent mutants reaches `--min`, 1 when it does not,
2 when there are no results for the engine.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
EQUIVALENTS = Path(__file__).resolve().with_name("mutation_equivalent.toml")

# mutmut's exit-code meanings (mutmut.stats.status_by_exit_code), grouped as the score reads them.
KILLED_CODES = {1: "killed", 3: "killed"}
TIMEOUT_CODES = {36, -24, 24, 152, 255}
STATUS_BY_CODE = {
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    37: "caught by type check",
    None: "not checked",
    2: "interrupted",
    -11: "segfault",
    -9: "segfault",
}


@dataclass(frozen=True)
class Mutant:
    name: str
    status: str
    path: Path


def status_of(code: int | None) -> str:
    if code in KILLED_CODES:
        return "killed"
    if code in TIMEOUT_CODES:
        return "timeout"
    return STATUS_BY_CODE.get(code, "suspicious")


def load_mutants(engine: str) -> list[Mutant]:
    mutants = []
    for meta in sorted((MUTANTS / engine / "engine").glob("*.py.meta")):
        codes = json.loads(meta.read_text("utf-8"))["exit_code_by_key"]
        source = meta.with_suffix("")
        for name, code in codes.items():
            mutants.append(Mutant(name=name, status=status_of(code), path=source))
    return mutants


class Diffs:
    """The changed lines of each mutant, read from the mutated module mutmut wrote."""

    def __init__(self) -> None:
        self._functions: dict[Path, dict[str, str]] = {}

    def _functions_of(self, path: Path) -> dict[str, str]:
        if path not in self._functions:
            text = path.read_text("utf-8")
            lines = text.splitlines()
            # Mutated modules run to a hundred thousand lines: slice by line numbers, once each.
            self._functions[path] = {
                node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
                for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and "__mutmut_" in node.name
            }
        return self._functions[path]

    def changed_lines(self, mutant: Mutant) -> tuple[str, str]:
        """The original and the mutated line (stripped; joined with ` / ` when several)."""
        function = mutant.name.rpartition(".")[2]
        base = function.partition("__mutmut_")[0]
        functions = self._functions_of(mutant.path)
        original = functions.get(f"{base}__mutmut_orig", "").splitlines()
        mutated = functions.get(function, "").splitlines()
        if not original or not mutated:
            return "", ""
        # The first lines carry the mangled names; put the function's own name back in both.
        own = base.rpartition("\u01c1")[2] if "\u01c1" in base else base[2:]
        original[0] = original[0].replace(f"{base}__mutmut_orig", own, 1)
        mutated[0] = mutated[0].replace(function, own, 1)
        removed, added = [], []
        for line in difflib.ndiff(original, mutated):
            if line.startswith("- "):
                removed.append(line[2:].strip())
            elif line.startswith("+ "):
                added.append(line[2:].strip())
        return " / ".join(removed), " / ".join(added)


def load_equivalents() -> dict[str, dict[str, str]]:
    if not EQUIVALENTS.exists():
        return {}
    data = tomllib.loads(EQUIVALENTS.read_text("utf-8"))
    return {entry["mutant"]: entry for entry in data.get("equivalent", [])}


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", choices=["guard", "firewall"])
    parser.add_argument("--min", type=float, default=90.0, help="the score to reach, in percent")
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="print only the names of the mutants no test killed, equivalent ones left out",
    )
    parser.add_argument(
        "--module",
        action="append",
        default=[],
        help="score only this module of the engine (its file name without .py); repeatable",
    )
    args = parser.parse_args(argv)

    mutants = load_mutants(args.engine)
    if args.module:
        mutants = [m for m in mutants if m.path.stem in args.module]
    if not mutants:
        print(f"no mutation results for `{args.engine}`: run scripts/mutation.sh first")
        return 2
    diffs = Diffs()
    equivalents = load_equivalents()

    detected = [m for m in mutants if m.status in {"killed", "timeout"}]
    undetected = [m for m in mutants if m.status not in {"killed", "timeout"}]
    equivalent, stale = [], []
    for mutant in undetected:
        entry = equivalents.get(mutant.name)
        if entry is None:
            continue
        if mutant.status == "survived" and diffs.changed_lines(mutant)[1] == entry["line"]:
            equivalent.append(mutant)
        else:
            stale.append(mutant.name)
    for name in sorted(set(equivalents) - {m.name for m in undetected}):
        # an entry of the other engine, or (scored module by module) of a module left out, is
        # not stale
        engine, _, rest = name.partition(".engine.")
        if engine == args.engine and (not args.module or rest.partition(".")[0] in args.module):
            stale.append(name)
    survivors = [m for m in undetected if m not in equivalent]
    if args.survivors:
        for mutant in survivors:
            print(mutant.name)
        return 0

    total, killed = len(mutants), len(detected)
    timeouts = sum(1 for m in detected if m.status == "timeout")
    print(
        f"engine: {args.engine}" + (f" (modules: {', '.join(args.module)})" if args.module else "")
    )
    print(f"killed {killed} of {total} mutants ({percent(killed, total)})")
    non_equivalent = total - len(equivalent)
    print(
        f"killed {killed} of {non_equivalent} non-equivalent mutants "
        f"({percent(killed, non_equivalent)}); {len(equivalent)} equivalent, "
        f"{timeouts} of the killed by timeout"
    )
    by_status: dict[str, int] = {}
    for mutant in survivors:
        by_status[mutant.status] = by_status.get(mutant.status, 0) + 1
    print("survivors:", ", ".join(f"{n} {s}" for s, n in sorted(by_status.items())) or "none")
    for mutant in survivors:
        if mutant.status == "not checked":
            continue
        before, after = diffs.changed_lines(mutant)
        print(f"  {mutant.status}: {mutant.name}")
        print(f"      - {before}")
        print(f"      + {after}")
    if stale:
        print("stale entries in scripts/mutation_equivalent.toml (killed, renumbered or gone):")
        for name in stale:
            print(f"  {name}")
    score = 100 * killed / non_equivalent if non_equivalent else 100.0
    return 0 if score >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
