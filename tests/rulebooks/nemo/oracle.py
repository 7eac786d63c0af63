"""Run NeMo Guardrails' own Colang parsers on files and print what they find, as JSON.

This script runs under `.venv-nemo/bin/python` (see `setup_env.sh`), never in the project's
environment. It reads a JSON list of `{"key", "path" | "text", "version"}` on stdin (with
`{"shipped": true}` it also adds every `.co` file the installed package ships) and prints one
JSON object per file: what the parser for that version found -- flow names, user intents with
their examples, and every call it parsed (an action run, an utterance, a spec) with its line --
or the error it raised. It calls the per-version parsers directly: the package's top-level
`parse_colang_file` silently returns nothing when its version guess is wrong. Each file gets a
time limit, because the 1.0 parser can loop forever on a body-less `define flow` at the end.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

TIME_LIMIT = 3


class TimeLimit(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise TimeLimit()


def shipped_files() -> list[dict[str, Any]]:
    import nemoguardrails
    import yaml

    root = Path(nemoguardrails.__file__).parent
    out = []
    for path in sorted(root.rglob("*.co")):
        out.append(
            {
                "key": "nemo:" + str(path.relative_to(root.parent)),
                "path": str(path),
                "version": _version(path, root, yaml),
            }
        )
    return out


def _version(path: Path, root: Path, yaml: Any) -> str:
    """The nearest config.yml's `colang_version`, else NeMo's rule (`define` means 1.0)."""
    folder = path.parent
    while True:
        config = folder / "config.yml"
        if config.is_file():
            data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
            if "colang_version" in data:
                return str(data["colang_version"])
            break
        if folder == root:
            break
        folder = folder.parent
    from nemoguardrails.colang import _is_colang_v2

    return "2.x" if _is_colang_v2(path.read_text(encoding="utf-8")) else "1.0"


def _line(mapping: Any) -> int | None:
    if isinstance(mapping, dict):
        return mapping.get("line_number")
    return None


def v1(filename: str, text: str) -> dict[str, Any]:
    from nemoguardrails.colang.v1_0.lang.parser import parse_colang_file

    result = parse_colang_file(filename, text, include_source_mapping=True)
    calls = []
    for flow in result.get("flows", []):
        for element in flow.get("elements", []):
            kind = element.get("_type")
            line = _line(element.get("_source_mapping"))
            if kind == "run_action":
                name = element.get("action_name")
                if name == "utter":
                    value = (element.get("action_params") or {}).get("value")
                    if isinstance(value, str):
                        calls.append(
                            {"flow": flow["id"], "kind": "utter", "name": value, "line": line}
                        )
                else:
                    calls.append(
                        {"flow": flow["id"], "kind": "run_action", "name": name, "line": line}
                    )
    intents = {name: list(examples) for name, examples in result.get("user_messages", {}).items()}
    return {"flows": [f["id"] for f in result.get("flows", [])], "intents": intents, "calls": calls}


def _specs(spec: Any) -> list[Any]:
    if isinstance(spec, dict):
        out = []
        for item in spec.get("elements", []):
            out.extend(_specs(item))
        return out
    return [spec]


def _v2_elements(flow: str, elements: list[Any], calls: list[dict[str, Any]]) -> None:
    for element in elements or []:
        kind = type(element).__name__
        if kind == "SpecOp":
            line = element._source.line if element._source else None
            for spec in _specs(element.spec):
                _v2_spec(flow, element.op, spec, line, calls)
        elif kind == "If":
            _v2_elements(flow, element.then_elements, calls)
            _v2_elements(flow, element.else_elements, calls)
        elif kind == "While":
            _v2_elements(flow, element.elements, calls)
        elif kind == "When":
            for spec_expr in element.when_specs:
                for spec in _specs(spec_expr):
                    _v2_spec(flow, "when", spec, None, calls)
            for branch in element.then_elements:
                _v2_elements(flow, branch, calls)
            _v2_elements(flow, element.else_elements, calls)


def _v2_spec(flow: str, op: str, spec: Any, line: int | None, calls: list[dict[str, Any]]) -> None:
    if getattr(spec, "name", None) is None:
        return
    calls.append(
        {
            "flow": flow,
            "kind": spec.spec_type.value,
            "op": op,
            "name": spec.name,
            "members": len(spec.members or []),
            "line": line,
        }
    )


def _said(spec: Any) -> list[str]:
    out = []
    for item in _specs(spec):
        if getattr(item, "name", None) == "user said" and "$0" in (item.arguments or {}):
            try:
                value = ast.literal_eval(item.arguments["$0"])
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                out.append(value)
    return out


def v2(filename: str, text: str) -> dict[str, Any]:
    from nemoguardrails.colang.v2_x.lang.parser import parse_colang_file

    result = parse_colang_file(filename, text, include_source_mapping=True)
    calls: list[dict[str, Any]] = []
    intents: dict[str, list[str]] = {}
    names = []
    for flow in result.get("flows", []):
        names.append(flow.name)
        # The first element is the synthetic `match StartFlow(...)` the transformer adds.
        _v2_elements(flow.name, flow.elements[1:], calls)
        who, _, rest = flow.name.partition(" ")
        if who == "user" and rest:
            examples = []
            for element in flow.elements[1:]:
                if type(element).__name__ == "SpecOp":
                    examples.extend(_said(element.spec))
            if examples:
                intents[rest] = examples
    return {"flows": names, "intents": intents, "calls": calls}


def run(item: dict[str, Any]) -> dict[str, Any]:
    text = item["text"] if "text" in item else Path(item["path"]).read_text(encoding="utf-8")
    filename = os.path.basename(item.get("path", item["key"]))
    out: dict[str, Any] = {"key": item["key"], "version": item["version"], "text": text}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIME_LIMIT)
    try:
        found = v1(filename, text) if item["version"] == "1.0" else v2(filename, text)
        out.update(ok=True, **found)
    except TimeLimit:
        out.update(ok=False, error=f"no answer within {TIME_LIMIT} s", line=None)
    except Exception as exc:  # the oracle reports every failure of NeMo's parser as data
        out.update(
            ok=False, error=f"{type(exc).__name__}: {exc}"[:300], line=getattr(exc, "line", None)
        )
    finally:
        signal.alarm(0)
    return out


def main() -> None:
    request = json.load(sys.stdin)
    items = list(request.get("files", []))
    if request.get("shipped"):
        items.extend(shipped_files())
    json.dump([run(item) for item in items], sys.stdout)


if __name__ == "__main__":
    main()
