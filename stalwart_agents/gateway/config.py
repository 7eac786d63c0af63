"""gateway.yaml: the MCP servers the gateway stands in front of, and the marks the tool check reads.

    agent: desk                         # the agent the gateway's sessions are checked as
    firewall: ./firewall.json           # optional: a firewall policy, evaluated at `tool_call`
    rulebook: ./desk_rules.csv          # optional: the rulebook the session runs under (a rule
                                        # sheet or Colang; tools named `<server>.<tool>`)
    pins: ./gateway.pins.json           # optional: where `stalwart gateway approve` writes
    approval_timeout: 300               # seconds a call waits for a person (asked or queued)
    http_token_env: GATEWAY_TOKEN       # --http: the variable holding the clients' bearer token
    turns: from_client                  # trust the person's turns the client sends (`_meta`
                                        # `stalwart/turns`); default `off`: ignored
    console:                            # with STALWART_URL: where each call is decided
      decide: local                     # `console` (each check a request) or `local` (in this
      bundle_key_env: STALWART_BUNDLE_KEY  # process, from the console's signed bundle; the
                                        # variable holding the organisation's public key)
    servers:
      shop:                             # tools are `shop.<tool>` to the client and the rules
        command: python                 # stdio: a command the gateway starts ...
        args: [shop_server.py]
        env: {SHOP_DB: "${SHOP_DB}"}    # values may name environment variables
      github:
        url: https://mcp.example.org/mcp   # ... or streamable HTTP
        headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}   # from the environment, never logged
        reads_outside: [github]         # every result of this server is outside content
        tool_kinds: ./github_kinds.yaml # `tool: read|write|sends_out`, bare names; wins
        infer: false                    # read unmarked kinds from names (the catalogue's words)
        resources_outside: [github]     # what its resources return is outside content
        new_resources: allow            # offer resources listed since the approval (default
                                        # `withhold`: only those approved are offered)
        tools:
          create_issue: {after: [get_repo], at_most: 3, free_text: [body], checks: [...]}
          fetch_url: {fetches: [url], reads_outside: [web]}

Loading is strict and bounded: every problem is collected, each naming its key path and line
(`gateway.yaml:12: servers.github.url: must be an http(s) URL`), and `GatewayConfigInvalid` is
raised with all of them; an unknown key is a problem, not ignored. `${NAME}` references are
resolved when the gateway connects (`resolve`), and a missing variable is named, never its value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from guard.engine import safe_yaml

MAX_FILE_BYTES = 1_000_000
MAX_SERVERS = 64
MAX_TOOL_MARKS = 1_000
MAX_TEXT = 4_096
MAX_LIST = 256
SERVER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")
LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
REFERENCE = re.compile(r"\$\{([^}]*)\}")
KINDS = ("read", "write", "sends_out")
#: What the gateway does with a resource its server lists that was not listed at the approval.
NEW_RESOURCES = ("withhold", "allow")

TOP_KEYS = frozenset(
    {
        "agent",
        "firewall",
        "rulebook",
        "pins",
        "approval_timeout",
        "http_token_env",
        "turns",
        "console",
        "servers",
    }
)
TURNS = ("off", "from_client")
CONSOLE_KEYS = frozenset({"decide", "bundle_key_env"})
DECIDE = ("console", "local")
SERVER_KEYS = frozenset(
    {
        "command",
        "args",
        "env",
        "cwd",
        "url",
        "headers",
        "timeout",
        "reads_outside",
        "resources_outside",
        "new_resources",
        "tool_kinds",
        "infer",
        "tools",
    }
)
TOOL_MARK_KEYS = frozenset(
    {
        "kind",
        "reads_outside",
        "free_text",
        "fetches",
        "checks",
        "after",
        "not_after",
        "at_most",
        "irreversible",
        "idempotent",
        "secret",
        "requires_trust",
    }
)


@dataclass(frozen=True)
class Problem:
    """One problem of the file: where (key path and line) and what."""

    path: str
    message: str
    line: int | None = None

    def render(self, filename: str) -> str:
        where = f"{filename}:{self.line}" if self.line else filename
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class GatewayConfigInvalid(Exception):
    """gateway.yaml cannot be used; `problems` holds every one, in the file's order."""

    def __init__(self, filename: str, problems: list[Problem]) -> None:
        self.filename = filename
        self.problems = problems
        super().__init__("\n".join(problem.render(filename) for problem in problems))


@dataclass(frozen=True)
class ToolMarks:
    """What gateway.yaml says about one upstream tool (names bare, as the server has them)."""

    kind: str | None = None
    reads_outside: tuple[str, ...] | None = None
    free_text: tuple[str, ...] = ()
    fetches: tuple[str, ...] = ()
    checks: tuple[Any, ...] | None = None
    after: tuple[Any, ...] = ()
    not_after: tuple[Any, ...] = ()
    at_most: int | None = None
    irreversible: bool = False
    idempotent: bool = False
    secret: tuple[str, ...] = ()
    requires_trust: str | None = None


@dataclass(frozen=True)
class ServerConfig:
    """One upstream MCP server: how to reach it and the marks of its tools."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 30.0
    reads_outside: tuple[str, ...] = ()
    resources_outside: tuple[str, ...] = ()
    #: `allow`: a resource listed since the approval is offered (a pinned one that changed is
    #: not); `withhold` (the default): only the resources approved are.
    new_resources: str = "withhold"
    tool_kinds: Mapping[str, str] = field(default_factory=dict)
    infer: bool = False
    tools: Mapping[str, ToolMarks] = field(default_factory=dict)

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"


@dataclass(frozen=True)
class GatewayConfig:
    """gateway.yaml, loaded."""

    path: Path
    agent: str
    servers: Mapping[str, ServerConfig]
    firewall: Path | None = None
    #: The rulebook the gateway's session runs under (its gate may `allow` a write outright).
    rulebook: Path | None = None
    pins: Path = Path("gateway.pins.json")
    approval_timeout: float = 300.0
    #: The environment variable that holds the bearer token `--http` clients must send.
    http_token_env: str | None = None
    #: `from_client`: the person's turns a client sends (`_meta` `stalwart/turns`) are read by
    #: the session; `off` (the default): they are ignored.
    turns: str = "off"
    #: Where calls are decided against the console (`console`, `local`); None: as the
    #: environment says (`STALWART_DECIDE`, default `console`).
    decide: str | None = None
    #: The environment variable holding the bundle's public key (None: `STALWART_BUNDLE_KEY`).
    bundle_key_env: str | None = None


def _lines(text: str) -> dict[str, int]:
    """The line (1-based) of every key path in the document, for the messages."""
    try:
        root = safe_yaml.compose(text)
    except yaml.YAMLError:
        return {}
    lines: dict[str, int] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = str(key.value)
                child = f"{path}.{name}" if path else name
                lines.setdefault(child, key.start_mark.line + 1)
                walk(value, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                child = f"{path}[{index}]"
                lines.setdefault(child, item.start_mark.line + 1)
                walk(item, child)

    if root is not None:
        walk(root, "")
    return lines


class _Reader:
    """Collects problems while the sections are read; knows each path's line."""

    def __init__(self, lines: Mapping[str, int]) -> None:
        self.lines = lines
        self.problems: list[Problem] = []

    def problem(self, path: str, message: str) -> None:
        probe = path
        line = self.lines.get(probe)
        while line is None and probe:
            parent = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", probe)
            probe = "" if parent == probe else parent
            line = self.lines.get(probe)
        self.problems.append(Problem(path, message, line))

    def text(self, value: Any, path: str, *, required: bool = False) -> str | None:
        if value is None:
            if required:
                self.problem(path, "is required")
            return None
        if not isinstance(value, str) or not value:
            self.problem(path, "must be text")
            return None
        if len(value) > MAX_TEXT:
            self.problem(path, f"is longer than {MAX_TEXT} characters")
            return None
        return value

    def names(self, value: Any, path: str, pattern: re.Pattern[str], what: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or len(value) > MAX_LIST:
            self.problem(path, f"must be a list of {what} (at most {MAX_LIST})")
            return ()
        found = []
        for index, item in enumerate(value):
            if not isinstance(item, str) or not pattern.match(item):
                self.problem(f"{path}[{index}]", f"must be {what[:-1]}, not `{item}`")
                continue
            found.append(item)
        return tuple(found)

    def flag(self, value: Any, path: str) -> bool:
        if value is None:
            return False
        if not isinstance(value, bool):
            self.problem(path, f"must be true or false, not `{value}`")
            return False
        return value

    def templates(self, value: Any, path: str, key: re.Pattern[str]) -> dict[str, str]:
        """A mapping of name to text whose `${NAME}` references name environment variables."""
        if value is None:
            return {}
        if not isinstance(value, Mapping) or len(value) > MAX_LIST:
            self.problem(path, f"must be a mapping of names to text (at most {MAX_LIST})")
            return {}
        found: dict[str, str] = {}
        for name, text in value.items():
            where = f"{path}.{name}"
            if not isinstance(name, str) or not key.match(name):
                self.problem(where, f"is not a usable name: `{name}`")
                continue
            if isinstance(text, (int, float)) and not isinstance(text, bool):
                text = str(text)
            if not isinstance(text, str) or len(text) > MAX_TEXT:
                self.problem(
                    where, "must be text (write `${NAME}` to take it from the environment)"
                )
                continue
            for reference in REFERENCE.findall(text):
                if not ENV_NAME.match(reference):
                    self.problem(where, f"names an environment variable badly: `${{{reference}}}`")
            found[name] = text
        return found


HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")


def _tool_marks(raw: Any, path: str, reader: _Reader) -> ToolMarks | None:
    if raw is None:
        return ToolMarks()
    if not isinstance(raw, Mapping):
        reader.problem(path, "must be a mapping of marks")
        return None
    for key in sorted(set(raw) - TOOL_MARK_KEYS, key=str):
        reader.problem(f"{path}.{key}", "is not a mark of a tool")
    kind = raw.get("kind")
    if kind is not None and kind not in KINDS:
        reader.problem(f"{path}.kind", f"must be one of read, write, sends_out, not `{kind}`")
        kind = None
    reads_outside = None
    if "reads_outside" in raw:
        value = raw["reads_outside"]
        if value is True:
            reads_outside = ("outside",)
        elif value is False:
            reads_outside = ()
        else:
            reads_outside = reader.names(value, f"{path}.reads_outside", LABEL, "labels")
    order: dict[str, tuple[Any, ...]] = {}
    for key in ("after", "not_after"):
        value = raw.get(key)
        if value is None:
            order[key] = ()
        elif not isinstance(value, list) or len(value) > MAX_LIST:
            reader.problem(f"{path}.{key}", "must be a list of tools")
            order[key] = ()
        else:
            order[key] = tuple(value)
    at_most = raw.get("at_most")
    if at_most is not None and (
        not isinstance(at_most, int) or isinstance(at_most, bool) or not 0 <= at_most <= 1_000_000
    ):
        reader.problem(f"{path}.at_most", "must be a whole number, 0 or more")
        at_most = None
    checks = raw.get("checks")
    if checks is not None and (not isinstance(checks, list) or len(checks) > MAX_LIST):
        reader.problem(f"{path}.checks", "must be a list of checks")
        checks = None
    trust = raw.get("requires_trust")
    if trust is not None and not isinstance(trust, str):
        reader.problem(f"{path}.requires_trust", "must be a trust level")
        trust = None
    return ToolMarks(
        kind=kind,
        reads_outside=reads_outside,
        free_text=reader.names(raw.get("free_text"), f"{path}.free_text", TOOL_NAME, "arguments"),
        fetches=reader.names(raw.get("fetches"), f"{path}.fetches", TOOL_NAME, "arguments"),
        checks=tuple(checks) if checks is not None else None,
        after=order["after"],
        not_after=order["not_after"],
        at_most=at_most,
        irreversible=reader.flag(raw.get("irreversible"), f"{path}.irreversible"),
        idempotent=reader.flag(raw.get("idempotent"), f"{path}.idempotent"),
        secret=reader.names(raw.get("secret"), f"{path}.secret", TOOL_NAME, "arguments"),
        requires_trust=trust,
    )


def _tool_kinds(value: Any, path: str, base: Path, reader: _Reader) -> dict[str, str]:
    """A per-server tool-kinds file (bare tool names), read here so its problems are named."""
    from guard.engine import parse_tool_kinds

    name = reader.text(value, path)
    if name is None:
        return {}
    file = (base / name).resolve()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        reader.problem(path, f"the file `{name}` cannot be read: {exc.strerror or exc}")
        return {}
    except UnicodeDecodeError:
        reader.problem(path, f"the file `{name}` is not UTF-8 text")
        return {}
    kinds, issues = parse_tool_kinds(text)
    for issue in issues:
        reader.problem(path, f"`{name}`: {issue.path}: {issue.message}")
    return kinds


def _server(name: str, raw: Any, base: Path, reader: _Reader) -> ServerConfig | None:
    path = f"servers.{name}"
    if not SERVER_NAME.match(name):
        reader.problem(
            path, f"is not a usable server name: `{name}` (lowercase letters, digits, `_`, `-`)"
        )
        return None
    if not isinstance(raw, Mapping):
        reader.problem(path, "must be a mapping with `command` or `url`")
        return None
    for key in sorted(set(raw) - SERVER_KEYS, key=str):
        reader.problem(f"{path}.{key}", "is not a field of a server")
    command = reader.text(raw.get("command"), f"{path}.command")
    url = reader.text(raw.get("url"), f"{path}.url")
    if (command is None) == (url is None):
        if "command" not in raw and "url" not in raw:
            reader.problem(path, "needs `command` (stdio) or `url` (streamable HTTP)")
        elif command is not None and url is not None:
            reader.problem(path, "give one of `command` and `url`, not both")
    if url is not None and not re.match(r"^https?://[^\s/]+", url):
        reader.problem(f"{path}.url", f"must be an http(s) URL, not `{url}`")
        url = None
    if command is None:
        for key in ("args", "env", "cwd"):
            if key in raw:
                reader.problem(f"{path}.{key}", "belongs to a stdio server (`command`)")
    if url is None and "headers" in raw:
        reader.problem(f"{path}.headers", "belongs to an HTTP server (`url`)")
    args_raw = raw.get("args", [])
    args: tuple[str, ...] = ()
    if not isinstance(args_raw, list) or len(args_raw) > MAX_LIST:
        reader.problem(f"{path}.args", f"must be a list of text (at most {MAX_LIST})")
    else:
        good = []
        for index, arg in enumerate(args_raw):
            if isinstance(arg, (int, float)) and not isinstance(arg, bool):
                arg = str(arg)
            if not isinstance(arg, str) or len(arg) > MAX_TEXT:
                reader.problem(f"{path}.args[{index}]", "must be text")
                continue
            good.append(arg)
        args = tuple(good)
    timeout = raw.get("timeout", 30)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout <= 3600
    ):
        reader.problem(f"{path}.timeout", "must be a number of seconds, above 0 and at most 3600")
        timeout = 30
    tools_raw = raw.get("tools") or {}
    tools: dict[str, ToolMarks] = {}
    if not isinstance(tools_raw, Mapping) or len(tools_raw) > MAX_TOOL_MARKS:
        reader.problem(
            f"{path}.tools", f"must be a mapping of tool name to marks (at most {MAX_TOOL_MARKS})"
        )
    else:
        for tool, marks in tools_raw.items():
            where = f"{path}.tools.{tool}"
            if not isinstance(tool, str) or not TOOL_NAME.match(tool):
                reader.problem(where, f"is not a tool name: `{tool}`")
                continue
            loaded = _tool_marks(marks, where, reader)
            if loaded is not None:
                tools[tool] = loaded
    outside = raw.get("reads_outside")
    reads_outside = (
        ("outside",)
        if outside is True
        else ()
        if outside in (None, False)
        else reader.names(outside, f"{path}.reads_outside", LABEL, "labels")
    )
    resources = raw.get("resources_outside")
    resources_outside = (
        ("outside",)
        if resources is True
        else ()
        if resources in (None, False)
        else reader.names(resources, f"{path}.resources_outside", LABEL, "labels")
    )
    new_resources = raw.get("new_resources", "withhold")
    if new_resources not in NEW_RESOURCES:
        reader.problem(
            f"{path}.new_resources", f"must be `withhold` or `allow`, not `{new_resources}`"
        )
        new_resources = "withhold"
    return ServerConfig(
        name=name,
        command=command,
        args=args,
        env=reader.templates(raw.get("env"), f"{path}.env", ENV_NAME),
        cwd=reader.text(raw.get("cwd"), f"{path}.cwd"),
        url=url,
        headers=reader.templates(raw.get("headers"), f"{path}.headers", HEADER_NAME),
        timeout=float(timeout),
        reads_outside=reads_outside,
        resources_outside=resources_outside,
        new_resources=new_resources,
        tool_kinds=_tool_kinds(raw.get("tool_kinds"), f"{path}.tool_kinds", base, reader),
        infer=reader.flag(raw.get("infer"), f"{path}.infer"),
        tools=tools,
    )


def load_config(path: str | Path) -> GatewayConfig:
    """Read gateway.yaml strictly; raise `GatewayConfigInvalid` with every problem."""
    file = Path(path)
    label = file.name
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise GatewayConfigInvalid(
            label, [Problem("", f"cannot be read: {(exc.strerror or str(exc)).lower()}")]
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise GatewayConfigInvalid(label, [Problem("", f"is larger than {MAX_FILE_BYTES} bytes")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise GatewayConfigInvalid(label, [Problem("", "is not UTF-8 text")]) from None
    try:
        raw = safe_yaml.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "it is not valid YAML"
        line = mark.line + 1 if mark is not None else None
        raise GatewayConfigInvalid(
            label, [Problem("", f"is not valid YAML: {problem}", line)]
        ) from None
    return read_config(raw, base=file.parent, lines=_lines(text), path=file)


def _beside(reader: Any, raw: Mapping[str, Any], key: str, base: Path, what: str) -> Path | None:
    """The file `key` names, beside gateway.yaml; a problem at `key` when it does not exist."""
    named = reader.text(raw.get(key), key)
    if named is None:
        return None
    found = (base / named).resolve()
    if not found.is_file():
        reader.problem(key, f"the {what} `{named}` does not exist")
    return found


def read_config(
    raw: Any, *, base: Path, lines: Mapping[str, int] | None = None, path: Path | None = None
) -> GatewayConfig:
    """The configuration in `raw` (a parsed document), strictly; paths resolve against `base`."""
    reader = _Reader(lines or {})
    label = path.name if path is not None else "gateway.yaml"
    if not isinstance(raw, Mapping):
        raise GatewayConfigInvalid(label, [Problem("", "must be a mapping with `servers`")])
    for key in sorted(set(raw) - TOP_KEYS, key=str):
        reader.problem(str(key), "is not a section of gateway.yaml")
    agent = raw.get("agent", "gateway")
    if not isinstance(agent, str) or not TOOL_NAME.match(agent):
        reader.problem("agent", f"must be an agent name, not `{agent}`")
        agent = "gateway"
    firewall = _beside(reader, raw, "firewall", base, "policy")
    rulebook = _beside(reader, raw, "rulebook", base, "rulebook")
    pins_name = reader.text(raw.get("pins"), "pins")
    stem = path.stem if path is not None else "gateway"
    pins = (base / (pins_name or f"{stem}.pins.json")).resolve()
    timeout = raw.get("approval_timeout", 300)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout <= 86_400
    ):
        reader.problem("approval_timeout", "must be a number of seconds, above 0 and at most 86400")
        timeout = 300
    token_env = raw.get("http_token_env")
    if token_env is not None and (not isinstance(token_env, str) or not ENV_NAME.match(token_env)):
        reader.problem("http_token_env", "must name an environment variable (letters, digits, _)")
        token_env = None
    turns = raw.get("turns", "off")
    if turns is False:  # YAML reads a bare `off` as false
        turns = "off"
    if turns not in TURNS:
        reader.problem("turns", f"must be `off` or `from_client`, not `{turns}`")
        turns = "off"
    decide, bundle_key_env = _console(raw.get("console"), reader)
    servers_raw = raw.get("servers")
    servers: dict[str, ServerConfig] = {}
    if not isinstance(servers_raw, Mapping) or not servers_raw:
        reader.problem("servers", "must name at least one server")
    elif len(servers_raw) > MAX_SERVERS:
        reader.problem("servers", f"names more than {MAX_SERVERS} servers")
    else:
        for server_name, server in servers_raw.items():
            loaded = _server(str(server_name), server, base, reader)
            if loaded is not None:
                servers[loaded.name] = loaded
    if reader.problems:
        order = {key: index for index, key in enumerate(lines or {})}
        problems = sorted(
            reader.problems, key=lambda p: (p.line or 0, order.get(p.path, 0), p.path)
        )
        raise GatewayConfigInvalid(label, problems)
    return GatewayConfig(
        path=path or base / "gateway.yaml",
        agent=agent,
        servers=servers,
        firewall=firewall,
        rulebook=rulebook,
        pins=pins,
        approval_timeout=float(timeout),
        http_token_env=token_env,
        turns=turns,
        decide=decide,
        bundle_key_env=bundle_key_env,
    )


def _console(raw: Any, reader: _Reader) -> tuple[str | None, str | None]:
    """The `console:` section: `decide` and `bundle_key_env` (both optional)."""
    if raw is None:
        return None, None
    if not isinstance(raw, Mapping):
        reader.problem("console", "must be a mapping with `decide` and `bundle_key_env`")
        return None, None
    for key in sorted(set(raw) - CONSOLE_KEYS, key=str):
        reader.problem(f"console.{key}", "is not a field of the console section")
    decide = raw.get("decide")
    if decide is not None and decide not in DECIDE:
        reader.problem("console.decide", f"must be `console` or `local`, not `{decide}`")
        decide = None
    variable = raw.get("bundle_key_env")
    if variable is not None and (not isinstance(variable, str) or not ENV_NAME.match(variable)):
        reader.problem(
            "console.bundle_key_env", "must name an environment variable (letters, digits, _)"
        )
        variable = None
    return decide, variable


class MissingVariable(Exception):
    """A `${NAME}` the environment does not hold, or a header it fills with a value HTTP cannot
    carry; the message names the key, never a value."""


def resolve(templates: Mapping[str, str], environ: Mapping[str, str], where: str) -> dict[str, str]:
    """Fill each `${NAME}` from `environ`; raise `MissingVariable` naming the key and variable."""
    resolved: dict[str, str] = {}
    for key, text in templates.items():

        def fill(match: re.Match[str], key: str = key) -> str:
            name = match.group(1)
            if name not in environ:
                raise MissingVariable(
                    f"{where}.{key}: the environment variable `{name}` is not set"
                )
            return environ[name]

        resolved[key] = REFERENCE.sub(fill, text)
    return resolved


#: A header value HTTP can carry as the gateway sends it: visible ASCII, with spaces or tabs only
#: between visible characters (RFC 9110's field value, without its obsolete bytes).
HEADER_VALUE = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?")


def resolve_headers(
    templates: Mapping[str, str], environ: Mapping[str, str], where: str
) -> dict[str, str]:
    """`resolve` for HTTP headers. A value HTTP cannot carry (a secret read from a file with its
    line break kept, say) raises `MissingVariable` naming the header: the HTTP library's own
    error would spell the value out, into the log, the console's report and the client's
    errors."""
    resolved = resolve(templates, environ, where)
    for key, value in resolved.items():
        if not HEADER_VALUE.fullmatch(value):
            raise MissingVariable(
                f"{where}.{key}: the value is not one HTTP can carry (a line break, a control "
                "character, a space at either end, or a character outside ASCII)"
            )
    return resolved
