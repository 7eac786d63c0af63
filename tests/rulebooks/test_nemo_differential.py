"""Differential test against NeMo Guardrails' own Colang parsers (`nemoguardrails==0.24.1`).

NeMo runs in its own virtual environment, `.venv-nemo` (created by `nemo/setup_env.sh`), in a
subprocess with a time limit (its 1.0 parser can hang), on our corpus, our refused files and the
`.co` files the installed package ships. For every file, the flows, the user intents (with their
examples) and the tool calls both parsers find must agree, after our tool-call conventions are
applied to NeMo's output:

- Colang 1.0: an action run (`execute x`) is the tool `x`, except NeMo's own `generate_value`
  (`$v = ...`); an utterance of `execute_<x>` (`bot execute_x`) is the tool `x`;
- Colang 2.x: an action (`FooBarAction`) awaited, started, activated or in a `when` is the tool
  `foo_bar`; the flows `execute x` and `bot execute_x` are the tool `x`; `send StartFooAction`
  is the tool `foo`.

Where one accepts what the other refuses, or they read a file differently, the file must be in
`KNOWN_DIFFERENCES` with a one-line reason; an entry that no longer differs fails the test too,
so the list stays true.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rulebooks.compiler import RulebookUnsupported, compile_colang
from rulebooks.compiler.colang_common import action_tool_name, is_action_name

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
PYTHON = ROOT / ".venv-nemo" / "bin" / "python"
SETUP = HERE / "nemo" / "setup_env.sh"
ORACLE = HERE / "nemo" / "oracle.py"
#: NeMo's own actions that a 1.0 file does not name as tools.
NEMO_INTERNAL_ACTIONS = {"generate_value", "create_event"}

#: Files the two parsers disagree on, with why: "we refuse" (NeMo accepts), "nemo refuses"
#: (we accept), or "reads differ" (both accept, different flows, intents or tool calls).
KNOWN_DIFFERENCES: dict[str, tuple[str, str]] = {
    # Our refused files: NeMo accepts each, we refuse it on purpose.
    "refused:v1_any_block.co": ("we refuse", "`any` picks a step at run time: not governable"),
    "refused:v1_chained_comparison.co": ("we refuse", "chained comparisons: write `and`"),
    "refused:v1_define_action.co": ("we refuse", "NeMo skips a `define action` body silently"),
    "refused:v1_dynamic_flow_call.co": ("we refuse", "a flow a variable chooses: not governable"),
    "refused:v1_positional_tool_argument.co": (
        "we refuse",
        "a positional tool argument cannot be matched to the call's named arguments",
    ),
    "refused:v1_top_level_statement.co": (
        "we refuse",
        "NeMo turns stray top-level lines into a nameless flow",
    ),
    "refused:v1_unknown_function.co": ("we refuse", "only the condition language's functions"),
    "refused:v1_unquoted_example.co": (
        "we refuse",
        "NeMo reads an unquoted example line as an intent reference",
    ),
    "refused:v1_unterminated_text.co": (
        "we refuse",
        "NeMo keeps an unterminated text as a mangled example",
    ),
    "refused:v2_break_outside_loop.co": ("we refuse", "`break` outside a loop"),
    "refused:v2_ellipsis.co": ("we refuse", "`...` has the model write the flow: not governable"),
    "refused:v2_label.co": ("we refuse", "labels (jump targets) are not supported"),
    "refused:v2_method_call.co": ("we refuse", "a method that changes a value (`update`)"),
    "refused:v2_mixed_case_name.co": (
        "we refuse",
        "NeMo reads `bot say Hello` as an event nobody sends",
    ),
    "refused:v2_positional_action_argument.co": (
        "we refuse",
        "a positional action argument cannot be matched to the call's named arguments",
    ),
    "refused:v2_top_level_statement.co": (
        "we refuse",
        "NeMo drops statements outside any flow silently",
    ),
    "refused:v2_unknown_decorator.co": (
        "we refuse",
        "an unknown decorator is refused, not ignored",
    ),
    # Files the package ships: its runtime machinery, not rulebooks.
    "nemo:nemoguardrails/colang/v2_x/library/attention.co": (
        "we refuse",
        "standard library: `regex()` and set literals are runtime machinery",
    ),
    "nemo:nemoguardrails/colang/v2_x/library/avatars.co": (
        "we refuse",
        "standard library: `is_str()`, `regex()`, `search()`",
    ),
    "nemo:nemoguardrails/colang/v2_x/library/core.co": (
        "we refuse",
        "standard library: `type()`, `is_regex()`, `is_str()`, set literals",
    ),
    "nemo:nemoguardrails/colang/v2_x/library/guardrails.co": (
        "we refuse",
        "standard library: `is_regex()` and set literals",
    ),
    "nemo:nemoguardrails/colang/v2_x/library/llm.co": (
        "we refuse",
        "standard library: `...` generation, `regex()`, `search()`, `flows_info()`, a label",
    ),
    "nemo:nemoguardrails/rails/llm/llm_flows.co": (
        "we refuse",
        "NeMo's rail plumbing calls flows a variable chooses (`do $input_flows[$i]`)",
    ),
}


def _ours(item: dict[str, Any]) -> dict[str, Any]:
    try:
        record = compile_colang(item["text"], filename="x.co", colang_version=item["version"])
    except RulebookUnsupported as exc:
        return {"ok": False, "error": str(exc)}
    tools: list[tuple[str, str, int]] = []

    def walk(flow: str, steps: list[dict[str, Any]]) -> None:
        for step in steps:
            if step["step"] == "tool":
                tools.append((flow, step["tool"], step["line"]))
            if step["step"] == "group":
                walk(flow, step["items"])
            for branch in step.get("branches", ()):
                if "event" in branch:
                    walk(flow, [branch["event"]])
                walk(flow, branch["steps"])
            if step.get("else"):
                walk(flow, step["else"]["steps"])
            if step["step"] == "while":
                walk(flow, step["steps"])

    for flow in record["flows"]:
        walk(flow["name"], flow["steps"])
    intents = {i["name"]: i["examples"] for i in record["user_intents"]}
    return {
        "ok": True,
        "flows": [f["name"] for f in record["flows"]],
        "intents": intents,
        "tools": sorted(tools),
    }


def _theirs(item: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    tools: list[tuple[str, str, int | None]] = []
    for call in item["calls"]:
        flow, kind, name, line = call["flow"], call["kind"], call["name"], call["line"]
        tool = None
        if kind == "run_action" and name not in NEMO_INTERNAL_ACTIONS:
            tool = name
        elif kind == "utter" and name.startswith("execute_") and " " not in name:
            tool = name[len("execute_") :]
        elif kind == "action" and call["op"] in ("await", "start", "activate", "when"):
            tool = action_tool_name(name)
        elif kind == "flow" and call["op"] in ("await", "start", "activate", "when"):
            words = name.split(" ")
            if words[0] == "execute" and len(words) == 2:
                tool = words[1]
            elif words[0] == "bot" and len(words) == 2 and words[1].startswith("execute_"):
                tool = words[1][len("execute_") :]
        elif kind == "event" and call["op"] == "send" and name.startswith("Start"):
            if is_action_name(name[len("Start") :]):
                tool = action_tool_name(name[len("Start") :])
        if tool:
            tools.append((flow, tool, line))
    return sorted(tools)


def _anonymous(name: str) -> str:
    """Both parsers name a `define flow` without a name `anonymous-...` (a hash, a line)."""
    return "anonymous" if name.startswith("anonymous-") else name


def _same_tools(ours: list[tuple], theirs: list[tuple]) -> bool:
    """The same tool calls; a NeMo call without a line (a `when` head) matches any line."""
    left = Counter(ours)
    for flow, tool, line in theirs:
        if line is not None:
            key = (flow, tool, line)
        else:
            key = next((k for k in left if k[:2] == (flow, tool) and left[k] > 0), None)
        if key is None or left[key] <= 0:
            return False
        left[key] -= 1
    return not +left


def _outcome(item: dict[str, Any]) -> tuple[str, str]:
    ours = _ours(item)
    if not item["ok"] and not ours["ok"]:
        return "agree", ""
    if not ours["ok"]:
        return "we refuse", ours["error"]
    if not item["ok"]:
        return "nemo refuses", item["error"]
    theirs = {"flows": item["flows"], "intents": item["intents"], "tools": _theirs(item)}
    for side in (ours, theirs):
        side["flows"] = [_anonymous(f) for f in side["flows"]]
        side["tools"] = sorted(
            ((_anonymous(f), t, n) for f, t, n in side["tools"]),
            key=lambda x: (x[0], x[1], x[2] or 0),
        )
    diffs = [
        f"{key}: ours {ours[key]!r} / nemo {theirs[key]!r}"
        for key in ("flows", "intents")
        if ours[key] != theirs[key]
    ]
    if not _same_tools(ours["tools"], theirs["tools"]):
        diffs.append(f"tools: ours {ours['tools']!r} / nemo {theirs['tools']!r}")
    return ("reads differ", "; ".join(diffs)) if diffs else ("agree", "")


@pytest.fixture(scope="module")
def oracle() -> list[dict[str, Any]]:
    if not PYTHON.exists():
        pytest.fail(
            f"the NeMo Guardrails oracle is not installed: run `{SETUP.relative_to(ROOT)}` "
            "(it creates .venv-nemo with nemoguardrails==0.24.1)"
        )
    files = []
    for folder in ("corpus", "refused"):
        for path in sorted((HERE / folder).glob("*.co")):
            text = path.read_text(encoding="utf-8")
            version = "1.0" if path.name.startswith("v1_") or "define" in text else "2.x"
            files.append({"key": f"{folder}:{path.name}", "path": str(path), "version": version})
    env = {**os.environ, "DISABLE_NEST_ASYNCIO": "true", "PYTHONPATH": ""}
    done = subprocess.run(
        [str(PYTHON), str(ORACLE)],
        input=json.dumps({"files": files, "shipped": True}),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_nemo_oracle_is_installed() -> None:
    assert PYTHON.exists(), (
        f"the NeMo Guardrails oracle is not installed: run `{SETUP.relative_to(ROOT)}`"
    )


def test_nemo_reads_the_shop_rulebook_as_we_do(oracle: list[dict[str, Any]]) -> None:
    (shop,) = [item for item in oracle if item["key"] == "corpus:v1_shop_refunds.co"]
    assert shop["ok"]
    assert _theirs(shop) == [("refunds", "refund_card", 8)]
    assert _outcome(shop) == ("agree", "")


def test_the_oracle_read_the_files_the_package_ships(oracle: list[dict[str, Any]]) -> None:
    shipped = [item for item in oracle if item["key"].startswith("nemo:")]
    assert len(shipped) >= 60
    assert Counter(item["version"] for item in shipped).keys() == {"1.0", "2.x"}


def test_both_parsers_agree_except_for_the_reviewed_differences(
    oracle: list[dict[str, Any]],
) -> None:
    problems = []
    seen = set()
    for item in oracle:
        outcome, why = _outcome(item)
        key = item["key"]
        seen.add(key)
        known = KNOWN_DIFFERENCES.get(key)
        if outcome == "agree":
            if known is not None:
                problems.append(f"{key}: listed as `{known[0]}` but both parsers now agree")
            continue
        if known is None or known[0] != outcome:
            problems.append(f"{key}: {outcome}: {why}")
    for key in KNOWN_DIFFERENCES:
        if key not in seen:
            problems.append(f"{key}: listed but not among the files compared")
    assert not problems, "\n".join(problems)
