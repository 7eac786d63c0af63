"""Agent files to prove, of a chosen size: a front desk that hands off to specialists.

Each specialist is what a shop's back office looks like: a model (most of them, under a budget or
not), a lookup and a listing, an update that must follow the lookup of the same record and has an
undo, a notification that follows the update and cannot be undone, a limited `close`, and, on every
third desk, an inbox read from outside. A Colang rulebook governs each update with a fact read
from the lookup. The front desk has a model and hands off to every specialist; a session may also
start at any specialist. `desks(n)` returns agent.yaml's text and the rulebook's, sized so the
graph has about `n` nodes.
"""

from __future__ import annotations

PARAMS = "{type: object, properties: {id: {type: string}}, required: [id]}"


def _tools(i: int, small: bool) -> tuple[list[str], str]:
    names = [f"get_{i}", f"update_{i}", f"notify_{i}"]
    text = f"""\
  - name: get_{i}
    kind: read
    parameters: {PARAMS}
    result_schema: {{type: object}}
    idempotent: true
  - name: update_{i}
    kind: write
    parameters: {PARAMS}
    after: [{{tool: get_{i}, bind: {{id: id}}}}]
    compensation: {{tool: undo_{i}, bind: {{id: arguments.id}}}}
    idempotent: true
    result_schema: {{type: object}}
  - name: notify_{i}
    kind: sends_out
    parameters: {PARAMS}
    after: [{{tool: update_{i}, bind: {{id: arguments.id}}}}]
    irreversible: true
    idempotent: true
    result_schema: {{type: object}}
  - name: undo_{i}
    kind: write
    parameters: {PARAMS}
    idempotent: true
    result_schema: {{type: object}}
"""
    if small:
        return names, text
    names += [f"list_{i}", f"undo_{i}", f"close_{i}"]
    text += f"""\
  - name: list_{i}
    kind: read
    parameters: {{type: object, properties: {{page: {{type: integer}}}}}}
    result_schema: {{type: object}}
    idempotent: true
  - name: close_{i}
    kind: write
    parameters: {PARAMS}
    at_most: 3
    irreversible: true
    idempotent: true
    result_schema: {{type: object}}
"""
    if i % 3 == 0:
        names.append(f"inbox_{i}")
        text += f"""\
  - name: inbox_{i}
    kind: read
    parameters: {{type: object, properties: {{limit: {{type: integer}}}}}}
    reads_outside: [web]
    result_schema: {{type: object}}
    idempotent: true
"""
    return names, text


def desks(nodes: int) -> tuple[str, dict[str, str], int]:
    """(agent.yaml text, {rulebook file: text}, number of specialists) for about `nodes` nodes."""
    small = nodes <= 15
    specialists = 1 if small else max(1, round((nodes - 4) / 24))
    agents = ["agents:"]
    tools = ["tools:"]
    facts = ["facts:"]
    policy = ["# One flow per specialist: an update runs only for a record that is ok."]
    budgets = []
    if not small:
        agents += [
            "  front:",
            '    model: "test:scripted"',
            "    tools: []",
            f"    hands_off_to: [{', '.join(f'desk_{i}' for i in range(specialists))}]",
        ]
    for i in range(specialists):
        names, text = _tools(i, small)
        agents += [f"  desk_{i}:"]
        if small or i % 4 != 3:
            agents.append('    model: "test:scripted"')
            if i % 2 == 0:
                budgets.append(f"    desk_{i}: 40")
        agents.append(f"    privilege: {('normal', 'high', 'low')[i % 3]}")
        agents.append(f"    tools: [{', '.join(names)}]")
        tools.append(text.rstrip("\n"))
        facts.append(f"  ok_{i}: {{from: get_{i}.status == ok, same: id}}")
        policy += [
            "",
            f"define user ask update {i}",
            f'  "update record {i}"',
            "",
            f"define flow updates {i}",
            f"  user ask update {i}",
            f"  if $ok_{i}",
            f"    execute update_{i}",
            "  else",
            "    bot refuse",
        ]
    text = "\n".join(agents + tools + facts) + "\n"
    if budgets:
        text += "budget:\n  agents:\n" + "\n".join(budgets) + "\n"
    text += "rulebook: policy.co\n"
    return text, {"policy.co": "\n".join(policy) + "\n"}, specialists
