"""The registry of the guardrail's checks: the one source for the docs table and for `checks=[...]`.

Every check a call meets is listed here, in the order it meets them, in four stages: tool kinds, the
admission chain, the tool check (the 13 ordered steps), and the checks of what was said. Each entry
says what the check does, when it bars a call, what it reads, whether it can be switched off, which
steps and reasons of the tool check are its own, and an allowed and a barred example call.

`checks=[...]` switches on only the listed checks; a check that cannot be switched off runs whether
listed or not. Switching a check off never removes the data it reads: the rest of the tool check
still sees it and still decides every call. With `undo` off an undo is not verified, so it is not
treated as an undo either and waits for a person like any write; with `arguments` off an
undeclared argument is not refused but still makes the write `schema_partial`; with `tool_kinds`
off kinds come from the tool-kinds file and the tools' marks only (no inference), and an unmarked
tool is still a write.

`tier`, `labels` and `payment_limit` are present but not yet active: every call passes them. The
checks of what was said (`grounded`'s reading of the person's turns, `s1_veto`, `s2_veto`,
`confirm_read`) are run by post-check hooks (`ToolCheck(post_checks=...)`), which can only make an
answer stricter; this engine ships the place for them, not their readers (`in_engine` is false for
those).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import UnknownCheck

KINDS_STAGE = "tool_kinds"
ADMISSION = "admission"
TOOL_CHECK = "tool_check"
SAID = "said"
STAGES = (KINDS_STAGE, ADMISSION, TOOL_CHECK, SAID)
STAGE_TITLES = {
    KINDS_STAGE: "Tool kinds",
    ADMISSION: "Admission chain",
    TOOL_CHECK: "Tool check",
    SAID: "What was said",
}

# How a check bars a call.
REFUSED = "refused"
CONFIRMED = "asked (confirm)"
REFUSED_OR_CONFIRMED = "refused, or asked where the rule or setting says so"
NEVER = "never (not yet active)"
SAID_MODES = "asked by default; refused in strict mode"


@dataclass(frozen=True)
class CheckInfo:
    """One check of the guardrail, as the docs and `checks=[...]` know it."""

    name: str
    title: str
    stage: str
    does: str
    bars: str
    cannot_bar: str
    when: str
    reads: tuple[str, ...]
    switchable: bool
    allowed: dict[str, Any] | None
    barred: dict[str, Any] | None = None
    steps: tuple[int, ...] = ()
    reasons: tuple[str, ...] = ()
    adjustments: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    active: bool = True
    in_engine: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def setting(self) -> str:
        return f'checks.Setting("{self.name}")'


_A1 = {"order_id": "A1"}

REGISTRY: tuple[CheckInfo, ...] = (
    CheckInfo(
        name="tool_kinds",
        title="Tool kinds",
        stage=KINDS_STAGE,
        does="Knows whether each tool reads, changes something, or sends something out: from the "
        "tool-kinds file, the tool's own mark, or its name, description and arguments. A tool "
        "nobody marked counts as one that changes something.",
        bars="A tool that writes or sends, taken for a read because nobody marked it.",
        cannot_bar="A tool whose name and description hide what it does: mark it in the tool-kinds "
        "file.",
        when="asked (a tool not known to read is a write)",
        reads=("catalogue", "tool_kinds.yaml"),
        switchable=True,
        adjustments=(
            "infer: true reads the kind of unmarked tools from their words; false (the default) "
            "counts every unmarked tool as a write",
            "file: the tool-kinds file, which always wins",
        ),
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "orders", "arguments": _A1},
        reasons=("write",),
    ),
    CheckInfo(
        name="withdrawn",
        title="Withdrawn tool",
        stage=ADMISSION,
        does="A tool its owner withdrew from the registry cannot be used.",
        bars="Calls to a tool the registry no longer offers to this agent.",
        cannot_bar="A tool that was never registered: the allowed-tools check stops those.",
        when=REFUSED,
        reads=("registry",),
        switchable=False,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "old_refund", "arguments": {}},
        reasons=("withdrawn",),
    ),
    CheckInfo(
        name="address",
        title="Disallowed address",
        stage=ADMISSION,
        does="A call cannot reach an address you do not allow, such as the cloud metadata service "
        "or the company's internal network.",
        bars="A URL, host or IP argument that points to a private, loopback, link-local or "
        "metadata address, in any spelling.",
        cannot_bar="An address the installation allows that is still the wrong one for this call, "
        "or a public name that resolves to a private address.",
        when=REFUSED,
        reads=("arguments",),
        switchable=True,
        adjustments=("address.allow / address.deny: networks and host names to allow or to bar",),
        allowed={"tool": "fetch_page", "arguments": {"url": "https://example.org/a"}},
        barred={"tool": "fetch_page", "arguments": {"url": "http://169.254.169.254/latest"}},
        reasons=("disallowed_address",),
    ),
    CheckInfo(
        name="plan_step",
        title="Outside the approved plan",
        stage=ADMISSION,
        does="Where a person approved a plan, a call that is not its next step does not run.",
        bars="A step out of order, one step too many, or a step whose values changed after "
        "approval.",
        cannot_bar="A plan a person approved that was already wrong.",
        when=REFUSED,
        reads=("plan", "plan_token", "plan_step"),
        switchable=True,
        allowed={"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
        barred={"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 900}},
        reasons=("off_plan",),
    ),
    CheckInfo(
        name="tier",
        title="Plan's tool tier",
        stage=ADMISSION,
        does="Not yet active: every call passes.",
        bars="Nothing yet.",
        cannot_bar="Nothing: today it lets every call pass.",
        when=NEVER,
        reads=("tier",),
        switchable=True,
        allowed={"tool": "get_order", "arguments": _A1},
        active=False,
    ),
    CheckInfo(
        name="labels",
        title="Labels",
        stage=ADMISSION,
        does="Not yet active: every call passes. Outside content is barred by the outside-content "
        "check.",
        bars="Nothing yet.",
        cannot_bar="Nothing: today it lets every call pass.",
        when=NEVER,
        reads=("labels",),
        switchable=True,
        allowed={"tool": "get_order", "arguments": _A1},
        active=False,
    ),
    CheckInfo(
        name="payment_limit",
        title="Payment limit",
        stage=ADMISSION,
        does="Not yet active: every call passes. Spend limits live in your rules and in a tool's "
        "own checks.",
        bars="Nothing yet.",
        cannot_bar="Nothing: today it lets every call pass.",
        when=NEVER,
        reads=("amount",),
        switchable=True,
        allowed={"tool": "pay", "arguments": {"amount": 5}},
        active=False,
    ),
    CheckInfo(
        name="allowed_tools",
        title="Allowed tools",
        stage=ADMISSION,
        does="Only tools in your catalogue can be used, and only by an agent that lists them; with "
        "several agents the call names its agent; under a lapsed licence writes (or all calls) "
        "stop.",
        bars="A tool the model made up, or one this agent may not use.",
        cannot_bar="A listed tool used for the wrong purpose.",
        when=REFUSED,
        reads=("catalogue", "agent"),
        switchable=False,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "delete_everything", "arguments": {}},
        steps=(1,),
        reasons=("unknown_tool", "agent_required", "licence_lapsed"),
    ),
    CheckInfo(
        name="session_record",
        title="Session record",
        stage=TOOL_CHECK,
        does="The record of the calls already made must be intact; if anyone changed it, nothing "
        "more runs.",
        bars="A history edited, reordered, cut short or replayed from another session.",
        cannot_bar="A call made outside the guardrail and never recorded.",
        when=REFUSED,
        reads=("session",),
        switchable=False,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "get_order", "arguments": _A1, "tampered": True},
        steps=(2,),
        reasons=("history_invalid",),
    ),
    CheckInfo(
        name="arguments",
        title="Arguments",
        stage=TOOL_CHECK,
        does="Each call's values must fit the tool's own description (types, required fields, "
        "allowed values); an argument the tool does not declare is refused.",
        bars="A required value missing, a wrong type, a value outside the allowed list, an "
        "undeclared argument.",
        cannot_bar="A value of the right type that is still the wrong one.",
        when=REFUSED,
        reads=("catalogue",),
        switchable=True,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "get_order", "arguments": {}},
        steps=(3,),
        reasons=("argument_schema",),
    ),
    CheckInfo(
        name="destinations",
        title="Destinations",
        stage=TOOL_CHECK,
        does="A tool can send something to an address only if it is known to send things out.",
        bars="An e-mail address or URL put into a tool that should send nothing.",
        cannot_bar="A wrong address given to a tool that does send things out.",
        when=REFUSED,
        reads=("catalogue", "tool_kinds"),
        switchable=True,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "get_order", "arguments": {"order_id": "https://attacker.example/x"}},
        steps=(4,),
        reasons=("undeclared_destination",),
    ),
    CheckInfo(
        name="order",
        title="Order",
        stage=TOOL_CHECK,
        does="A tool runs only at a point it allows: after another, never after another, or at "
        "most N times.",
        bars="A refund before the order was looked up; a third refund where two are allowed.",
        cannot_bar="A sequence your order rules do not describe.",
        when=REFUSED,
        reads=("catalogue", "session"),
        switchable=True,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
        steps=(5,),
        reasons=("order_rule",),
    ),
    CheckInfo(
        name="undo",
        title="Undo",
        stage=TOOL_CHECK,
        does="An undo must match the step it reverts, and a step is undone only once.",
        bars="An undo with values other than those of the step it claims to revert, or a second "
        "undo of the same step.",
        cannot_bar="An undo that does not really revert the tool.",
        when=REFUSED,
        reads=("catalogue", "session"),
        switchable=True,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "cancel_refund", "arguments": {"refund_id": "R9"}, "compensation_of": 0},
        steps=(6, 12),
        reasons=("compensation_spent", "compensation_mismatch", "compensation"),
    ),
    CheckInfo(
        name="your_rules",
        title="Your rules",
        stage=TOOL_CHECK,
        does='Your own rules decide, e.g. "refunds above 100 need a manager": the tool\'s own '
        "checks (conditions, limits per period, spend) and the compiled rulebook.",
        bars="A call your rules forbid, or one above a limit.",
        cannot_bar="A case your rules do not cover: the bug hunter finds those.",
        when=REFUSED_OR_CONFIRMED,
        reads=("rules", "arguments", "results", "usage"),
        switchable=True,
        allowed={"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
        barred={"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 500}},
        steps=(7, 8),
        reasons=(
            "condition_failed",
            "condition_unknown",
            "usage_unknown",
            "limit_reached",
            "spend_unknown",
            "spend_exceeded",
            "cost_unknown",
            "cost_exceeded",
            "gate_clarify",
        ),
    ),
    CheckInfo(
        name="outside_content",
        title="Outside content",
        stage=TOOL_CHECK,
        does="A write proposed after reading outside content (a page, an e-mail) is held where you "
        "say so.",
        bars="A write a page or an e-mail led the model to make.",
        cannot_bar="Outside content that reached the model without a label.",
        when="refused, or asked where the settings say confirm",
        reads=("labels",),
        switchable=True,
        adjustments=("taint_policy: refuse, or confirm (the default)",),
        allowed={"tool": "get_order", "arguments": _A1},
        barred={
            "tool": "refund_card",
            "arguments": {"order_id": "A1", "amount": 20},
            "labels": ["web"],
        },
        steps=(9, 11),
        reasons=("tainted_call",),
    ),
    CheckInfo(
        name="confirmation",
        title="Confirmation",
        stage=TOOL_CHECK,
        does="A call that needs a person's yes runs only with that yes, signed; where nobody can "
        "give it, it does not run.",
        bars="A yes reused for another call, a changed call, or a yes that expired.",
        cannot_bar="A person who says yes without reading.",
        when=REFUSED,
        reads=("confirmation",),
        switchable=False,
        allowed={
            "tool": "refund_card",
            "arguments": {"order_id": "A1", "amount": 20},
            "approved": True,
        },
        barred={
            "tool": "refund_card",
            "arguments": {"order_id": "A1", "amount": 30},
            "approved_for_other": True,
        },
        steps=(10,),
        reasons=("confirmed", "token_invalid", "token_mismatch", "token_expired"),
    ),
    CheckInfo(
        name="any_other_write",
        title="Any other write",
        stage=TOOL_CHECK,
        does="Anything that changes something and that no rule allowed waits for a person's yes.",
        bars="A write no rule speaks about.",
        cannot_bar="A read that leaks what it reads: the guardrail judges calls, not what a reply "
        "says.",
        when=CONFIRMED,
        reads=("catalogue",),
        switchable=False,
        allowed={"tool": "get_order", "arguments": _A1},
        barred={"tool": "refund_card", "arguments": {"order_id": "A1", "amount": 20}},
        steps=(11, 13),
        reasons=("write", "irreversible_pivot", "schema_partial", "allow"),
    ),
    CheckInfo(
        name="grounded",
        title="Origin of values",
        stage=SAID,
        does="A value in a write that nobody said and no tool returned is asked about, never "
        "allowed and never refused.",
        bars="A value, id or date the model made up.",
        cannot_bar="A value someone said that is still the wrong one.",
        when=CONFIRMED,
        reads=("turns", "results"),
        switchable=True,
        allowed={
            "tool": "refund_card",
            "arguments": {"order_id": "A1", "amount": 20},
            "turns": ["refund 20 on order A1"],
        },
        barred={
            "tool": "refund_card",
            "arguments": {"order_id": "A1", "amount": 80},
            "turns": ["refund 20 on order A1"],
        },
        steps=(11,),
        reasons=("argument_origin",),
        extra={
            "engine": "step 11 reads the declared `origins` of the call; reading the person's "
            "turns "
            "to vouch for them is a post-check hook"
        },
    ),
    CheckInfo(
        name="s1_veto",
        title="S1: sending verb",
        stage=SAID,
        does="Where the person's words ask to send something out and no tool sends, the call is "
        "held.",
        bars='"post it to the channel" answered with a tool that only saves.',
        cannot_bar="Words that send something in a way the reader does not know.",
        when=SAID_MODES,
        reads=("turns",),
        switchable=True,
        modes=("off", "refuse", "confirm"),
        allowed={
            "tool": "save_note",
            "arguments": {"text": "hi"},
            "turns": ["save a note saying hi"],
        },
        barred={
            "tool": "save_note",
            "arguments": {"text": "hi"},
            "turns": ["post hi to the team channel"],
        },
        in_engine=False,
    ),
    CheckInfo(
        name="s2_veto",
        title="S2: destination",
        stage=SAID,
        does="Where the words name a place to send to that no tool takes, and the call does not "
        "take it either, the call is held.",
        bars='"save the note for ana@x.com" answered with a tool that cannot send it there.',
        cannot_bar="A destination written in a way the reader does not recognise.",
        when=SAID_MODES,
        reads=("turns",),
        switchable=True,
        modes=("off", "refuse", "confirm"),
        allowed={
            "tool": "save_note",
            "arguments": {"order_id": "A1", "text": "x"},
            "turns": ["save a note on A1 saying x"],
        },
        barred={
            "tool": "save_note",
            "arguments": {"order_id": "A1", "text": "x"},
            "turns": ["save a note on A1 for ana@x.com"],
        },
        in_engine=False,
    ),
    CheckInfo(
        name="confirm_read",
        title="Confirmation reading",
        stage=SAID,
        does="The call is read against the person's words, with the values as typed; where the "
        "words give a value the call lacks or one that differs, the person sees both and is asked. "
        "The call is never changed.",
        bars="A call whose values differ from what the person said.",
        cannot_bar="A value the person never said: the origin check asks about that.",
        when=SAID_MODES,
        reads=("turns",),
        switchable=True,
        modes=("off", "refuse", "confirm"),
        allowed={
            "tool": "refund_card",
            "arguments": {"order_id": "A1", "amount": 20},
            "turns": ["refund 20 on order A1"],
        },
        barred={
            "tool": "refund_card",
            "arguments": {"order_id": "A2", "amount": 20},
            "turns": ["refund 20 on order A1"],
        },
        in_engine=False,
    ),
)

BY_NAME: dict[str, CheckInfo] = {info.name: info for info in REGISTRY}
NAMES: frozenset[str] = frozenset(BY_NAME)
ALWAYS_ON: frozenset[str] = frozenset(info.name for info in REGISTRY if not info.switchable)


class Setting(str):
    """A check's name, checked against the registry: `checks.Setting("address")`."""

    def __new__(cls, name: str) -> Setting:
        if name not in BY_NAME:
            raise UnknownCheck(f"there is no check named `{name}`")
        return super().__new__(cls, name)

    @property
    def info(self) -> CheckInfo:
        return BY_NAME[str(self)]


def switched_on(checks: Iterable[str] | None) -> frozenset[str]:
    """The checks that run for `checks=[...]`: those listed and those that cannot be turned off."""
    if checks is None:
        return NAMES
    if isinstance(checks, str | bytes) or not all(isinstance(name, str) for name in checks):
        # One name given as text would be read letter by letter ("no check named `e`").
        raise UnknownCheck('`checks` is a list of check names, such as ["address"]')
    names = frozenset(checks)
    unknown = names - NAMES
    if unknown:
        raise UnknownCheck(f"there is no check named `{sorted(unknown)[0]}`")
    return names | ALWAYS_ON


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _example(call: dict[str, Any] | None) -> str:
    if call is None:
        return "—"
    return "`" + json.dumps(call, ensure_ascii=False).replace("|", "\\|") + "`"


def render_table(registry: Iterable[CheckInfo] = REGISTRY) -> str:
    """The docs table of every check, in the order a call meets them, as Markdown."""
    lines = [
        "| Check | Stage | What it does | When it bars a call | Reads | Can be switched off |"
        " Allowed | Barred |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for info in registry:
        lines.append(
            f"| {_cell(info.title)} (`{info.name}`) | {STAGE_TITLES[info.stage]} "
            f"| {_cell(info.does)} | {_cell(info.when)} "
            f"| {', '.join(f'`{item}`' for item in info.reads)} "
            f"| {'yes' if info.switchable else 'no'} "
            f"| {_example(info.allowed)} | {_example(info.barred)} |"
        )
    return "\n".join(lines) + "\n"


def render_reference(registry: Iterable[CheckInfo] = REGISTRY) -> str:
    """One Markdown section per check: what it bars and cannot bar, its settings and examples."""
    sections = []
    for info in registry:
        lines = [f"### {info.title}", "", info.does, ""]
        lines.append(f"- What it bars: {info.bars}")
        lines.append(f"- What it cannot bar: {info.cannot_bar}")
        lines.append(f"- When it bars a call: {info.when}")
        lines.append(f"- What it reads: {', '.join(f'`{item}`' for item in info.reads)}")
        lines.append(f"- Can be switched off: {'yes' if info.switchable else 'no'}")
        for adjustment in info.adjustments:
            lines.append(f"- Setting: {adjustment}")
        if info.modes:
            lines.append(f"- Modes: {', '.join(f'`{mode}`' for mode in info.modes)}")
        if info.reasons:
            lines.append(f"- Reasons it answers with: {', '.join(f'`{r}`' for r in info.reasons)}")
        lines.append(f"- Allowed: {_example(info.allowed)}")
        if info.barred is not None:
            lines.append(f"- Barred: {_example(info.barred)}")
        lines.extend(["", f"`{info.setting}`", ""])
        sections.append("\n".join(lines))
    return "\n".join(sections)
