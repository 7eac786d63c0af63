"""The catalogue: agents and tools as plain data, loaded strictly into what the tool check reads.

A catalogue is a mapping (JSON, or what `agent_yaml.load_agent_yaml` makes of an agent.yaml):

    {"agents": {"desk": {"tools": ["get_order"], "hands_off_to": ["billing"], "model": "p:m",
                         "on_unread": "refuse", "privilege": "normal"}},
     "tools": [{"name": "get_order", "description": "...", "kind": "read",
                "parameters": {JSON Schema 2020-12}, "result_schema": {...},
                "after": ["get_order", {"tool": "get_order", "bind": {"order_id": "order_id"}}],
                "not_after": [...], "at_most": 2,
                "compensation": {"tool": "refund_card", "bind": {"amount": "arguments.amount"}},
                "irreversible": false, "idempotent": false, "checks": [...],
                "reads_outside": ["email"], "requires_trust": "internal", "withdrawn": false,
                "secret": ["card_number"], "fetches": ["url"], "cost": 5,
                "confidential": false, "reads_store": "docs", "writes_store": null,
                "bound_to_user": true, "source": "shop-tools", "server": null,
                "pin": "1.4.2"}],
     "facts": {"order_paid": {"from": "get_order.status == paid", "same": "order_id"}},
     "stores": {"docs": {"persistent": true, "multi_tenant": true}}}

An agent may add `channel: {url, auth}`, the remote channel its turns come in on. The marks
`confidential`, `reads_store`, `writes_store`, `bound_to_user`, `source`, `server` and `pin`, the
`stores:` they name and an agent's `channel` change nothing the check decides: they are what the
proof reads (QG019-QG021, QG106, QG107), loaded here so that the proof and the runtime read one
declaration. So is `Tool.argument_kinds`: what each argument's schema says it holds (`format:
sql`, ...; `marks.declared_kind`).

Order rules (`after`, `not_after`) name a tool, or `{tool, bind}` where `bind` maps an argument of
this call to a source in the earlier call (`result.<field>`, `arguments.<field>`, or a bare field
meaning `result.<field>`, see `refs`): `after: [{tool: get_order, bind: {order_id: order_id}}]`
holds only once a `get_order` ran whose result's `order_id` equals this call's `order_id`. `at_most:
N` allows N calls of the tool in the session. A compensation names the undo tool and binds each of
the undo's arguments to a source in the call it undoes.

An argument's schema may carry `"free_text": true` (the model is expected to write it); a read may
list `fetches` (the arguments that are addresses it fetches); `cost` is what one call costs the run,
in cents, or `{argument: <name>}`. `marks.py` says how each is read and what it changes.

Loading collects every issue at once, each naming its path (`tools[2].parameters: ...`), and raises
`CatalogueInvalid`; nothing half-loaded is returned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from .errors import CatalogueInvalid, Issue
from .kinds import KINDS, is_write, parse_tool_kinds, resolve_kind
from .marks import Cost, argument_kinds, free_text_arguments, parse_cost, parse_fetches
from .patterns import pattern_issues
from .refs import parse_source
from .schema import ArgumentSchema, compile_parameters, declared_names
from .taint import TRUST_LEVELS
from .tool_checks import CheckItem, parse_checks

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
ON_UNREAD = ("refuse", "model", "ask", "answer")
PRIVILEGES = ("low", "normal", "high")
CATALOGUE_KEYS = frozenset({"agents", "tools", "facts", "tool_kinds", "stores"})
AGENT_KEYS = frozenset(
    {"tools", "privilege", "hands_off_to", "model", "on_unread", "description", "channel"}
)
#: How a remote channel of an agent authenticates who speaks on it (`none`: nobody is asked).
CHANNEL_AUTH = ("none", "token", "mtls", "oauth", "basic")
STORE_KEYS = frozenset({"persistent", "multi_tenant", "description"})
TOOL_KEYS = frozenset(
    {
        "name",
        "description",
        "kind",
        "parameters",
        "result_schema",
        "after",
        "not_after",
        "at_most",
        "compensation",
        "irreversible",
        "idempotent",
        "checks",
        "reads_outside",
        "requires_trust",
        "withdrawn",
        "secret",
        "undo",
        "fetches",
        "cost",
        "confidential",
        "reads_store",
        "writes_store",
        "bound_to_user",
        "source",
        "server",
        "pin",
    }
)


@dataclass(frozen=True)
class Binding:
    """An argument of the checked call bound to a source in an earlier call."""

    argument: str
    source: tuple[str, ...]


@dataclass(frozen=True)
class OrderRule:
    """`after` / `not_after` one tool, optionally bound to values of that tool's call."""

    relation: str  # after, not_after
    tool: str
    bind: tuple[Binding, ...] = ()

    @property
    def text(self) -> str:
        """How a refusal names the rule: `after get_order`."""
        return f"{self.relation} {self.tool}"


@dataclass(frozen=True)
class Compensation:
    """The undo of a tool: which tool undoes it and where each of its arguments comes from."""

    tool: str
    bind: tuple[Binding, ...] = ()


@dataclass(frozen=True)
class FactSource:
    """Where an agent-file fact is read: the tool, and the argument that binds it to the call."""

    name: str
    tool: str
    same: tuple[str, ...]


@dataclass(frozen=True)
class Tool:
    """One tool of the catalogue, loaded."""

    name: str
    description: str
    kind: str
    kind_uninferred: str
    arguments: ArgumentSchema
    parameters: Mapping[str, Any] | None = None
    result_schema: Mapping[str, Any] | None = None
    after: tuple[OrderRule, ...] = ()
    not_after: tuple[OrderRule, ...] = ()
    at_most: int | None = None
    compensation: Compensation | None = None
    irreversible: bool = False
    idempotent: bool = False
    checks: tuple[CheckItem, ...] = ()
    reads_outside: tuple[str, ...] = ()
    requires_trust: str | None = None
    withdrawn: bool = False
    secret: frozenset[str] = frozenset()
    # `undo: none`: the team says a failed run may leave this write done (no undo is asked for).
    undo_none: bool = False
    # The arguments the model is expected to write (`"free_text": true` on the argument's schema):
    # value origin (`argument_origin`) does not ask about them.
    free_text: frozenset[str] = frozenset()
    # The arguments a read fetches (`fetches: [url]`): step 4 lets their destinations through while
    # the address check is on, and the address check reads them as hosts.
    fetches: tuple[str, ...] = ()
    # What one call costs the run, in cents (`cost: 5` or `cost: {argument: price}`).
    cost: Cost | None = None
    # What each argument holds where its schema's `format` / `contentMediaType` says it is code,
    # a command, SQL, a query, a path, a URL or a template (`marks.declared_kind`): the proof's
    # QG017 / QG018 read this, and the loader refuses `free_text` on such an argument.
    argument_kinds: Mapping[str, str] = field(default_factory=dict)
    # What it returns must not leave (QG019: no model-chosen send after it without a yes).
    confidential: bool = False
    # The store it reads (QG020, QG021) or writes (QG021), named in `stores:`.
    reads_store: str | None = None
    writes_store: str | None = None
    # A read of a multi-tenant store that takes the tenant from the user, not the call (QG020).
    bound_to_user: bool = False
    # Where the tool's code comes from (`source`: a package, `server`: an MCP server) and the
    # version or digest it is pinned to (QG106).
    source: str | None = None
    server: str | None = None
    pin: str | None = None

    @property
    def is_write(self) -> bool:
        return is_write(self.kind)


@dataclass(frozen=True)
class Agent:
    """One agent: the tools it may call and how its turns are routed."""

    name: str
    tools: frozenset[str]
    tool_order: tuple[str, ...]
    hands_off_to: tuple[str, ...] = ()
    privilege: str = "normal"
    model: str | None = None
    on_unread: str | None = None
    # A remote channel turns come in on (`{url, auth}`, QG107), or None.
    channel: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Store:
    """A store tools read or write (`stores:`): whether it outlives a session, whether it holds
    several tenants' data."""

    name: str
    persistent: bool = False
    multi_tenant: bool = False


@dataclass(frozen=True)
class Catalogue:
    """What the tool check reads about agents and tools, with the lookups it needs precomputed."""

    tools: Mapping[str, Tool]
    agents: Mapping[str, Agent]
    facts: Mapping[str, Any] = field(default_factory=dict)
    fact_sources: tuple[FactSource, ...] = ()
    undo_tools: frozenset[str] = frozenset()
    outside_tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    stores: Mapping[str, Store] = field(default_factory=dict)

    def kind(self, name: str, *, infer: bool = True) -> str:
        tool = self.tools[name]
        return tool.kind if infer else tool.kind_uninferred


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(NAME.match(value))


def _bool(tool: Mapping[str, Any], key: str, where: str, issues: list[Issue]) -> bool:
    value = tool.get(key, False)
    if not isinstance(value, bool):
        issues.append(Issue(f"{where}.{key}", f"must be true or false, not `{value}`"))
        return False
    return value


def _bindings(raw: Any, where: str, issues: list[Issue], own_parameters: tuple[str, ...]):
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        issues.append(Issue(where, "must be a mapping of argument to source"))
        return ()
    bindings = []
    for argument, source in raw.items():
        path = parse_source(source)
        if path is None:
            issues.append(
                Issue(
                    f"{where}.{argument}",
                    f"must be `result.<field>` or `arguments.<field>`, not `{source}`",
                )
            )
            continue
        if argument not in own_parameters:
            issues.append(
                Issue(f"{where}.{argument}", f"is not an argument of the tool: `{argument}`")
            )
            continue
        bindings.append(Binding(str(argument), path))
    return tuple(bindings)


def _order_rules(tool, key, where, names, parameters, issues) -> tuple[OrderRule, ...]:
    raw = tool.get(key)
    if raw is None:
        return ()
    if not isinstance(raw, list):
        issues.append(Issue(f"{where}.{key}", "must be a list of tools"))
        return ()
    rules = []
    for index, entry in enumerate(raw):
        path = f"{where}.{key}[{index}]"
        if isinstance(entry, str):
            entry = {"tool": entry}
        if not isinstance(entry, Mapping) or set(entry) - {"tool", "bind"}:
            issues.append(Issue(path, "must be a tool name or `{tool, bind}`"))
            continue
        name = entry.get("tool")
        if name not in names:
            issues.append(
                Issue(f"{path}.tool", f"names a tool the catalogue does not have: `{name}`")
            )
            continue
        bind = _bindings(entry.get("bind"), f"{path}.bind", issues, parameters)
        rules.append(OrderRule(key, name, bind))
    return tuple(rules)


def _undo(tool, where, issues) -> tuple[Any, bool]:
    """`undo:` (the agent file's word): `none`, or the undo itself as `compensation` takes it.

    Returns the compensation to read (or None) and whether the tool says `undo: none`.
    """
    if "undo" not in tool:
        return tool.get("compensation"), False
    undo = tool["undo"]
    if "compensation" in tool:
        issues.append(Issue(f"{where}.undo", "give the undo once: `undo` or `compensation`"))
        return None, False
    if undo == "none":
        return None, True
    if undo is None or isinstance(undo, bool):
        issues.append(
            Issue(f"{where}.undo", "must be `none`, a tool name or `{tool, bind}` (write `none`)")
        )
        return None, False
    return undo, False


def _compensation(tool, where, names, raw_tools, issues) -> Compensation | None:
    raw, _ = _undo(tool, where, [])
    if raw is None:
        return None
    where = f"{where}.undo" if "undo" in tool else f"{where}.compensation"
    return _compensation_of(raw, where, names, raw_tools, issues)


def _compensation_of(raw, where, names, raw_tools, issues) -> Compensation | None:
    if isinstance(raw, str):
        raw = {"tool": raw}
    if not isinstance(raw, Mapping) or set(raw) - {"tool", "bind"}:
        issues.append(Issue(where, "must be a tool name or `{tool, bind}`"))
        return None
    undo = raw.get("tool")
    if undo not in names:
        issues.append(Issue(f"{where}.tool", f"names a tool the catalogue does not have: `{undo}`"))
        return None
    undo_parameters = _parameter_names(raw_tools[undo])
    bind = _bindings(raw.get("bind"), f"{where}.bind", issues, undo_parameters)
    return Compensation(undo, bind)


def _parameter_names(raw_tool: Mapping[str, Any]) -> tuple[str, ...]:
    parameters = raw_tool.get("parameters")
    if isinstance(parameters, Mapping) and isinstance(parameters.get("properties"), Mapping):
        return tuple(parameters["properties"])
    return ()


def _reads_outside(tool, where, issues) -> tuple[str, ...]:
    raw = tool.get("reads_outside", False)
    if raw is False:
        return ()
    if raw is True:
        return ("outside",)
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(_is_name(label) for label in raw):
        issues.append(Issue(f"{where}.reads_outside", "must be true, false, or a list of labels"))
        return ()
    return tuple(raw)


def _load_tool(raw, where, names, raw_tools, file_kinds, infer, issues) -> Tool | None:
    for key in sorted(set(raw) - TOOL_KEYS):
        issues.append(Issue(f"{where}.{key}", "is not a field of a tool"))
    name = raw["name"]
    description = raw.get("description", "")
    if not isinstance(description, str):
        issues.append(Issue(f"{where}.description", "must be text"))
        description = ""
    mark = raw.get("kind")
    if mark is not None and mark not in KINDS:
        issues.append(
            Issue(f"{where}.kind", f"must be one of read, write, sends_out, not `{mark}`")
        )
        mark = None
    arguments, found = compile_parameters(raw.get("parameters"), f"{where}.parameters")
    issues.extend(found)
    result_schema = raw.get("result_schema")
    if result_schema is not None:
        issues.extend(_check_result_schema(result_schema, f"{where}.result_schema"))
    parameters = _parameter_names(raw)
    at_most = raw.get("at_most")
    if at_most is not None and (
        not isinstance(at_most, int) or isinstance(at_most, bool) or at_most < 0
    ):
        issues.append(Issue(f"{where}.at_most", "must be a whole number, 0 or more"))
        at_most = None
    requires_trust = raw.get("requires_trust")
    if requires_trust is not None and requires_trust not in TRUST_LEVELS:
        issues.append(
            Issue(
                f"{where}.requires_trust",
                f"must be one of {', '.join(TRUST_LEVELS)}, not `{requires_trust}`",
            )
        )
        requires_trust = None
    secret = raw.get("secret", [])
    if not isinstance(secret, list) or not all(isinstance(item, str) for item in secret):
        issues.append(Issue(f"{where}.secret", "must be a list of argument names"))
        secret = []
    for item in secret:
        if item not in parameters:
            issues.append(
                Issue(f"{where}.secret", f"names an argument the tool does not declare: `{item}`")
            )
    checks, found = parse_checks(
        raw.get("checks"), f"{where}.checks", tools=names, parameters=parameters
    )
    issues.extend(found)
    after = _order_rules(raw, "after", where, names, parameters, issues)
    not_after = _order_rules(raw, "not_after", where, names, parameters, issues)
    _, undo_none = _undo(raw, where, issues)
    compensation = _compensation(raw, where, names, raw_tools, issues)
    reads_outside = _reads_outside(raw, where, issues)
    irreversible = _bool(raw, "irreversible", where, issues)
    idempotent = _bool(raw, "idempotent", where, issues)
    withdrawn = _bool(raw, "withdrawn", where, issues)
    cost, found = parse_cost(raw.get("cost"), where, parameters)
    issues.extend(found)
    kind = resolve_kind(
        name,
        file_kinds=file_kinds,
        mark=mark,
        infer=infer,
        description=description,
        argument_names=parameters,
    )
    fetches, found = parse_fetches(raw.get("fetches"), where, kind, parameters)
    issues.extend(found)
    if arguments is None:
        return None
    raw_parameters = raw.get("parameters")
    free_text, found = free_text_arguments(
        raw_parameters, declared_names(raw_parameters), where, fetches
    )
    issues.extend(found)
    uninferred = resolve_kind(name, file_kinds=file_kinds, mark=mark, infer=False)
    confidential = _bool(raw, "confidential", where, issues)
    bound_to_user = _bool(raw, "bound_to_user", where, issues)
    texts = {key: _text(raw, key, where, issues) for key in TEXT_MARKS}
    return Tool(
        name=name,
        description=description,
        kind=kind,
        kind_uninferred=uninferred,
        arguments=arguments,
        parameters=raw.get("parameters"),
        result_schema=result_schema,
        after=after,
        not_after=not_after,
        at_most=at_most,
        compensation=compensation,
        undo_none=undo_none,
        irreversible=irreversible,
        idempotent=idempotent,
        checks=checks,
        reads_outside=reads_outside,
        requires_trust=requires_trust,
        withdrawn=withdrawn,
        secret=frozenset(secret),
        free_text=free_text,
        fetches=fetches,
        cost=cost,
        argument_kinds=argument_kinds(raw_parameters),
        confidential=confidential,
        bound_to_user=bound_to_user,
        **texts,
    )


#: The tool marks written as a non-empty text: the stores it reads and writes, where its code
#: comes from and what it is pinned to.
TEXT_MARKS = ("reads_store", "writes_store", "source", "server", "pin")


def _text(raw: Mapping[str, Any], key: str, where: str, issues: list[Issue]) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 1000:
        issues.append(Issue(f"{where}.{key}", f"must be a non-empty text, not `{value}`"))
        return None
    return value


def _load_stores(raw: Any, issues: list[Issue]) -> dict[str, Store]:
    """`stores: {notes: {persistent: true, multi_tenant: false}}`."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        issues.append(Issue("stores", "must map store names to `{persistent, multi_tenant}`"))
        return {}
    stores: dict[str, Store] = {}
    for name, spec, where in _named_entries(raw, "stores", "store", STORE_KEYS, issues):
        persistent = _bool(spec, "persistent", where, issues)
        multi_tenant = _bool(spec, "multi_tenant", where, issues)
        stores[name] = Store(name, persistent=persistent, multi_tenant=multi_tenant)
    return stores


def _channel(raw: Any, where: str, issues: list[Issue]) -> dict[str, str] | None:
    """An agent's `channel: {url, auth}`: where its turns come from, and who is asked who speaks."""
    if raw is None:
        return None
    path = f"{where}.channel"
    if not isinstance(raw, Mapping):
        issues.append(Issue(path, "must be `{url, auth}`"))
        return None
    for key in sorted(set(raw) - {"url", "auth"}, key=str):
        issues.append(Issue(f"{path}.{key}", "is not a field of a channel"))
    url = raw.get("url")
    if not isinstance(url, str) or not url.strip() or len(url) > 2000:
        issues.append(Issue(f"{path}.url", "must be the channel's address"))
        return None
    auth = raw.get("auth", "none")
    if auth not in CHANNEL_AUTH:
        issues.append(
            Issue(f"{path}.auth", f"must be one of {', '.join(CHANNEL_AUTH)}, not `{auth}`")
        )
        return None
    return {"url": url, "auth": auth}


def _check_result_schema(schema: Any, path: str) -> list[Issue]:
    """A `result_schema` is any valid JSON Schema: a result need not be an object."""
    if not isinstance(schema, (Mapping, bool)):
        return [Issue(path, "must be a JSON Schema")]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        return [Issue(path, f"is not a valid JSON Schema: {error.message}")]
    return list(pattern_issues(schema, path))


def _named_entries(raw: Mapping[str, Any], section: str, what: str, keys, issues: list[Issue]):
    """(name, entry, path) of each entry of a section keyed by name (`agents`, `stores`), after
    refusing a name that is not one, an entry that is not a mapping and every unknown field."""
    article = "an" if what[0] in "aeiou" else "a"
    for name, entry in raw.items():
        where = f"{section}.{name}"
        if not _is_name(name):
            issues.append(Issue(where, f"is not a valid {what} name: `{name}`"))
            continue
        if not isinstance(entry, Mapping):
            issues.append(Issue(where, "must be a mapping"))
            continue
        for key in sorted(set(entry) - keys, key=str):
            issues.append(Issue(f"{where}.{key}", f"is not a field of {article} {what}"))
        yield name, entry, where


def _load_agents(raw, names, issues) -> dict[str, Agent]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        issues.append(Issue("agents", "must be a mapping of agent name to agent"))
        return {}
    agents = {}
    for name, agent, where in _named_entries(raw, "agents", "agent", AGENT_KEYS, issues):
        tools = agent.get("tools", [])
        if not isinstance(tools, list):
            issues.append(Issue(f"{where}.tools", "must be a list of tool names"))
            tools = []
        for index, tool in enumerate(tools):
            if tool not in names:
                issues.append(
                    Issue(
                        f"{where}.tools[{index}]",
                        f"names a tool the catalogue does not have: `{tool}`",
                    )
                )
        hands_off_to = agent.get("hands_off_to", [])
        if not isinstance(hands_off_to, list):
            issues.append(Issue(f"{where}.hands_off_to", "must be a list of agent names"))
            hands_off_to = []
        for index, other in enumerate(hands_off_to):
            if other not in raw:
                issues.append(
                    Issue(
                        f"{where}.hands_off_to[{index}]",
                        f"names an agent the file does not have: `{other}`",
                    )
                )
        privilege = agent.get("privilege", "normal")
        if privilege not in PRIVILEGES:
            issues.append(
                Issue(
                    f"{where}.privilege",
                    f"must be one of {', '.join(PRIVILEGES)}, not `{privilege}`",
                )
            )
        model = agent.get("model")
        if model is not None and (not isinstance(model, str) or ":" not in model):
            issues.append(Issue(f"{where}.model", f"must be `provider:model`, not `{model}`"))
        on_unread = agent.get("on_unread")
        if on_unread is not None and on_unread not in ON_UNREAD:
            issues.append(
                Issue(
                    f"{where}.on_unread",
                    f"must be one of {', '.join(ON_UNREAD)}, not `{on_unread}`",
                )
            )
        known = [tool for tool in tools if isinstance(tool, str)]
        channel = _channel(agent.get("channel"), where, issues)
        agents[name] = Agent(
            name=name,
            tools=frozenset(known),
            tool_order=tuple(known),
            hands_off_to=tuple(str(other) for other in hands_off_to),
            privilege=privilege if privilege in PRIVILEGES else "normal",
            model=model if isinstance(model, str) else None,
            on_unread=on_unread if on_unread in ON_UNREAD else None,
            channel=channel,
        )
    return agents


def _load_facts(
    raw, tools: Mapping[str, Any], issues
) -> tuple[dict[str, Any], tuple[FactSource, ...]]:
    """Read `facts:`; the rulebook compiler's `validate_facts_spec` judges their form."""
    if raw is None:
        return {}, ()
    try:
        from rulebooks.compiler import validate_facts_spec
    except ImportError:
        issues.append(Issue("facts", "cannot be read: the rulebook compiler is not installed"))
        return {}, ()
    outside = [name for name, tool in tools.items() if tool.get("reads_outside")]
    found = validate_facts_spec(raw, reads_outside=outside, tools=list(tools))
    issues.extend(Issue(str(problem.path), str(problem.message)) for problem in found)
    if found or not isinstance(raw, Mapping):
        return {}, ()
    sources = []
    for name, spec in raw.items():
        same = spec.get("same", ())
        sources.append(
            FactSource(
                str(name),
                spec["from"].split(".", 1)[0].strip(),
                (same,) if isinstance(same, str) else tuple(same),
            )
        )
    return dict(raw), tuple(sources)


def load_catalogue(
    data: Any,
    *,
    tool_kinds: str | Mapping[str, Any] | None = None,
    infer: bool = False,
) -> Catalogue:
    """Load a catalogue strictly; raise `CatalogueInvalid` with every issue.

    `tool_kinds` is the content of a tool-kinds file (text or mapping), which always wins over the
    tools' own marks; without it, a `tool_kinds` key of the catalogue is read. `infer` turns on
    reading the kind of unmarked tools from their name, description and arguments.
    """
    issues: list[Issue] = []
    if not isinstance(data, Mapping):
        raise CatalogueInvalid([Issue("", "a catalogue must be a mapping with `tools`")])
    for key in sorted(set(data) - CATALOGUE_KEYS):
        issues.append(Issue(str(key), "is not a section of a catalogue"))
    file_kinds, found = parse_tool_kinds(
        tool_kinds if tool_kinds is not None else data.get("tool_kinds")
    )
    issues.extend(found)
    raw_list = data.get("tools", [])
    if not isinstance(raw_list, list):
        issues.append(Issue("tools", "must be a list of tools"))
        raw_list = []
    raw_tools: dict[str, Mapping[str, Any]] = {}
    places: dict[str, int] = {}
    for index, raw in enumerate(raw_list):
        where = f"tools[{index}]"
        if not isinstance(raw, Mapping):
            issues.append(Issue(where, "must be a mapping"))
            continue
        name = raw.get("name")
        if not _is_name(name):
            issues.append(Issue(f"{where}.name", f"must be a tool name, not `{name}`"))
            continue
        if name in raw_tools:
            issues.append(
                Issue(f"{where}.name", f"repeats the tool `{name}` of tools[{places[name]}]")
            )
            continue
        raw_tools[name] = raw
        places[name] = index
    for name in file_kinds:
        if name not in raw_tools:
            issues.append(
                Issue(f"tool_kinds.{name}", f"names a tool the catalogue does not have: `{name}`")
            )
    names = frozenset(raw_tools)
    tools: dict[str, Tool] = {}
    for name, raw in raw_tools.items():
        tool = _load_tool(
            raw, f"tools[{places[name]}]", names, raw_tools, file_kinds, infer, issues
        )
        if tool is not None:
            tools[name] = tool
    agents = _load_agents(data.get("agents"), names, issues)
    facts, fact_sources = _load_facts(data.get("facts"), raw_tools, issues)
    stores = _load_stores(data.get("stores"), issues)
    for name, tool in tools.items():
        for key in ("reads_store", "writes_store"):
            store = getattr(tool, key)
            if store is not None and store not in stores:
                where = f"tools[{places[name]}].{key}"
                issues.append(Issue(where, f"names a store `stores:` does not have: `{store}`"))
    if issues:
        raise CatalogueInvalid(sorted(set(issues), key=lambda issue: _issue_order(issue, places)))
    undo_tools = frozenset(
        t.compensation.tool for t in tools.values() if t.compensation is not None
    )
    outside = {name: tool.reads_outside for name, tool in tools.items() if tool.reads_outside}
    return Catalogue(
        tools=tools,
        agents=agents,
        facts=facts,
        fact_sources=fact_sources,
        undo_tools=undo_tools,
        outside_tools=outside,
        stores=stores,
    )


def _issue_order(issue: Issue, places: Mapping[str, int]) -> tuple[Any, ...]:
    """Issues in document order: sections as written, tools by their position, then by path."""
    match = re.match(r"^tools\[(\d+)\]", issue.path)
    position = int(match.group(1)) if match else -1
    return (issue.path.split(".", 1)[0].split("[", 1)[0], position, issue.path, issue.message)
