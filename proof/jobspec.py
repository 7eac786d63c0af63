"""A graph-proof job's input: read strictly, and turned into the one document the engine proves.

A job is `{"graph", "catalogue", "rulebook", "session_steps", "turns", "name"}`: the agents'
`qls-graph/1` document (what `Agent.export()` returns), the catalogue the tool check runs with
(what `Agent.catalogue()` returns), the rulebook (a compiled record, or Colang text), the run's
step limit the proof holds to (its depth), the number of turns, and a label. Only `graph` is
required.

The console (`proof.services`) and the SDK's in-process `Client().verify_graph` both read a job
here, so the two answer alike. Pure Python: no Django, so the SDK can import it.

The document proved is the graph with the given catalogue and rulebook put in place of its own:
the proof is then of the catalogue and the rules the runtime enforces, and a graph whose check
edges claim a condition that catalogue does not enforce is refused. The facts the graph's own
catalogue declares are kept when the catalogue given says nothing of facts (`Agent.catalogue()`
leaves them out: the agent reads them itself, and the proof still has to know them).

Every problem is collected, each under its field path (`graph.edges[3].when[0]`,
`catalogue.tools[1].kind`, `session_steps`), in one `JobInvalid`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from proof.engine import DEFAULT_DEPTH, DEFAULT_TURNS, GraphInvalid, load_graph
from rulebooks.compiler import (
    RulebookError,
    RulebookUnsupported,
    compile_source,
    record_problems,
)

FIELDS = ("graph", "catalogue", "rulebook", "session_steps", "turns", "name")
MAX_SESSION_STEPS = 1000
MAX_TURNS = 20
MAX_NAME = 200
#: The file name a rulebook given as text is compiled as, when the graph names none.
DEFAULT_RULEBOOK_FILE = "policy.co"


class JobInvalid(Exception):
    """A job that cannot be proved: every problem, by field path."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors: dict[str, list[str]] = {k: list(v) for k, v in errors.items()}
        super().__init__(
            "; ".join(f"{path}: {m}" for path, ms in self.errors.items() for m in ms)
            or "the job is not valid"
        )


@dataclass(frozen=True)
class JobSpec:
    """A job's input, read: what a `ProofJob` row keeps and what the worker proves."""

    graph: dict[str, Any]
    catalogue: dict[str, Any] | None = None
    rulebook: dict[str, Any] | str | None = None
    session_steps: int = DEFAULT_DEPTH
    turns: int = DEFAULT_TURNS
    name: str = ""


def _count(value: Any, field: str, default: int, top: int, errors: dict[str, list[str]]) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        errors.setdefault(field, []).append("must be a whole number")
        return default
    if not 1 <= value <= top:
        errors.setdefault(field, []).append(f"must be from 1 to {top}")
        return default
    return value


def read_job(body: Any) -> JobSpec:
    """Read a job's fields strictly (unknown fields refused); raise `JobInvalid`."""
    if not isinstance(body, Mapping):
        raise JobInvalid({"non_field_errors": ["the body must be a JSON object"]})
    errors: dict[str, list[str]] = {}
    for key in sorted(set(body) - set(FIELDS), key=str):
        errors[str(key)] = ["not a field here"]
    graph = body.get("graph")
    if "graph" not in body or graph is None:
        errors["graph"] = ["this field is required: a `qls-graph/1` document"]
    elif not isinstance(graph, Mapping):
        errors["graph"] = ["must be a `qls-graph/1` document (a JSON object)"]
    catalogue = body.get("catalogue")
    if catalogue is not None and not isinstance(catalogue, Mapping):
        errors["catalogue"] = ["must be a catalogue (a JSON object with `agents` and `tools`)"]
    rulebook = body.get("rulebook")
    if rulebook is not None and not isinstance(rulebook, Mapping | str):
        errors["rulebook"] = ["must be a compiled record (a JSON object) or a rulebook's text"]
    steps = _count(
        body.get("session_steps"), "session_steps", DEFAULT_DEPTH, MAX_SESSION_STEPS, errors
    )
    turns = _count(body.get("turns"), "turns", DEFAULT_TURNS, MAX_TURNS, errors)
    name = body.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME):
        errors["name"] = [f"must be a text of at most {MAX_NAME} characters"]
        name = None
    if errors:
        raise JobInvalid(errors)
    assert isinstance(graph, Mapping)
    label = name or (graph.get("name") if isinstance(graph.get("name"), str) else None) or "graph"
    return JobSpec(
        graph=dict(graph),
        catalogue=dict(catalogue) if catalogue is not None else None,
        rulebook=dict(rulebook) if isinstance(rulebook, Mapping) else rulebook,
        session_steps=steps,
        turns=turns,
        name=label[:MAX_NAME],
    )


def _field_path(path: str, spec: JobSpec) -> str:
    """An engine problem's JSON path (`$.edges[3]`) as the job's field path (`graph.edges[3]`)."""
    rest = path[1:] if path.startswith("$") else f".{path}"
    if spec.catalogue is not None and (rest == ".catalogue" or rest.startswith(".catalogue.")):
        return "catalogue" + rest[len(".catalogue") :]
    if spec.rulebook is not None and (rest == ".rulebook" or rest.startswith(".rulebook.")):
        return "rulebook"
    return "graph" + rest


#: How a job's Colang text becomes a record: `compile_source(data, filename=...)`, or the
#: console's `rulebooks.budget.compile_within_budget` (a child under a time and memory budget).
Compile = Callable[..., dict[str, Any]]


def _rulebook_entry(
    spec: JobSpec, errors: dict[str, list[str]], compile_rulebook: Compile
) -> dict[str, Any] | None:
    own = spec.graph.get("rulebook")
    file = own.get("file") if isinstance(own, Mapping) else None
    file = file if isinstance(file, str) and file else DEFAULT_RULEBOOK_FILE
    if isinstance(spec.rulebook, Mapping):
        problems = record_problems(spec.rulebook)
        if problems:
            errors["rulebook"] = problems
            return None
        return {"file": file, "record": dict(spec.rulebook), "errors": []}
    assert isinstance(spec.rulebook, str)
    try:
        record = compile_rulebook(spec.rulebook.encode("utf-8"), filename=file)
    except RulebookUnsupported as error:
        errors["rulebook"] = [str(e) for e in error.errors]
        return None
    except RulebookError as error:  # the console's budget refusal among them (`rulebook_too_large`)
        errors["rulebook"] = [f"{error.code}: {error}"]
        return None
    return {"file": file, "record": record, "errors": []}


def job_document(spec: JobSpec, *, compile_rulebook: Compile = compile_source) -> dict[str, Any]:
    """The document the job proves (see the module docstring); validated here, so a job that
    would not load is refused when it is submitted, not when a worker takes it. The console
    passes `compile_rulebook` to compile Colang text under its budget."""
    doc = dict(spec.graph)
    errors: dict[str, list[str]] = {}
    if spec.catalogue is not None:
        catalogue = dict(spec.catalogue)
        own = doc.get("catalogue")
        if "facts" not in catalogue and isinstance(own, Mapping) and "facts" in own:
            catalogue["facts"] = own["facts"]
        doc["catalogue"] = catalogue
    if spec.rulebook is not None:
        entry = _rulebook_entry(spec, errors, compile_rulebook)
        if entry is not None:
            doc["rulebook"] = entry
    if errors:
        raise JobInvalid(errors)
    try:
        load_graph(doc)
    except GraphInvalid as error:
        for problem in error.problems:
            errors.setdefault(_field_path(problem.path, spec), []).append(problem.message)
        raise JobInvalid(errors) from None
    return doc


def spec_of(
    graph: Mapping[str, Any],
    *,
    catalogue: Mapping[str, Any] | None = None,
    rulebook: Mapping[str, Any] | str | None = None,
    session_steps: int | None = None,
    turns: int | None = None,
    name: str | None = None,
) -> JobSpec:
    """A job's input from keyword arguments (the SDK's), read as strictly as a request body."""
    return read_job(
        job_body(
            graph,
            catalogue=catalogue,
            rulebook=rulebook,
            session_steps=session_steps,
            turns=turns,
            name=name,
        )
    )


def job_body(
    graph: Mapping[str, Any],
    *,
    catalogue: Mapping[str, Any] | None = None,
    rulebook: Mapping[str, Any] | str | None = None,
    session_steps: int | None = None,
    turns: int | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The body of `POST /v1/proofs` from keyword arguments: the ones given, and the graph."""
    body: dict[str, Any] = {"graph": graph}
    for key, value in (
        ("catalogue", catalogue),
        ("rulebook", rulebook),
        ("session_steps", session_steps),
        ("turns", turns),
        ("name", name),
    ):
        if value is not None:
            body[key] = value
    return body
