"""A realistic, reproducible firewall workload: mixed rule sets and a mix of calls.

Tools are named like MCP tools: `srv<i>.<verb>` for most, and `mcp.srv<i>.<verb>` for tools
reached through a gateway. The vocabulary grows with the policy (a policy with ten thousand
rules governs many servers), while the handful of global rules stays a handful, as it does in
practice. Each policy mixes, by share of rules:

- 62% exact tool names, 12% prefixes (`srv3.*`), 10% suffixes (`*.delete_7`), 6% infixes
  (`*.srv3.*`), 10% exact names inside a gateway (`mcp.srv3.exec`);
- 4 global rules (`*`) guarding every call with a clause (a secret-looking string, a huge
  amount);
- about 45% of the rules carry one or two argument clauses: `regex`, `eq`, `in`, `gte`, `cidr`,
  `contains`, `starts_with`, `exists`;
- verdicts `deny`, `require_approval`, `audit`, `allow`, and `sanitize` on 1.5% of the rules
  (redaction walks every string of the arguments, so these decisions cost more: the harness
  reports them apart); priorities shuffled, so first-match order cuts across the index's lists.

Calls come in three kinds, a third each: `early` calls hit a rule that carries no clause or
whose clause they satisfy; `late` calls name a governed tool but satisfy none of its clauses, so
every candidate is tried and the default answers; `none` calls name a tool no rule governs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

VERBS = ["read", "write", "exec", "delete", "send", "list", "export", "fetch", "update", "query"]


@dataclass
class Workload:
    size: int
    policy: dict[str, Any]
    calls: list[dict[str, Any]]
    kinds: list[str]
    clauses: int = 0
    shapes: dict[str, int] = field(default_factory=dict)


def _clause(rng: random.Random, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A clause and arguments that satisfy it."""
    kind = rng.choice(["regex", "eq", "in", "gte", "cidr", "contains", "starts_with", "exists"])
    token = f"t{index}"
    if kind == "regex":
        return (
            {"path": "$.command", "op": "regex", "value": rf"rm\s+-rf\s+/{token}"},
            {"command": f"sudo rm -rf /{token}"},
        )
    if kind == "eq":
        return {"path": "$.env", "op": "eq", "value": f"prod-{token}"}, {"env": f"prod-{token}"}
    if kind == "in":
        return (
            {"path": "$.region", "op": "in", "value": [f"eu-{token}", f"us-{token}"]},
            {"region": f"us-{token}"},
        )
    if kind == "gte":
        return {"path": "$.amount", "op": "gte", "value": 1000 + index}, {"amount": 5000 + index}
    if kind == "cidr":
        octet = index % 250
        return (
            {"path": "$.ip", "op": "cidr", "value": f"10.{octet}.0.0/16"},
            {"ip": f"10.{octet}.3.4"},
        )
    if kind == "contains":
        return {"path": "$.path", "op": "contains", "value": f"/secret-{token}/"}, {
            "path": f"/srv/secret-{token}/key"
        }
    if kind == "starts_with":
        return {"path": "$.query", "op": "starts_with", "value": f"DROP {token}"}, {
            "query": f"DROP {token} CASCADE"
        }
    return {"path": "$.options.force", "op": "exists"}, {"options": {"force": True}}


_GLOBAL_RULES: list[dict[str, Any]] = [
    {
        "name": "global: private key material",
        "tool_name_glob": "*",
        "args_match": [{"path": "$.body", "op": "regex", "value": "-----BEGIN [A-Z ]*PRIVATE KEY"}],
        "verdict": "deny",
    },
    {
        "name": "global: huge amounts",
        "tool_name_glob": "",
        "args_match": [{"path": "$.amount", "op": "gte", "value": 1_000_000}],
        "verdict": "require_approval",
    },
    {
        "name": "global: production writes",
        "tool_name_glob": "*",
        "args_match": [
            {"path": "$.env", "op": "eq", "value": "production"},
            {"path": "$.dry_run", "op": "eq", "value": False},
        ],
        "verdict": "audit",
    },
    {
        "name": "global: metadata in arguments",
        "tool_name_glob": "*",
        "args_match": [{"path": "$.url", "op": "contains", "value": "169.254.169.254"}],
        "verdict": "deny",
    },
]


def build(size: int, *, calls: int = 3000, seed: int = 7) -> Workload:
    """A policy of `size` rules and a shuffled list of calls against it."""
    rng = random.Random(seed * 1_000_003 + size)
    servers = max(4, size // 12)
    verb_variants = max(1, size // 150)

    def verb() -> str:
        return f"{rng.choice(VERBS)}_{rng.randrange(verb_variants)}"

    rules: list[dict[str, Any]] = []
    satisfying: dict[int, dict[str, Any]] = {}
    governed: list[str] = []
    shapes = {"any": 0, "exact": 0, "prefix": 0, "suffix": 0, "infix": 0, "gateway": 0}
    clause_count = 0
    count = max(0, size - len(_GLOBAL_RULES))
    for index in range(count):
        server = f"srv{rng.randrange(servers)}"
        roll = rng.random()
        if roll < 0.62:
            tool = f"{server}.{verb()}"
            glob, shape = tool, "exact"
        elif roll < 0.74:
            tool = f"{server}.{verb()}"
            glob, shape = f"{server}.*", "prefix"
        elif roll < 0.84:
            name = verb()
            tool = f"{server}.{name}"
            glob, shape = f"*.{name}", "suffix"
        elif roll < 0.90:
            tool = f"mcp.{server}.{verb()}"
            glob, shape = f"*.{server}.*", "infix"
        else:
            tool = f"mcp.{server}.{verb()}"
            glob, shape = tool, "gateway"
        shapes[shape] += 1
        rule: dict[str, Any] = {
            "name": f"rule {index}",
            "tool_name_glob": glob,
            "verdict": rng.choice(["deny", "deny", "require_approval", "audit", "allow"]),
        }
        arguments: dict[str, Any] = {}
        if rng.random() < 0.45:
            clause, arguments = _clause(rng, index)
            rule["args_match"] = [clause]
            clause_count += 1
            if rng.random() < 0.25:
                extra, extra_args = _clause(rng, index + 1_000_000)
                if extra["path"] != clause["path"]:
                    rule["args_match"].append(extra)
                    arguments = {**arguments, **extra_args}
                    clause_count += 1
        if rng.random() < 0.015:
            rule["verdict"] = "sanitize"
            rule["sanitize"] = {"presets": ["email", "credit_card"]}
        rules.append(rule)
        satisfying[len(rules) - 1] = {"tool": tool, "arguments": arguments}
        governed.append(tool)
    for rule in _GLOBAL_RULES[: max(0, min(len(_GLOBAL_RULES), size))]:
        rules.append(dict(rule))
        shapes["any"] += 1
        clause_count += len(rule["args_match"])
    priorities = list(range(1, len(rules) + 1))
    rng.shuffle(priorities)
    for rule, priority in zip(rules, priorities, strict=True):
        rule["priority"] = priority * 10
    policy = {"name": f"bench-{size}", "default_verdict": "allow", "rules": rules}

    quiet = {
        "command": "ls -la",
        "env": "staging",
        "region": "ap-1",
        "amount": 12,
        "ip": "192.0.2.1",
        "path": "/tmp/x",
        "query": "SELECT 1",
        "body": "hello",
        "url": "https://example.com/",
    }
    made: list[dict[str, Any]] = []
    kinds: list[str] = []
    candidates = list(satisfying.values())
    for number in range(calls):
        kind = ("early", "late", "none")[number % 3]
        if kind == "early" and candidates:
            target = rng.choice(candidates)
            call = {"tool": target["tool"], "arguments": {**quiet, **target["arguments"]}}
        elif kind == "late" and governed:
            call = {"tool": rng.choice(governed), "arguments": dict(quiet)}
        else:
            call = {
                "tool": f"unknown{rng.randrange(10_000)}.{rng.choice(VERBS)}",
                "arguments": dict(quiet),
            }
        call["stage"] = "tool_call"
        made.append(call)
        kinds.append(kind)
    return Workload(size, policy, made, kinds, clause_count, shapes)


#: The arguments of a call that no broad rule matches (nor any clause of `build`'s rules).
_QUIET_BROAD = {
    "url": "https://example.com/docs/page?q=1",
    "env": "staging",
    "target": {"host": "api.internal", "port": 443},
    "user": "alice",
    "ip": "192.0.2.1",
    "command": "ls -la",
    "amount": 12,
}


def _broad_clause(index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Rule `index`'s one clause (its literals its own) and arguments that satisfy it."""
    kind = index % 5
    if kind == 0:
        return {"path": "$.env", "op": "eq", "value": f"env-{index}"}, {"env": f"env-{index}"}
    if kind == 1:
        host = f"h{index}.corp.example"
        return (
            {"path": "$.target.host", "op": "eq", "value": host},
            {"target": {"host": host, "port": 443}},
        )
    if kind == 2:
        return (
            {"path": "$.url", "op": "regex", "value": rf"^https?://h{index}\.corp\.example/"},
            {"url": f"https://h{index}.corp.example/export"},
        )
    if kind == 3:
        return (
            {"path": "$.user", "op": "in", "value": [f"svc-{index}", f"bot-{index}"]},
            {"user": f"bot-{index}"},
        )
    network = index // 5
    second, third = 16 + network // 256 % 16, network % 256
    return (
        {"path": "$.ip", "op": "cidr", "value": f"172.{second}.{third}.0/24"},
        {"ip": f"172.{second}.{third}.9"},
    )


def build_broad(size: int, share: float, *, calls: int = 3000, seed: int = 11) -> Workload:
    """`build`'s policy with `share` of its rules broad: glob `*`, one argument clause each.

    The broad clauses are `eq` on a top-level or a nested path, an RE2 regex, `in` over a list
    and a CIDR, every rule with literals of its own; a third of the broad rules are restricted
    by skill. Calls, by kind: `nothing` (70%) names a tool no rule governs, with arguments no
    clause matches, so the default answers; `governed` (15%) names a governed tool with the
    same arguments; `broad` (15%) satisfies one broad rule (and its skill, if it has one).
    """
    rng = random.Random(seed * 1_000_003 + size + int(share * 1000))
    broad = round(size * share)
    base = build(size - broad, calls=0, seed=seed)
    rules = base.policy["rules"]
    satisfying: list[dict[str, Any]] = []
    for number in range(broad):
        clause, arguments = _broad_clause(number)
        rule: dict[str, Any] = {
            "name": f"broad {number}",
            "tool_name_glob": "*",
            "args_match": [clause],
            "verdict": rng.choice(["deny", "deny", "require_approval", "audit"]),
        }
        call: dict[str, Any] = {"arguments": {**_QUIET_BROAD, **arguments}}
        if number % 3 == 0:
            rule["skill_glob"] = f"team{number % 7}.*"
            call["skill"] = f"team{number % 7}.tools"
        rules.append(rule)
        satisfying.append(call)
    priorities = list(range(1, len(rules) + 1))
    rng.shuffle(priorities)
    for rule, priority in zip(rules, priorities, strict=True):
        rule["priority"] = priority * 10
    policy = {"name": f"broad-{share:.0%}-{size}", "default_verdict": "allow", "rules": rules}
    governed = [r["tool_name_glob"] for r in rules if "*" not in r["tool_name_glob"]]
    made: list[dict[str, Any]] = []
    kinds: list[str] = []
    for _ in range(calls):
        roll = rng.random()
        if roll < 0.15 and satisfying:
            target = rng.choice(satisfying)
            call = {"tool": f"unknown{rng.randrange(10_000)}.{rng.choice(VERBS)}", **target}
            kind = "broad"
        elif roll < 0.30 and governed:
            call = {"tool": rng.choice(governed), "arguments": dict(_QUIET_BROAD)}
            kind = "governed"
        else:
            call = {
                "tool": f"unknown{rng.randrange(10_000)}.{rng.choice(VERBS)}",
                "arguments": dict(_QUIET_BROAD),
            }
            if rng.random() < 0.5:
                call["skill"] = f"team{rng.randrange(7)}.tools"
            kind = "nothing"
        call["arguments"] = {**call["arguments"]}
        call["stage"] = "tool_call"
        made.append(call)
        kinds.append(kind)
    shapes = {**base.shapes, "broad": broad}
    return Workload(size, policy, made, kinds, base.clauses + broad, shapes)
