"""`make fuzz`: hypothesis over the parts that read what an attacker writes, for a bounded time.

Targets: the firewall validator, the firewall's compiler and both evaluators (on policies that
mostly validate), the rulebook compiler (Colang and rule sheets), agent.yaml, and the tool
check's `check`. Each input either
succeeds or raises the product's own error (`FirewallError`, `RulebookError`, `GuardError`);
anything else (a crash, a `TypeError`, a `RecursionError`) is a finding, printed with its input,
and the run exits 1. `FUZZ_SECONDS` (default 300) is the whole budget, shared among the targets;
`FUZZ_SEED` makes a run repeatable.

    .venv/bin/python scripts/fuzz.py            # or: make fuzz FUZZ_SECONDS=600
"""

from __future__ import annotations

import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from firewall import engine as firewall_engine  # noqa: E402
from guard import engine as guard_engine  # noqa: E402
from rulebooks import compiler as rulebook_compiler  # noqa: E402
from stalwart_agents import Agent  # noqa: E402

SHOP = ROOT / "examples" / "shop"
KEY = b"fuzz-key-0123456789abcdef0123456789abcdef"

# JSON-ish values, with the characters and shapes that broke things before: NUL, lone
# surrogates, deep nesting, huge integers, floats at the edges.
TEXT = st.text(
    alphabet=st.characters(codec=None, categories=None, exclude_categories=()), max_size=40
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
    | st.sampled_from(["", "*", "shell.*", "$.command", "rm -rf /", "\x00", "\ud800", "a" * 300])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
    max_leaves=30,
)
FW_KEYS = [
    "id", "priority", "name", "enabled", "stage", "tool_name_glob", "skill_glob", "args_match",
    "verdict", "sanitize", "egress", "cap_cost_cents", "sequence", "mode", "notes", "path", "op",
    "value", "presets", "patterns", "allow", "deny", "steps", "within", "tool",
]  # fmt: skip
FW_VALUES = st.sampled_from(
    [
        *firewall_engine.VERDICTS, *firewall_engine.STAGES, *firewall_engine.OPERATORS,
        "$.command", "$.a[0].b", "$..x", "$[*]", "shell.*", "*.exec", "rm\\s+-rf", "(a+)+$",
        "[", "email", "10.0.0.0/8", "*.example.org", 0, -1, 10**12, 1.5, True, None, [], {},
    ]
)  # fmt: skip
FW_VALUE = FW_VALUES | JSON
CLAUSE = st.dictionaries(st.sampled_from(["path", "op", "value"]), FW_VALUE, max_size=3)
RULE = st.dictionaries(
    st.sampled_from(FW_KEYS) | TEXT,
    FW_VALUE | st.lists(CLAUSE, max_size=3) | st.dictionaries(st.sampled_from(FW_KEYS), FW_VALUE),
    max_size=10,
)
POLICY = (
    st.fixed_dictionaries(
        {"name": FW_VALUE, "default_verdict": FW_VALUE, "rules": st.lists(RULE, max_size=4)}
    )
    | JSON
)
# Policies that mostly validate, so that the compiler and both evaluators are reached too.
NEAR_RULE = st.fixed_dictionaries(
    {
        "priority": st.integers(0, 1000),
        "name": st.sampled_from(["r", "no rm", "scrub", "held"]),
        "verdict": st.sampled_from(["allow", "audit", "deny", "require_approval"]),
        "tool_name_glob": st.sampled_from(
            ["", "*", "shell.*", "*.exec", "*.shell.*", "refund_card"]
        ),
    },
    optional={
        "stage": st.sampled_from(firewall_engine.STAGES),
        "skill_glob": st.sampled_from(["builtin.*", "*", "pay"]),
        "args_match": st.lists(
            st.fixed_dictionaries(
                {
                    "path": st.sampled_from(["$.command", "$.a[0].b", "$..x", "$[*]", "$.amount"]),
                    "op": st.sampled_from(firewall_engine.OPERATORS),
                    "value": st.sampled_from(["rm", "rm\\s+-rf", 5, 1.5, ["a", "b"], True])
                    | FW_VALUE,
                }
            ),
            max_size=3,
        ),
        "enabled": st.booleans(),
    },
)
NEAR_POLICY = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["p", "production"]),
        "default_verdict": st.sampled_from(firewall_engine.DEFAULT_VERDICTS),
        "rules": st.lists(NEAR_RULE, max_size=4, unique_by=lambda r: r["name"]),
    }
)
CALL = (
    st.fixed_dictionaries(
        {
            "tool": FW_VALUE
            | st.sampled_from(["refund_card", "get_order", "shell.exec", "send_email"])
        },
        optional={
            "arguments": JSON,
            "skill": FW_VALUE,
            "stage": FW_VALUE,
            "destination": FW_VALUE,
            "origins": JSON,
            "labels": JSON,
            "agent": FW_VALUE,
            "kind": FW_VALUE,
        },
    )
    | JSON
)

COLANG_WORDS = [
    "define", "user", "bot", "flow", "subflow", "execute", "if", "else", "when", "while",
    "stop", "abort", "return", "await", "match", "start", "activate", "send", "and", "or",
    "not", "import", "@active", "$x", "$order_paid", "(", ")", "=", "==", ">", "...", '"t"',
    "refund_card", "ask refund", "# c", ":", ",", "[", "]", "{", "}", "1", "True", "None",
    "\\", '"""', "\t", "\x00", "\ud800", "$r.status", "len($x)", "    ", "\n", "\n  ",
]  # fmt: skip
COLANG = st.lists(st.sampled_from(COLANG_WORDS) | TEXT, max_size=60).map(" ".join)
SHEET = st.lists(
    st.lists(st.sampled_from(["tool", "when", "then", "refund_card", "refuse", "amount > 5"]) | TEXT, max_size=6),
    max_size=8,
).map(lambda rows: "\n".join(",".join(r) for r in rows).encode("utf-8", "surrogatepass"))  # fmt: skip


def _mutated(text: str) -> st.SearchStrategy[str]:
    """The file with a few lines replaced, dropped or repeated: close to valid, so it goes deep."""
    lines = text.splitlines()

    def mutate(edits: list[tuple[int, int, str]]) -> str:
        out = list(lines)
        for kind, where, new in edits:
            i = where % max(len(out), 1)
            if kind == 0 and out:
                out[i] = new
            elif kind == 1 and out:
                del out[i]
            else:
                out.insert(i, out[i] if out and kind == 2 else new)
        return "\n".join(out)

    edit = st.tuples(st.integers(0, 3), st.integers(0, 10_000), TEXT | st.sampled_from(lines))
    return st.lists(edit, min_size=1, max_size=6).map(mutate)


AGENT_YAML = (
    _mutated((SHOP / "agent.yaml").read_text())
    | _mutated((ROOT / "examples" / "erp" / "agent.yaml").read_text())
    | JSON.map(lambda v: yaml.safe_dump(v, allow_unicode=True))
)


def _modules() -> dict[str, list]:
    """The examples' `python:` tool modules, so that mutated agent files load their tools."""
    sys.path.insert(0, str(ROOT / "examples"))
    import erp.tools  # noqa: PLC0415
    import shop.tools  # noqa: PLC0415

    return {"shop.tools": shop.tools.TOOLS, "erp.tools": erp.tools.TOOLS}


def _shop_check() -> guard_engine.ToolCheck:
    desk = Agent.from_file(SHOP / "agent.yaml")
    return guard_engine.ToolCheck(desk.catalogue(), key=KEY, rulebook=desk.rules().record)


def target_firewall(policy: Any, call: Any) -> None:
    issues = firewall_engine.validate_policy(policy)
    if issues:
        return
    compiled = firewall_engine.compile_policy(policy)
    compiled.evaluate(call).to_dict()
    firewall_engine.reference_evaluate(policy, call)


def target_colang(source: str, version: str | None) -> None:
    rulebook_compiler.compile_colang(
        source.encode("utf-8", "surrogatepass"), colang_version=version
    )


def target_rule_sheet(data: bytes) -> None:
    rulebook_compiler.compile_rule_sheet(data, filename="rules.csv")


def target_agent_yaml(text: str) -> None:
    guard_engine.load_agent_yaml(text, modules=MODULES, filename="agent.yaml")


def target_check(call: Any, context: Any, checks: Any, usage: Any) -> None:
    CHECK.check(
        call,
        session=None,
        context=context if isinstance(context, dict) else None,
        checks=checks,
        usage=usage if isinstance(usage, dict) else None,
    ).to_dict()


CHECK: guard_engine.ToolCheck
MODULES: dict[str, list] = {}
TARGETS: list[tuple[str, Callable[..., None], tuple[st.SearchStrategy, ...], tuple[type, ...]]] = [
    ("firewall validator", target_firewall, (POLICY, CALL), (firewall_engine.FirewallError,)),
    (
        "firewall compiler and evaluators",
        target_firewall,
        (NEAR_POLICY, CALL),
        (firewall_engine.FirewallError,),
    ),
    (
        "rulebook compiler (Colang)",
        target_colang,
        (COLANG | _mutated((SHOP / "policy.co").read_text()), st.sampled_from([None, "1.0", "2.x"])),
        (rulebook_compiler.RulebookError,),
    ),
    ("rulebook compiler (rule sheet)", target_rule_sheet, (SHEET,), (rulebook_compiler.RulebookError,)),
    ("agent.yaml", target_agent_yaml, (AGENT_YAML,), (guard_engine.GuardError,)),
    (
        "tool check",
        target_check,
        (
            CALL,
            JSON,
            st.none() | st.lists(st.sampled_from(sorted(guard_engine.checks.NAMES)), max_size=4),
            JSON,
        ),
        (guard_engine.GuardError,),
    ),
]  # fmt: skip


def fuzz_one(
    name: str,
    fn: Callable[..., None],
    strategies: tuple[st.SearchStrategy, ...],
    allowed: tuple[type, ...],
    *,
    seconds: float,
    seed: int,
) -> tuple[int, list[str]]:
    """Feed one target generated inputs for `seconds`; the inputs tried and the findings."""
    count = 0
    found: list[str] = []

    def body(args: tuple) -> None:
        nonlocal count
        count += 1
        try:
            fn(*args)
        except allowed:
            pass
        except Exception as exc:  # noqa: BLE001 - a finding, kept with its input
            found.append(
                f"{name}: {type(exc).__name__}: {exc}\n  input: {args!r:.2000}\n"
                + "".join(traceback.format_exception(exc)[-4:])
            )

    rng = random.Random(f"{seed}:{name}")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(found) < 5:
        test = settings(
            max_examples=100,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )(given(st.tuples(*strategies))(body))
        test._hypothesis_internal_use_seed = rng.getrandbits(64)  # noqa: SLF001
        test()
    return count, found


def run(seconds: float, seed: int) -> int:
    global CHECK
    CHECK = _shop_check()
    MODULES.update(_modules())
    findings: list[str] = []
    share = seconds / len(TARGETS)
    print(f"fuzz: {seconds:.0f} s in all, seed {seed}")
    for name, fn, strategies, allowed in TARGETS:
        count, found = fuzz_one(name, fn, strategies, allowed, seconds=share, seed=seed)
        print(f"  {name}: {count} inputs in {share:.0f} s, {len(found)} findings", flush=True)
        findings.extend(found)
    for finding in findings:
        print("\n" + finding)
    return 1 if findings else 0


if __name__ == "__main__":
    total = float(os.environ.get("FUZZ_SECONDS", "300"))
    sys.exit(run(total, int(os.environ.get("FUZZ_SEED", "0")) or random.randrange(2**31)))
