"""The hunt: a proof's answers and the rulebook's and catalogue's own rules, turned into findings.

`hunt(result)` walks the rules of the registry. A question answered `reachable` is a finding of
its rule, with the witness the search found; QG013 is the one rule whose finding is an
*unreachable* answer (the undoable write cannot be reached without the irreversible one before
it) while the write itself is reachable. Rules that read the rulebook, the catalogue's peers or
the declarations raise a finding on what they read, and, where a tool is involved, only when a
route can reach that tool's check (with that route as the witness). Undecided questions and the
region reached only beyond the bounds are QG006 findings; disagreements of the engines, QG312.

It also says which rules had nothing to read, with the sentence the registry gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .advisories import SHIPPED, Advisory
from .findings import Finding
from .graphdoc import Graph
from .model import REACHABLE, UNDECIDED, UNREACHABLE
from .prove import RECURSION_LIMIT, ProofResult, WitnessStep
from .questions import argument_kinds, unbound_guards
from .rulebook_rules import (
    RulebookFinding,
    advised,
    compile_errors,
    dead_actions,
    escapable,
    permissive,
    read_before_written,
    undefined_messages,
    unknown_tools,
    without_execute,
)
from .rules import BY_ID, rule

PRIVILEGE_WORD = {0: "low", 1: "normal", 2: "high"}


@dataclass
class HuntResult:
    findings: list[Finding]
    nothing_to_read: list[tuple[str, str]]


def _where_of(witness: Sequence[WitnessStep]) -> str | None:
    return witness[-1].at if witness else None


def _finding(rule_id: str, subject: str, where, said: str, witness=(), status=REACHABLE, **fix):
    info = rule(rule_id)
    values = {"subject": subject, **{k: str(v) for k, v in fix.items()}}
    return Finding(
        rule=rule_id,
        subject=subject,
        where=where,
        message=said,
        fix=info.fix_for(**values),
        witness=tuple(witness),
        status=status,
    )


def _agent_where(graph: Graph, agent: str | None) -> str | None:
    """Where an agent was written: its router's place."""
    routers = graph.find("router", agent) if agent else []
    return str(routers[0].at[0]) if routers and routers[0].at else None


def _node_or_agent_where(graph: Graph, node) -> str | None:
    """A node's place, else (a team's step written without one) its agent's."""
    return str(node.at[0]) if node.at else _agent_where(graph, node.agent)


def _node_where(graph: Graph, node_id: str) -> str | None:
    node = graph.nodes[graph.by_id[node_id]]
    return str(node.at[0]) if node.at else None


def _route_findings(result: ProofResult) -> list[Finding]:
    graph = result.graph
    out: list[Finding] = []
    for index, obligation in enumerate(result.model.obligations):
        answer = result.answers[index]
        if obligation.rule in ("reach", "QG013") or answer.status != REACHABLE:
            continue
        witness = result.witnesses.get(index, [])
        data = obligation.data
        tool = obligation.subject
        where = _where_of(witness)
        if where is None:
            edge = graph.edges[obligation.targets[0][0]]
            where = _node_or_agent_where(graph, graph.nodes[edge.target])
        message = _message(obligation.rule, tool, data, witness, graph)
        out.append(
            _finding(
                obligation.rule,
                tool,
                where,
                message,
                witness,
                tool=tool,
                agent=data.get("agent", ""),
                argument=data.get("argument", ""),
                node=data.get("node", tool),
                source=data.get("source", ""),
                store=data.get("store", ""),
            )
        )
    return out


def _message(rule_id: str, tool: str, data: Mapping, witness, graph: Graph) -> str:
    last_from = witness[-2].node if len(witness) >= 2 else "?"
    if rule_id == "QG001":
        return f"'{tool}' runs without its check: the step '{last_from}' reaches it directly"
    if rule_id == "QG002":
        on = witness[-1].on if witness else "?"
        return (
            f"the check of '{tool}' can be walked around: from '{last_from}', the edge on "
            f"`{on}` runs the tool"
        )
    if rule_id == "QG003":
        return (
            f"the guard of '{tool}' ({data['how']}) reads '{data['source']}' without binding "
            f"`{data['argument']}`: a '{data['source']}' of an earlier turn, for another "
            f"`{data['argument']}`, lets '{tool}' run"
        )
    if rule_id == "QG011":
        agent = graph.catalogue.agents[data["agent"]]
        return (
            f"'{data['agent']}' (privilege {agent.privilege}) runs '{tool}' without a person's "
            "yes in a turn that an agent of lower privilege handed off"
        )
    if rule_id == "QG012":
        labels = ", ".join(data.get("labels", []))
        return (
            f"after reading from outside ({labels}), the write '{tool}', chosen by the model, "
            "runs without a person's yes"
        )
    if rule_id == "QG014":
        entry = graph.catalogue.tools[tool]
        rules = [r.text for r in entry.after] + [r.text for r in entry.not_after]
        if entry.at_most is not None:
            rules.append(f"at_most {entry.at_most}")
        return f"a route runs '{tool}' with one of its order rules broken ({', '.join(rules)})"
    if rule_id == "QG015":
        return f"the edge {tool} is not declared: {data['reason']}"
    if rule_id == "QG016":
        return (
            f"the step '{tool}' declares no routes, so it may go anywhere, including to a tool "
            "without its check"
        )
    if rule_id == "QG017":
        return (
            f"a call of '{tool}' chosen by the model, with code in `{data['argument']}`, runs "
            "without a person's yes"
        )
    if rule_id == "QG018":
        return (
            f"a call of '{tool}' chosen by the model, with a query or a destination in "
            f"`{data['argument']}`, runs without a person's yes"
        )
    if rule_id == "QG019":
        return (
            f"after the confidential '{data['source']}' ran, '{tool}' sends something out, "
            "chosen by the model, without a person's yes"
        )
    if rule_id == "QG020":
        return (
            f"'{tool}' reads the multi-tenant store '{data['store']}' and is not bound to the "
            "user: the call names whose data it reads"
        )
    if rule_id == "QG021":
        readers = data.get("readers") or []
        who = (
            "nothing declares who reads it back"
            if not readers
            else ", ".join(f"'{r}'" for r in readers) + " read it back without `reads_outside`"
        )
        return (
            f"'{tool}' writes the persistent store '{data['store']}' after content from outside "
            f"was read, and {who}"
        )
    if rule_id == "QG101":
        return (
            f"the write '{tool}' has no rule of its own, and a model can choose it: only a "
            "person's yes stands in its way"
        )
    if rule_id == "QG105":
        return (
            f"the write '{tool}' has no compensation, is not irreversible, and runs on a path "
            "with another write"
        )
    return f"'{tool}' breaks {rule_id}"


def _irreversible_first(result: ProofResult) -> list[Finding]:
    out: list[Finding] = []
    for index, obligation in enumerate(result.model.obligations):
        if obligation.rule != "QG013" or result.answers[index].status != UNREACHABLE:
            continue
        reach = result.answer(f"reach:tool:{obligation.subject}")
        if reach is None or reach.status != REACHABLE:
            continue
        witness = result.witness(f"reach:tool:{obligation.subject}")
        tool, other = obligation.subject, obligation.data["irreversible"]
        out.append(
            _finding(
                "QG013",
                tool,
                _where_of(witness),
                f"'{tool}' has an undo, but every route runs the irreversible '{other}' before "
                f"it, so when '{tool}' fails, the run's undo leaves '{other}' done",
                witness,
                tool=tool,
                irreversible=other,
            )
        )
    return out


def _cycles(result: ProofResult) -> list[Finding]:
    out: list[Finding] = []
    graph = result.graph
    for index, question in enumerate(result.model.cycles):
        if result.cycle_answers[index].status != REACHABLE:
            continue
        agent = question.data.get("agent")
        where = _agent_where(graph, agent)
        node = question.data["node"]
        out.append(
            _finding(
                "QG023",
                question.subject,
                where,
                f"the cycle through '{node}' calls the model or a tool, and nothing declares a "
                f"budget: the framework's recursion limit of {RECURSION_LIMIT} is the run's only "
                "ceiling",
                result.cycle_witnesses.get(index, []),
                agent=agent or "",
            )
        )
    return out


def _reachable_check(result: ProofResult, tool: str | None):
    """(reachable, witness) of a tool's check; (True, []) when no tool is involved."""
    if tool is None:
        return True, []
    answer = result.answer(f"reach:check:{tool}")
    if answer is None or answer.status != REACHABLE:
        return False, []
    return True, result.witness(f"reach:check:{tool}")


def _rulebook(result: ProofResult, advisories: Sequence[Advisory]) -> list[Finding]:
    graph = result.graph
    found: list[RulebookFinding] = [
        *compile_errors(graph),
        *unknown_tools(graph),
        *escapable(graph),
        *permissive(graph),
        *read_before_written(graph),
        *without_execute(graph),
        *undefined_messages(graph),
        *dead_actions(graph),
        *advised(graph, advisories),
    ]
    file = graph.rulebook.file if graph.rulebook else "rulebook"
    out: list[Finding] = []
    for item in found:
        reachable, witness = _reachable_check(result, item.tool)
        if not reachable:
            continue
        where = f"{file}:{item.line}" if item.line is not None else file
        out.append(
            _finding(item.rule, item.subject, where, item.message, witness, **dict(item.fix_values))
        )
    return out


def _features(graph: Graph, tool: str) -> set[str]:
    entry = graph.catalogue.tools[tool]
    features = {f"`after: {r.tool}`" for r in entry.after}
    features |= {f"`not_after: {r.tool}`" for r in entry.not_after}
    if entry.at_most is not None:
        features.add("`at_most`")
    features |= {f"the check `{item.describe}`" for item in entry.checks}
    record = graph.record
    if record is not None and tool in (record.get("tools") or {}):
        features.add("a rulebook rule")
    return features


def _peers(result: ProofResult) -> list[Finding]:
    graph = result.graph
    catalogue = graph.catalogue
    signature: dict[str, tuple[str, frozenset[str]]] = {}
    for name, tool in catalogue.tools.items():
        required = (tool.parameters or {}).get("required") or []
        if required:
            signature[name] = (tool.kind, frozenset(str(r) for r in required))
    out: list[Finding] = []
    for name, sig in sorted(signature.items()):
        if not catalogue.tools[name].is_write:
            continue
        peers = sorted(n for n, s in signature.items() if s == sig and n != name)
        if len(peers) < 2:
            continue
        mine = _features(graph, name)
        counts: dict[str, int] = {}
        for peer in peers:
            for feature in _features(graph, peer):
                counts[feature] = counts.get(feature, 0) + 1
        missing = sorted(
            f for f, n in counts.items() if f not in mine and n >= 2 and 3 * n >= 2 * len(peers)
        )
        if not missing:
            continue
        reachable, witness = _reachable_check(result, name)
        if not reachable:
            continue
        feature = missing[0]
        out.append(
            _finding(
                "QG104",
                name,
                _where_of(witness),
                f"'{name}' lacks {feature}, which {counts[feature]} of its {len(peers)} peers "
                f"({', '.join(peers)}) have",
                witness,
                tool=name,
                feature=feature,
            )
        )
    return out


def _declared(result: ProofResult) -> list[Finding]:
    graph = result.graph
    out: list[Finding] = []
    for name, decl in sorted(graph.declarations.tools.items()):
        origin = decl.get("source") or decl.get("server")
        if not origin or decl.get("pin"):
            continue
        answer = result.answer(f"reach:tool:{name}")
        if answer is None or answer.status != REACHABLE:
            continue
        witness = result.witness(f"reach:tool:{name}")
        out.append(
            _finding(
                "QG106",
                name,
                _where_of(witness),
                f"'{name}' comes from `{origin}` and is not pinned, so what runs may not be what "
                "was proved",
                witness,
            )
        )
    for module in graph.declarations.modules:
        if module.get("pin"):
            continue
        out.append(
            _finding(
                "QG106",
                module["name"],
                None,
                f"the module '{module['name']}' is not pinned, so what runs may not be what was "
                "proved",
            )
        )
    for agent, decl in sorted(graph.declarations.agents.items()):
        channel = decl["channel"]
        if channel.get("auth", "none") != "none":
            continue
        where = _agent_where(graph, agent)
        out.append(
            _finding(
                "QG107",
                agent,
                where,
                f"agent '{agent}' takes turns from `{channel['url']}` with no authentication: "
                "anyone who reaches it speaks as the person",
                agent=agent,
            )
        )
    return out


def _unverified(result: ProofResult) -> list[Finding]:
    out: list[Finding] = []
    undecided: dict[str, list[str]] = {}
    for index, obligation in enumerate(result.model.obligations):
        if result.answers[index].status == UNDECIDED and obligation.rule != "reach":
            undecided.setdefault(obligation.rule, []).append(obligation.subject)
    for index, question in enumerate(result.model.cycles):
        if result.cycle_answers[index].status == UNDECIDED:
            undecided.setdefault("QG023", []).append(question.subject)
    budget = result.stats.get("max_states")
    for rule_id, subjects in sorted(undecided.items()):
        shown = ", ".join(sorted(set(subjects))[:5])
        out.append(
            _finding(
                "QG006",
                rule_id,
                None,
                f"{len(subjects)} question(s) of {rule_id} are undecided ({shown}): the search "
                f"stopped at its budget of {budget} states, so they are not proved either way",
                status=UNDECIDED,
            )
        )
    if result.cut:
        first = result.cut[0]
        shown = ", ".join(result.cut[:5])
        out.append(
            _finding(
                "QG006",
                first,
                _node_where(result.graph, first),
                f"{len(result.cut)} step(s) ({shown}) are reached only beyond the step limit of "
                f"{result.depth} or after {result.turns} turn(s): nothing is proved about them",
                status=UNDECIDED,
            )
        )
    return out


def _disagreements(result: ProofResult) -> list[Finding]:
    def said(answer) -> str:
        if answer.status == REACHABLE and answer.turn is not None:
            return f"reachable at turn {answer.turn}, step {answer.step}"
        return answer.status

    return [
        _finding(
            "QG312",
            item.subject,
            None,
            f"the engines disagree on {item.key}: the explicit-state search says "
            f"{said(item.search)}, the fixpoint says {said(item.fixpoint)}",
        )
        for item in result.disagreements
    ]


def nothing_to_read(graph: Graph) -> list[tuple[str, str]]:
    """(rule, sentence) for each rule whose input this graph does not have."""
    catalogue = graph.catalogue
    record = graph.record
    tools = catalogue.tools.values()
    empty: dict[str, bool] = {}
    reads_earlier = bool(catalogue.facts) or any(
        t.after or any(hasattr(i.value, "tool") for i in t.checks) for t in tools
    )
    empty["QG003"] = not reads_earlier and not unbound_guards(graph)
    rulebook_rules = ("QG004", "QG005", "QG007", "QG008", "QG010", "QG022")
    for rule_id in rulebook_rules:
        empty[rule_id] = graph.rulebook is None
    says_messages = record is not None and record.get("format") == "colang-1.0"
    empty["QG009"] = not says_messages and (graph.rulebook is None or record is not None)
    empty["QG011"] = not any(a.hands_off_to for a in catalogue.agents.values())
    empty["QG012"] = not catalogue.outside_tools
    empty["QG013"] = not any(t.irreversible for t in tools) or not any(
        t.is_write and t.compensation for t in tools
    )
    empty["QG014"] = not any(t.after or t.not_after or t.at_most is not None for t in tools)
    kinds = argument_kinds(graph)
    family = {k for args in kinds.values() for k in args.values()}
    empty["QG017"] = not family & {"code", "shell"}
    empty["QG018"] = not family & {"sql", "query", "path", "url", "template"}
    decls = graph.declarations
    empty["QG019"] = not any(d.get("confidential") for d in decls.tools.values())
    empty["QG020"] = not any(
        decls.stores.get(d.get("reads_store", ""), {}).get("multi_tenant")
        for d in decls.tools.values()
    )
    empty["QG021"] = not any(
        decls.stores.get(d.get("writes_store", ""), {}).get("persistent")
        for d in decls.tools.values()
    )
    writes = any(t.is_write for t in tools)
    for rule_id in ("QG101", "QG104", "QG105"):
        empty[rule_id] = not writes
    empty["QG106"] = not decls.modules and not any(
        d.get("source") or d.get("server") for d in decls.tools.values()
    )
    empty["QG107"] = not decls.agents
    out = []
    for rule_id, is_empty in empty.items():
        if is_empty and BY_ID[rule_id].nothing_to_read:
            sentence = BY_ID[rule_id].nothing_to_read
            out.append((rule_id, sentence))
    if graph.rulebook is not None and graph.record is None:
        reason = "the rulebook did not compile (see QG005)"
        for rule_id in ("QG004", "QG007", "QG008", "QG009", "QG010", "QG022"):
            out.append((rule_id, reason))
    return sorted(out)


def hunt(result: ProofResult, advisories: Sequence[Advisory] = SHIPPED) -> HuntResult:
    """Every finding of a proof and what had nothing to read (see the module docstring)."""
    findings = [
        *_route_findings(result),
        *_irreversible_first(result),
        *_cycles(result),
        *_rulebook(result, advisories),
        *_peers(result),
        *_declared(result),
        *_unverified(result),
        *_disagreements(result),
    ]
    unique: dict[tuple[str, str, str | None, str], Finding] = {}
    for finding in findings:
        unique.setdefault((finding.rule, finding.subject, finding.where, finding.message), finding)
    ordered = sorted(unique.values(), key=lambda f: f.sort_key())
    return HuntResult(ordered, nothing_to_read(result.graph))
