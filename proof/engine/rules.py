"""The registry of the hunter's rules: the one source for the report, the docs table and the gate.

Every rule the proof raises is listed here once, with its title, its type (Vulnerability, Bug,
Security hotspot), its severity, whether a finding of it fails the `stalwart verify` gate and
whether it stops `Agent(...)` (the chapter's table, pt-BR edition), what it proves and what it
does not (our reading of the rule, written for its docs page), its OWASP tags as the chapter
prints them (`LLM06:2026`, `ASI08:2026`), the fix a finding carries (a template filled with the
finding's subject), and, for rules whose input can be absent, the sentence the report gives when
there is nothing to read. `READS` says, per rule, what it reads from the agent file (agent.yaml,
its catalogue and rulebook) and from a graph document or overlay (`--overlay`): the page of each
rule shows it, so a user knows which declaration the proof needs to say anything.

`render_rules_table()` writes the Markdown table of the docs from this registry,
`render_rules_reference()` a page per rule, and `render_rule_text()` / `rule_page_fields()` the
page `stalwart verify --explain` prints and the console shows at `rule_page_path()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

VULNERABILITY = "Vulnerability"
BUG = "Bug"
HOTSPOT = "Security hotspot"
TYPES = (VULNERABILITY, BUG, HOTSPOT)

SEVERITY = {VULNERABILITY: "High", BUG: "Medium", HOTSPOT: "Review"}


class _Blanks(dict):
    def __missing__(self, key: str) -> str:
        return f"<{key}>"


@dataclass(frozen=True)
class RuleInfo:
    """One rule of the hunter, as the report, the gate and the docs know it."""

    id: str
    title: str
    type: str
    fails_gate: bool
    stops_agent: bool
    proves: str
    does_not_prove: str
    owasp: tuple[str, ...]
    fix: str
    nothing_to_read: str | None = None

    @property
    def severity(self) -> str:
        return SEVERITY[self.type]

    @property
    def fix_template(self) -> str:
        """The fix as a page shows it: each blank named, `<tool>` for `{tool}`."""
        try:
            return self.fix.format_map(_Blanks())
        except (KeyError, IndexError, ValueError):
            return self.fix

    @property
    def reads(self) -> str:
        """What the rule reads from the agent file and the graph (its page says it)."""
        return READS[self.id]

    def fix_for(self, **values: str) -> str:
        """The fix text with the finding's subject filled in (`{tool}`, `{agent}`, ...)."""
        try:
            return self.fix.format(**values)
        except (KeyError, IndexError):
            return self.fix

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "title": self.title,
            "type": self.type,
            "severity": self.severity,
            "fails_gate": self.fails_gate,
            "stops_agent": self.stops_agent,
            "proves": self.proves,
            "does_not_prove": self.does_not_prove,
            "reads": self.reads,
            "owasp": list(self.owasp),
            "fix": self.fix,
        }


REGISTRY: tuple[RuleInfo, ...] = (
    RuleInfo(
        "QG001",
        "Missing check",
        VULNERABILITY,
        True,
        True,
        proves="No route of the graph reaches a tool step except through that tool's own check "
        "(or the person's yes the check asked for): every edge into a tool step is searched, to "
        "the stated depth, and one that leaves any other step -- the team's own step, a model, a "
        "router -- and can be taken is a finding, with the path that takes it.",
        does_not_prove="That the check decides well: it proves the check is on the way, not what "
        "the check lets through. A tool called from outside the graph (not through the agent) is "
        "not seen.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Route every call of '{tool}' through its tool check: remove the edge that reaches it "
        "directly, or point it at the check step.",
    ),
    RuleInfo(
        "QG002",
        "Escapable guard",
        VULNERABILITY,
        True,
        True,
        proves="A guard cannot be walked around: no edge leaves a tool check towards its tool "
        "except on `allow` (or towards the person on `confirm`), no person's `no` leads to the "
        "tool; a rulebook that guards a tool with a condition on one route does not also reach it "
        "by a route with no condition (the gate passes a call when any route holds); and the tool "
        "check does not have `your_rules` switched off while the rulebook guards a tool.",
        does_not_prove="That the condition itself is the right one, or that the facts it reads are "
        "reported truthfully by your code.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Guard every route to '{tool}': put the same condition on the route that has none, or "
        "remove it; keep `your_rules` switched on; wire a refusal away from the tool.",
    ),
    RuleInfo(
        "QG003",
        "Multi-turn escape",
        VULNERABILITY,
        True,
        True,
        proves="A guard that reads an earlier call (an `after` rule, a fact from `facts:`, a "
        "`require` or `from` in the tool's checks) is bound to the object the checked call names "
        "whenever both tools take that argument: the search looks for a conversation where the "
        "earlier tool ran in one turn and the guarded tool runs in a later one, so that one "
        "order's answer opens another order's call.",
        does_not_prove="The same stale read within a single turn (a model that reads one order and "
        "acts on another) is not reported separately; binding the guard fixes both.",
        owasp=("LLM01:2026", "ASI01:2026"),
        fix="Bind the guard of '{tool}' to the call: `same: {argument}` on the fact or check, or "
        "`bind: {{{argument}: {argument}}}` on the `after` rule.",
        nothing_to_read="no order rule, fact or check reads an earlier call",
    ),
    RuleInfo(
        "QG004",
        "Permissive by default",
        BUG,
        False,
        False,
        proves="No rulebook route or rule-sheet row lets a call through when nothing is reported: "
        "each condition is evaluated as the gate would with every fact absent (false) and no "
        "argument or result known; a route that still holds, because a condition reads `not "
        "$fact`, opens the tool by default.",
        does_not_prove="That the facts your code reports are true; a condition on arguments is "
        "left to the call.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Make the condition on '{tool}' hold only when a fact says so: test a fact that is "
        "true when the call may run (`if $order_open`), not one that is true when it may not.",
        nothing_to_read="no rulebook is declared",
    ),
    RuleInfo(
        "QG005",
        "Unshippable policy",
        BUG,
        True,
        False,
        proves="The rulebook compiles, and every tool its flows or rows govern is a tool of the "
        "catalogue: otherwise the agent cannot hold it and does not start (`RulebookNotHeld`).",
        does_not_prove="That the rulebook says what you meant; the other rules read that.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Fix the rulebook at this line so that it compiles against this catalogue "
        "(`stalwart rules compile` names every problem).",
        nothing_to_read="no rulebook is declared",
    ),
    RuleInfo(
        "QG006",
        "Unverified region",
        BUG,
        False,
        False,
        proves="Nothing is reported clean that was not decided: an obligation the search could not "
        "answer (its state budget ran out) and a step that a route reaches only beyond the stated "
        "depth or number of turns are reported here, as undecided.",
        does_not_prove="Anything about the undecided region itself: raise the depth, the turns or "
        "the state budget, or split the graph, and prove again.",
        owasp=("LLM06:2026", "ASI10:2026"),
        fix="Prove with a larger depth or more turns (`--depth`, `--turns`), or make the graph "
        "smaller, so that every obligation is decided.",
    ),
    RuleInfo(
        "QG007",
        "Read before written",
        VULNERABILITY,
        False,
        True,
        proves="No rulebook condition reads a variable before the statement of its flow that "
        "writes it: at the gate such a read sees whatever an earlier run left behind (a stale "
        "result), not the value the flow meant.",
        does_not_prove="Variables written by other flows in ways the compiler cannot follow; "
        "those already fail closed at the gate.",
        owasp=("LLM06:2026", "ASI06:2026"),
        fix="Move the statement that writes `${variable}` above the condition that reads it.",
        nothing_to_read="no rulebook is declared",
    ),
    RuleInfo(
        "QG008",
        "Call without execute",
        VULNERABILITY,
        False,
        True,
        proves="Every place the rulebook names a tool of the catalogue is a call (`execute "
        "<tool>` or `bot execute_<tool>`): a `bot` line or a call of a flow that only names the "
        "tool governs nothing, so the flow does not guard the tool it seems to.",
        does_not_prove="That a bot message with a tool-like name was not meant as plain speech.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Write the call as `execute {tool}` (or `bot execute_{tool}`).",
        nothing_to_read="no rulebook is declared",
    ),
    RuleInfo(
        "QG009",
        "Undefined bot message",
        VULNERABILITY,
        False,
        True,
        proves="Every bot message a Colang 1.0 flow says by name is defined in the file (or is "
        "the built-in `refuse`): an undefined message is written by a model at run time, so the "
        "words a refusal or a warning carries are the model's.",
        does_not_prove="Colang 2.x `bot` flows, which come from libraries the proof does not read.",
        owasp=("LLM05:2026", "ASI09:2026"),
        fix="Define the message: `define bot {message}` with the exact words to say.",
        nothing_to_read="no rulebook in Colang 1.0 says a bot message by name",
    ),
    RuleInfo(
        "QG010",
        "Dead action",
        VULNERABILITY,
        False,
        True,
        proves="Every tool call the rulebook writes can be reached -- not after a `stop`, not "
        "under a condition that never holds, not in a flow nothing starts -- and names a tool "
        "some agent can call: otherwise the conditions around it govern nothing, and where it "
        "was the tool's only route the gate refuses every call while the flow reads as if it "
        "allowed some.",
        does_not_prove="Conditions that can never hold for reasons of value (`$a > 5 and $a < "
        "3`) unless they are constants.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Make the call to '{tool}' reachable, or remove it.",
        nothing_to_read="no rulebook is declared",
    ),
    RuleInfo(
        "QG011",
        "Confused deputy",
        VULNERABILITY,
        True,
        True,
        proves="After an agent of lower privilege hands a turn off, no tool of an agent of higher "
        "privilege runs in that turn without a person's yes: the search tracks the lowest "
        "privilege that drove the turn.",
        does_not_prove="That the person who says yes reads what they approve.",
        owasp=("LLM06:2026", "ASI03:2026"),
        fix="Have a person confirm '{tool}' when '{agent}' acts for a lower-privilege agent, or "
        "do not hand off to '{agent}' from there.",
        nothing_to_read="no agent hands off to another",
    ),
    RuleInfo(
        "QG012",
        "Cascading injection",
        VULNERABILITY,
        True,
        True,
        proves="After a tool that reads from outside ran in the session, no write chosen by a "
        "model (or by a team's step) runs without a person's yes: content from outside cannot "
        "steer a write through the model, in this agent or in one it hands off to.",
        does_not_prove="Outside content that reaches the model without a `reads_outside` label.",
        owasp=("LLM01:2026", "ASI01:2026", "ASI08:2026"),
        fix="Keep the `outside_content` check switched on and do not lower the trust '{tool}' "
        "requires, so that a write after reading from outside goes to a person.",
        nothing_to_read="no tool reads from outside",
    ),
    RuleInfo(
        "QG013",
        "Irreversible before undoable",
        BUG,
        False,
        False,
        proves="No write with an undo can only run after an irreversible write: when it fails, "
        "the run's undo would leave the irreversible step done. The search asks whether the "
        "undoable write is reachable at all without the irreversible one before it.",
        does_not_prove="Orders that merely can happen; only an order every route imposes is "
        "reported, and it is looked for where the order rules, the rulebook or the graph's shape "
        "can impose it (an order imposed only by the way other conditions combine is not "
        "looked for).",
        owasp=("LLM06:2026", "ASI08:2026"),
        fix="Put '{irreversible}' after '{tool}': the irreversible step goes last, once "
        "everything that can fail has run.",
        nothing_to_read="no tool is declared irreversible, or no write has an undo",
    ),
    RuleInfo(
        "QG014",
        "Order rule escapable",
        VULNERABILITY,
        True,
        True,
        proves="A tool's order rules hold on every route: no run reaches the tool before a tool "
        "it must follow (`after`), after one it must not follow (`not_after`), or beyond its "
        "`at_most`.",
        does_not_prove="Sequences your order rules do not describe.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Keep the `order` check switched on and route '{tool}' through its tool check.",
        nothing_to_read="no tool declares an order rule",
    ),
    RuleInfo(
        "QG015",
        "Undeclared route",
        BUG,
        False,
        False,
        proves="Every edge the graph takes is declared: a router or a model reaches only the "
        "tools its agent lists, an agent hands off only to agents in its `hands_off_to`, and a "
        "team's step goes only where its `routes` say.",
        does_not_prove="That the declarations are what you intended; the proof follows an "
        "undeclared edge as if it were declared.",
        owasp=("LLM06:2026", "ASI10:2026"),
        fix="Declare the route (add the tool to the agent, the agent to `hands_off_to`, or the "
        "step to `routes`) or remove the edge.",
    ),
    RuleInfo(
        "QG016",
        "Unmodelled path",
        VULNERABILITY,
        True,
        True,
        proves="Every step a run can reach is modelled: a team's step that declares no routes "
        "could go anywhere, including to a tool without its check, so reaching it is a finding.",
        does_not_prove="What the team's code does inside a step; only the routes it declares.",
        owasp=("LLM06:2026", "ASI10:2026"),
        fix="Declare the routes of '{node}' (`routes: [...]`), so the proof can follow them.",
    ),
    RuleInfo(
        "QG017",
        "Model writes code that runs",
        VULNERABILITY,
        True,
        True,
        proves="No call chosen by a model (or a team's step) with an argument declared as code or "
        "a shell command runs without a person's yes. A write already goes to a person, since "
        "the model wrote the value; a read does not.",
        does_not_prove="Code in arguments that are not declared as code.",
        owasp=("LLM05:2026", "ASI05:2026"),
        fix="Have a person confirm '{tool}' (make it a write), or take the code out of the "
        "model's hands: a fixed set of operations instead of an argument `{argument}`.",
        nothing_to_read="no argument is declared as code or a shell command",
    ),
    RuleInfo(
        "QG018",
        "Model writes a query or a destination",
        VULNERABILITY,
        False,
        True,
        proves="No call chosen by a model (or a team's step) with an argument declared as SQL, a "
        "query, a path, a URL or a template runs without a person's yes. A URL argument the tool "
        "check reads as a host (its name or its `format` says so), in a tool not declared "
        "`sends_out`, is held at run time: the `destinations` check refuses every destination "
        "in it, so while that check is on the proof does not report the call as running. A URL "
        "a read declares it `fetches` is not held there (the address check stops private and "
        "metadata addresses, not a public one the model chose), so it is reported.",
        does_not_prove="Queries or destinations in arguments not declared as such; that a URL the "
        "runtime lets through (a relative path, a name with no dot) is harmless.",
        owasp=("LLM05:2026", "ASI02:2026"),
        fix="Have a person confirm '{tool}', or replace `{argument}` with parameters the tool "
        "builds the query or destination from.",
        nothing_to_read="no argument is declared as SQL, a query, a path, a URL or a template",
    ),
    RuleInfo(
        "QG019",
        "Confidential data leaves",
        VULNERABILITY,
        False,
        True,
        proves="After a tool declared confidential ran, no tool that sends something out runs, "
        "chosen by a model, without a person's yes.",
        does_not_prove="Confidential data that leaves through the reply to the person.",
        owasp=("LLM02:2026", "ASI02:2026"),
        fix="Have a person confirm '{tool}' in sessions that read '{source}', or do not give "
        "both tools to one agent.",
        nothing_to_read="no tool is declared confidential",
    ),
    RuleInfo(
        "QG020",
        "Retrieval not bound to the user",
        VULNERABILITY,
        False,
        True,
        proves="Every retrieval from a store declared multi-tenant is bound to the user: a tool "
        "that reads such a store without `bound_to_user` lets the call (and so a model) name "
        "another tenant's data.",
        does_not_prove="That the store enforces the binding; only that the tool declares it.",
        owasp=("LLM08:2026", "ASI03:2026"),
        fix="Take the tenant of '{tool}' from the user's identity, not from its arguments, and "
        "declare it `bound_to_user`.",
        nothing_to_read="no retrieval from a store declared multi-tenant",
    ),
    RuleInfo(
        "QG021",
        "Untrusted content persisted",
        VULNERABILITY,
        False,
        True,
        proves="Content from outside is not written into a store declared persistent from which "
        "a tool reads it back without `reads_outside`: the label would be lost, and a later "
        "session would trust what an outsider wrote.",
        does_not_prove="What the stored content says.",
        owasp=("LLM04:2026", "ASI06:2026"),
        fix="Declare `reads_outside` on every tool that reads '{store}', or do not let '{tool}' "
        "run after reading from outside.",
        nothing_to_read="no tool is declared to write a store declared persistent",
    ),
    RuleInfo(
        "QG022",
        "Rail with a published advisory",
        VULNERABILITY,
        True,
        True,
        proves="No flow or import of the rulebook is a rail that a published advisory names (the "
        "advisories the engine ships, and any you give).",
        does_not_prove="Rails no advisory describes yet.",
        owasp=("LLM03:2026", "ASI04:2026"),
        fix="Replace the rail '{rail}' as advisory {advisory} says.",
        nothing_to_read="no rulebook is declared",
    ),
    RuleInfo(
        "QG023",
        "Unbounded loop",
        BUG,
        False,
        False,
        proves="Every cycle through a model or a tool step is bounded by something the graph "
        "declares: a budget for the run or the agent, or a counter on an edge (`exit_after`). The "
        "search looks for a state of the run that can repeat within one turn.",
        does_not_prove="That the budget is small enough for your costs.",
        owasp=("LLM06:2026", "ASI08:2026"),
        fix="Declare a budget for the agent or the run, or add an exit the model cannot avoid -- "
        "a counter in the state, declared on the edge as exit_after.",
    ),
    RuleInfo(
        "QG101",
        "Unchecked action",
        HOTSPOT,
        False,
        False,
        proves="Every write a model can choose has a rule of its own (an order rule, a check, or "
        "a rulebook condition); otherwise only a person's yes stands between the model and it.",
        does_not_prove="That the person is enough, or that the rule is the right one.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Give '{tool}' a rule of its own: an order rule, a check, or a rulebook flow that "
        "decides when it may run.",
        nothing_to_read="no tool writes",
    ),
    RuleInfo(
        "QG104",
        "Check missing against its peers",
        HOTSPOT,
        False,
        False,
        proves="A tool does not lack a rule that most of its peers (tools of the same kind taking "
        "the same arguments, at least two of them) carry.",
        does_not_prove="That the peers are right.",
        owasp=("LLM06:2026", "ASI02:2026"),
        fix="Give '{tool}' the rule its peers have ({feature}), or say why it needs none.",
        nothing_to_read="no tool writes",
    ),
    RuleInfo(
        "QG105",
        "Unrecoverable write",
        HOTSPOT,
        False,
        False,
        proves="A write with no undo that is not irreversible does not run in a run with another "
        "write: when a later step of that run fails, it is the one write that cannot be undone.",
        does_not_prove="That an undo really undoes.",
        owasp=("LLM03:2026", "ASI08:2026"),
        fix="Give '{tool}' an undo -- `undo:` in agent.yaml or `compensation` in the catalogue, "
        "which may be the tool itself with its arguments swapped -- or say a failed run may leave "
        "it done (`undo: none`), or mark it irreversible.",
        nothing_to_read="no tool writes",
    ),
    RuleInfo(
        "QG106",
        "Unpinned tool source",
        HOTSPOT,
        False,
        False,
        proves="Every tool that declares a source or a server, and every module the catalogue "
        "declares, is pinned (a version or a digest), so what was proved is what runs.",
        does_not_prove="That the pinned code is safe.",
        owasp=("LLM03:2026", "ASI04:2026"),
        fix="Pin '{subject}' to a version or a digest (`pin:` on the tool in agent.yaml).",
        nothing_to_read="no tool declares a source or a server, and the catalogue declares no "
        "modules",
    ),
    RuleInfo(
        "QG107",
        "Unauthenticated agent channel",
        HOTSPOT,
        False,
        False,
        proves="Every remote channel an agent declares requires authentication.",
        does_not_prove="That the authentication is strong.",
        owasp=("LLM06:2026", "ASI07:2026"),
        fix="Require authentication on the channel of '{agent}' (`token`, `mtls` or "
        "`oauth` as the `auth` of the agent's `channel` in agent.yaml).",
        nothing_to_read="no agent in the catalogue declares a remote channel",
    ),
    RuleInfo(
        "QG312",
        "Engine disagreement",
        BUG,
        True,
        False,
        proves="Every obligation is decided by two independent methods -- an explicit-state "
        "search and a fixpoint over the graph -- and both give the same answer at the same "
        "depth; a disagreement means one of them is wrong, so the result cannot be trusted.",
        does_not_prove="That two methods that agree are both right.",
        owasp=(),
        fix="Report this graph to the Stalwart maintainers: it exposes a defect of the prover.",
    ),
)

OVERLAY = "a graph document or `--overlay`"
#: What each rule reads, by its agent.yaml key (and the catalogue and rulebook the file names);
#: a graph document or overlay (`--overlay`) may say the same under its own names.
READS: Mapping[str, str] = {
    "QG001": "agents' `tools` (each becomes router, model, check and tool steps), and the team's own "
    "steps and edges: `steps.<id>` (`agent`, `from`, `routes`) and `edges:` in agent.yaml (or "
    f"`nodes`, `edges` from {OVERLAY}).",
    "QG002": "the edges out of each tool check and each person's step (agent.yaml's `edges:` may "
    "add one), the rulebook's flows and routes with their conditions (`rulebook:`), and "
    "`settings.checks` (`your_rules`).",
    "QG003": "tools' `after` rules and their `bind`, `checks` with `require`/`from` and `same`, "
    "`facts:` with `from` and `same`, and the arguments each tool's `parameters` declare.",
    "QG004": "the rulebook's routes and rule-sheet rows and their conditions (`rulebook:`).",
    "QG005": "the rulebook (`rulebook:`: Colang, a rule sheet, or a compiled folder) and the "
    "catalogue's tools.",
    "QG006": "nothing of its own: what the two engines could not decide within `--depth`, "
    "`--turns` and the state budget.",
    "QG007": "the rulebook's flows: the statements that write a variable and the conditions that "
    "read it (`rulebook:`).",
    "QG008": "the rulebook's flows: every place they name a tool of the catalogue (`rulebook:`).",
    "QG009": "a Colang 1.0 rulebook's `bot` lines and `define bot` messages (`rulebook:`).",
    "QG010": "the rulebook's flows: `stop`, the conditions around each call, what starts each "
    "flow, and agents' `tools` (`rulebook:`).",
    "QG011": "agents' `privilege` and `hands_off_to`, and the checks' confirmations.",
    "QG012": "tools' `reads_outside`, `kind` (a write), `requires_trust`, what lets a write run "
    "without a person (a rule-sheet row `allow` in `rulebook:`), `settings.checks` "
    "(`outside_content`), `settings.label_trust`, and the agents' `hands_off_to`.",
    "QG013": "tools' `irreversible`, `undo` / `compensation` (and agent.yaml's `undo:`).",
    "QG014": "tools' `after`, `not_after` and `at_most`, `settings.checks` (`order`), and the "
    "routes that reach a tool (agent.yaml's `steps:` and `edges:`).",
    "QG015": "agents' `tools` and `hands_off_to`, and the team's steps' `routes` and the edges "
    f"(agent.yaml's `steps:` and `edges:`, or {OVERLAY}).",
    "QG016": "the team's own steps: `steps.<id>` in agent.yaml, a step without `routes` "
    f"(or `nodes` of kind `opaque` from {OVERLAY}).",
    "QG017": "arguments declared as code or a command: the `format` of the argument in a tool's "
    "`parameters` (`code`, `python`, `javascript`, `shell`, `bash`, `command`, or "
    "`contentMediaType: text/x-python`, `application/x-sh`, ...), or `declarations.arguments` "
    f"from {OVERLAY}.",
    "QG018": "arguments declared as SQL, a query, a path, a URL or a template: the `format` of the "
    "argument in a tool's `parameters` (`sql`, `query`, `path`, `uri` / `url`, `uri-template` / "
    "`template`, or `contentMediaType: application/sql`), tools' `kind` and `fetches`, and "
    f"`settings.checks` (`destinations`); or `declarations.arguments` from {OVERLAY}.",
    "QG019": "tools' `confidential: true` and `kind` (`sends_out`), in agent.yaml (or "
    f"`declarations.tools` from {OVERLAY}).",
    "QG020": "`stores.<store>.multi_tenant`, and tools' `reads_store` and `bound_to_user`, in "
    f"agent.yaml (or `declarations` from {OVERLAY}).",
    "QG021": "`stores.<store>.persistent`, tools' `writes_store`, `reads_store` and "
    f"`reads_outside`, in agent.yaml (or `declarations` from {OVERLAY}).",
    "QG022": "the rulebook's flows and imports (`rulebook:`), against the advisories the engine "
    "ships and agent.yaml's own `advisories:` (`{id, rails, imports, summary, instead}`).",
    "QG023": "`budget:` (`run`, `agents`) in agent.yaml, and `exit_after` / `budget` on an edge "
    f"(agent.yaml's `edges:` or a step's `routes`, or {OVERLAY}).",
    "QG101": "tools' `kind` (a write), their `after` / `not_after` / `at_most`, `checks`, and the "
    "rulebook's conditions.",
    "QG104": "tools' `kind`, the arguments their `parameters` declare, and the rules each carries.",
    "QG105": "tools' `kind`, `undo` / `compensation` and `irreversible` (and agent.yaml's "
    "`undo:`).",
    "QG106": "tools' `source` / `server` and `pin` in agent.yaml (or `declarations.tools` and "
    f"`declarations.modules` from {OVERLAY}).",
    "QG107": "agents' `channel: {url, auth}` in agent.yaml (or `declarations.agents` from "
    f"{OVERLAY}).",
    "QG312": "nothing of its own: the answers of the two engines to every other rule's questions.",
}

BY_ID: Mapping[str, RuleInfo] = {rule.id: rule for rule in REGISTRY}
IDS: tuple[str, ...] = tuple(rule.id for rule in REGISTRY)


def rule(rule_id: str) -> RuleInfo:
    """The rule with this id."""
    return BY_ID[rule_id]


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_rules_table(registry: Iterable[RuleInfo] = REGISTRY) -> str:
    """The Markdown table of the rules, as the docs print it."""
    lines = [
        "| Rule | Title | Type | Fails the gate | Stops `Agent(...)` |",
        "|---|---|---|---|---|",
    ]
    for info in registry:
        lines.append(
            f"| `{info.id}` | {_cell(info.title)} | {info.type} | {_yes(info.fails_gate)} | "
            f"{_yes(info.stops_agent)} |"
        )
    return "\n".join(lines) + "\n"


#: Where the console shows a rule's page (SARIF's `helpUri`, the CLI's `--explain` name it).
RULE_PAGE = "/proofs/rules/{id}"


def rule_page_path(rule_id: str) -> str:
    """The console path of a rule's page (`/proofs/rules/QG011`)."""
    return RULE_PAGE.format(id=rule_id)


def rule_page_fields(info: RuleInfo) -> list[tuple[str, str]]:
    """A rule's page, as (heading, text) pairs: the one content `--explain` and the console show."""
    return [
        ("Type", f"{info.type}, severity {info.severity}"),
        ("Fails the gate", _yes(info.fails_gate)),
        ("Stops Agent(...)", _yes(info.stops_agent)),
        ("OWASP", ", ".join(info.owasp) if info.owasp else "none"),
        ("Proves", info.proves),
        ("Does not prove", info.does_not_prove),
        ("Reads", info.reads),
        ("Fix", info.fix_template),
        ("Example", example_text(info.id)),
    ]


#: Where the repository keeps, for a rule, an agent that raises it and its fixed twin.
EXAMPLE = "examples/proof/{id}/{variant}/agent.yaml"
#: The rules no agent file can raise, and why (the README's list says the same).
NOT_WRITABLE: Mapping[str, str] = {
    "QG312": "none: only two engines that answer one question differently raise it, which no agent "
    "file can plant",
}


def example_path(rule_id: str, variant: str) -> str:
    """The example agent file of a rule (`raises` or `fixed`), relative to the repository."""
    return EXAMPLE.format(id=rule_id, variant=variant)


def example_text(rule_id: str) -> str:
    """What a rule's page says of its example: the file that raises it and the one that does not."""
    if rule_id in NOT_WRITABLE:
        return NOT_WRITABLE[rule_id]
    return (
        f"`{example_path(rule_id, 'raises')}` raises it; `{example_path(rule_id, 'fixed')}`, "
        "its fixed twin, does not (`stalwart verify` each, as its second line says)"
    )


def render_rule_text(info: RuleInfo) -> str:
    """A rule's page as text: what `stalwart verify --explain QG011` prints."""
    lines = [f"{info.id} {info.title}", ""]
    for heading, text in rule_page_fields(info):
        lines.append(f"{heading}: {text}")
    lines.extend(["", f"Console: {rule_page_path(info.id)}"])
    return "\n".join(lines) + "\n"


def render_rules_reference(registry: Iterable[RuleInfo] = REGISTRY) -> str:
    """A Markdown section per rule: what it proves, what it does not, its tags and its fix."""
    parts: list[str] = []
    for info in registry:
        tags = ", ".join(info.owasp) if info.owasp else "none"
        parts.append(
            f"## {info.id} {info.title}\n\n"
            f"{info.type}, severity {info.severity}; fails the gate: {_yes(info.fails_gate)}; "
            f"stops `Agent(...)`: {_yes(info.stops_agent)}. OWASP: {tags}.\n\n"
            f"**Proves.** {info.proves}\n\n"
            f"**Does not prove.** {info.does_not_prove}\n\n"
            f"**Reads.** {info.reads}\n\n"
            f"**Fix.** {info.fix}\n\n"
            f"**Example.** {example_text(info.id)}.\n"
        )
    return "\n".join(parts)
