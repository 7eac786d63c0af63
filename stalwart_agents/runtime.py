"""The runtime: one session object behind every door, the only place the engines are wired together.

A door -- `LocalSession` (the SDK in this process), the console's sessions API, `Agent.chat`, the
command line, a framework adapter, the MCP gateway -- translates its shapes to a `RuntimeSession`'s
and adds nothing else. What a session holds and runs:

- **Wiring** (`wiring(...)`, shared): the catalogue, loaded and its schemas checked once per content
  digest; the rulebook record; the settings; the router that reads the person's turns; the tool
  check with the checks of what was said (S1, S2, the confirmation reading) plugged in, in the
  modes the settings give (`said: {s1_veto: confirm, ...}`, default `confirm`). Built once per
  (key, catalogue, rulebook, settings) and shared by every session that carries the same content,
  so opening a session costs a digest, not a catalogue load.
- **State** (per session): the signed history and the head it must end at, the person's turns, the
  facts the host gives (`context`), the ledger of writes that ran, the writes of the current run
  (for undo last first), pending approvals.

On every check the runtime **derives the origin of each argument** where it can see it (see
`derive_origins`): where the session holds the person's turns, a value the person typed is `typed`
(from the turn), a value in a recorded result comes from that tool (`tool`, or `outside` for a tool
that reads outside content: never vouched), anything else is the model's; a caller's claim can only
make an origin less trusted. Where no turns were given, a claimed origin stands as the host's word.
The decision's `detail.origins` says, per argument, where its value came from.

A refusal, a block or a failure within a run **undoes the run's earlier writes, last first**: each
compensation is itself checked (`compensation_of`) and run once under its own intent key. A run
begins with each turn the person says (`read`) or with `begin_run()`.

**Decision logs**: a session given a `sink` hands it one record per decision (`check_call`) and
one per call that ran (`run_allowed`), as a plain JSON dict redacted through the one credential
table (see `decision_record`). A door that checks a call and then executes it (the MCP gateway,
where its firewall denies, holds or cleans the call) makes one decision, not two: the executor's
check of the same call at the same point of the history, with the same answer, is not logged
again. A sink that raises changes no decision: the record is kept on the
session (`unlogged`) and handed again, in order, before the next one (a durable sink is
`stalwart_agents.spool.Spool`).

`confirm` is answered one way: a person's yes signs a token for exactly the call at this point of
the history (`approve`); in this process an `approver` callback the host supplies asks them
(`wait_for_approval`), and without one nothing runs. The call is then checked again with the token.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from firewall.engine.credentials import redact_jsonable
from guard import engine
from guard.engine import execution
from guard.engine.checks import NAMES
from guard.engine.decision import ALLOW, CONFIRM, REFUSE, Decision
from guard.engine.execution import ExecutionContext
from guard.engine.settings import load_settings
from router.engine.said import leaves, same_value
from stalwart_agents.spool import Record, Spool

#: The settings the runtime reads itself; the rest are the tool check's (`guard.engine.settings`).
RUNTIME_SETTINGS = ("said", "language")
#: What a check takes beside the call itself.
OPTIONS = ("context", "token", "checks", "usage", "now", "cost", "run")
SAID_DEFAULT = {"s1_veto": "confirm", "s2_veto": "confirm", "confirm_read": "confirm"}
#: How much each origin is trusted: a claim may only lower an origin, never raise it.
TRUST = {"typed": 2, "tool": 1, "outside": 0, "model": 0}

Facts = Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None
Approver = Callable[[Mapping[str, Any]], bool]
Function = Callable[[dict[str, Any], ExecutionContext], Any]
Sink = Callable[[dict[str, Any]], None]

log = logging.getLogger(__name__)

#: A record larger than this (its JSON, in bytes) keeps its call's tool but not its arguments or
#: detail: the console refuses larger ones (`STALWART_DECISIONS_MAX_RECORD_BYTES`).
RECORD_MAX_BYTES = 32_768
#: Records a failing sink may leave on a session before the oldest are dropped (and logged).
UNLOGGED_MAX = 10_000


class RuntimeError_(Exception):
    """Base of the runtime's own errors (kept apart from Python's RuntimeError)."""


class HeldOnConsole(RuntimeError_, PermissionError):
    """A write in a session the console holds (`session_held`): a person's yes to it is the
    console's approvers' (its approvals queue, whose signed grant the runtime verifies), never
    one signed in this process, by the host or its approver."""


class SettingsRefused(RuntimeError_):
    """Settings the runtime cannot run with; the message names the setting."""


# -- a framework's run and thread ----------------------------------------------------------------

#: The ids a framework door gives with a call (LangGraph's run id and `thread_id`, the Agents SDK's
#: trace id and group id): shown with the decision, never read by a check.
FRAMEWORK_IDS = ("run_id", "thread_id")
FRAMEWORK_ID_MAX = 128


class FrameworkIdsInvalid(RuntimeError_):
    """Framework ids that cannot be kept; `errors` maps each field path (`run.run_id`) to why."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{path}: {why}" for path, why in sorted(self.errors.items())))


def framework_ids(raw: Any) -> dict[str, str]:
    """The framework's run and thread ids of a call, checked: `{"run_id": ..., "thread_id": ...}`,
    each a printable string of at most 128 characters (empty or absent: not given).
    `FrameworkIdsInvalid` names every field that is wrong."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise FrameworkIdsInvalid({"run": "a mapping of run_id and thread_id"})
    errors: dict[str, str] = {}
    ids: dict[str, str] = {}
    for name, value in raw.items():
        path = f"run.{str(name)[:40]}"
        if name not in FRAMEWORK_IDS:
            errors[path] = "not a framework id: give run_id or thread_id"
        elif value is None or value == "":
            continue
        elif not isinstance(value, str):
            errors[path] = "must be a string"
        elif len(value) > FRAMEWORK_ID_MAX:
            errors[path] = f"at most {FRAMEWORK_ID_MAX} characters"
        elif not value.isprintable():
            errors[path] = "printable characters only"
        else:
            ids[str(name)] = value
    if errors:
        raise FrameworkIdsInvalid(errors)
    return ids


# -- wiring, shared per content ----------------------------------------------------------------


def content_digest(data: Any) -> str:
    """SHA-256 of a JSON value's canonical form (sorted keys, no spaces)."""
    return hashlib.sha256(
        json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()
    ).hexdigest()


@dataclass(frozen=True)
class Sealed:
    """A catalogue or a rulebook record sealed once: its canonical JSON and that JSON's digest.

    Sessions opened with the same sealed object cost a lookup, not a hash of the whole content:
    `seal(agent.catalogue())` once, then open as many sessions with it as you like. It cannot be
    changed after sealing (a changed catalogue is sealed again, and gets a wiring of its own).
    """

    text: str
    digest: str

    def data(self) -> Any:
        return json.loads(self.text)


def seal(data: Any) -> Sealed:
    """Seal a catalogue or a rulebook record (see `Sealed`)."""
    if isinstance(data, Sealed):
        return data
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return Sealed(text, hashlib.sha256(text.encode()).hexdigest())


def unsealed(data: Any) -> Any:
    """The plain JSON value of what may be a sealed object."""
    return data.data() if isinstance(data, Sealed) else data


def split_settings(
    settings: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, str], str]:
    """(the tool check's settings, the said modes, the language) out of one settings mapping."""
    given = dict(settings or {})
    said = given.pop("said", None)
    language = given.pop("language", None) or "en"
    modes = dict(SAID_DEFAULT)
    if said is not None:
        if not isinstance(said, Mapping):
            raise SettingsRefused("said: must map s1_veto, s2_veto, confirm_read to a mode")
        said = dict(said)
        grounded = said.pop("grounded", "confirm")
        if grounded not in ("off", "confirm"):
            raise SettingsRefused(f"said.grounded: runs off or confirm, not `{grounded}`")
        if grounded == "off":  # the origin of values, step 11's `argument_origin`, switched off
            listed = given.get("checks")
            on = list(listed) if isinstance(listed, list) else sorted(NAMES)
            given["checks"] = [name for name in on if name != "grounded"]
        for name, mode in said.items():
            if name not in SAID_DEFAULT:
                raise SettingsRefused(f"said.{name}: is not a check of what was said")
            if mode not in ("off", "refuse", "confirm"):
                raise SettingsRefused(f"said.{name}: runs off, refuse or confirm, not `{mode}`")
            modes[str(name)] = str(mode)
    if language not in ("en", "pt-BR"):
        raise SettingsRefused(f"language: is en or pt-BR, not `{language}`")
    return given, modes, language


# What a session may say about itself when it is opened: only what makes the organisation's
# settings stricter. Anything else (the licence, allowed addresses) is the organisation's alone.
SESSION_SETTINGS = ("taint_policy", "said", "language", "label_trust", "checks", "token_ttl")
_MODE_RANK = {"off": 0, "confirm": 1, "refuse": 2}
_TRUST_RANK = {"outside": 0, "internal": 1, "trusted": 2}


def stricter_settings(organisation: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """The organisation's settings made stricter by a session's own (never looser): the console's
    sessions and a session deciding from a bundle in the agent's process read them alike."""
    merged = dict(organisation)
    if own.get("taint_policy") == "refuse":
        merged["taint_policy"] = "refuse"
    said = dict(merged.get("said") or SAID_DEFAULT)
    for name, mode in (own.get("said") or {}).items():
        if _MODE_RANK.get(mode, 0) > _MODE_RANK[said.get(name, "confirm")]:
            said[name] = mode
    merged["said"] = said
    if own.get("language"):
        merged["language"] = own["language"]
    trust = dict(merged.get("label_trust") or {})
    for label, level in (own.get("label_trust") or {}).items():
        if label not in trust or _TRUST_RANK[level] < _TRUST_RANK[trust[label]]:
            trust[label] = level
    if trust:
        merged["label_trust"] = trust
    if own.get("checks") is not None:
        merged["checks"] = list(own["checks"])
    if own.get("token_ttl"):
        merged["token_ttl"] = min(int(own["token_ttl"]), int(merged.get("token_ttl") or 10**9))
    # An agent file's own engine settings the organisation does not set (its `tool_kinds`, an
    # `address` allowance, ...) stand; one the organisation sets (the licence) is never replaced.
    for name, value in own.items():
        if name not in SESSION_SETTINGS and name not in merged:
            merged[name] = value
    return merged


@dataclass
class Wiring:
    """The engines wired for one content: the tool check (with the said checks) and the router."""

    check: engine.ToolCheck
    router: Any
    modes: dict[str, str]
    language: str
    # What each turn says, read once by this wiring's router (bounded; see `_said`).
    readings: dict[str, Any] = field(default_factory=dict)

    @property
    def catalogue(self) -> Any:
        return self.check.catalogue

    def decide(
        self,
        call: Mapping[str, Any],
        *,
        history: engine.History,
        head: Mapping[str, Any] | None,
        turns: Sequence[str] = (),
        context: Facts = None,
        token: str | None = None,
        checks: Sequence[str] | None = None,
        usage: Mapping[str, Any] | None = None,
        now: Any = None,
        cost: Any = None,
    ) -> Decision:
        """Decide one call with the origins derived here and the person's turns read; `cost` is
        what the host reports the call costs, in cents (the tool's `cost:` counts too)."""
        call = dict(call)
        if not isinstance(history, engine.History) and head is not None:
            try:  # verified once here; the check is then handed the verified history
                history = self.check.load_history(history, head=head)
            except engine.GuardError:
                pass  # the check refuses it (history_invalid), naming what is wrong
        if call.get("compensation_of") is not None:
            # An undo answers to the step it undoes (step 6 holds it to exactly that), not to
            # the person's last turn, which asked for the run and not for its undo.
            turns = ()
        arguments = call.get("arguments")
        origins_detail: dict[str, Any] = {}
        if (
            isinstance(arguments, Mapping)
            and isinstance(call.get("tool"), str)
            and isinstance(history, engine.History)
        ):
            claimed = call.get("origins")
            claimed = claimed if isinstance(claimed, Mapping) else {}
            origins, origins_detail = derive_origins(
                self, arguments, claimed, turns=turns, history=history
            )
            call["origins"] = origins
            known = self.catalogue.tools.get(call["tool"])
            for name in known.free_text if known is not None else ():
                if name in origins_detail:  # the model is expected to write it: not asked about
                    origins_detail[name] = {**origins_detail[name], "free_text": True}
        decision = self.check.check(
            call,
            session=history,
            head=head,
            context=context,
            token=token,
            checks=checks,
            now=now,
            usage=usage,
            turns=list(turns),
            **({"cost": cost} if cost is not None else {}),
        )
        if origins_detail:
            decision = Decision(
                decision.decision,
                decision.reasons,
                {**decision.detail, "origins": origins_detail},
                decision.rule,
            )
        return decision


_WIRING_SIZE = 256
_wirings: OrderedDict[tuple, Wiring] = OrderedDict()
_routers: OrderedDict[tuple, Any] = OrderedDict()
_lock = threading.Lock()


def _remember(table: OrderedDict, key: tuple, value: Any) -> None:
    with _lock:
        table[key] = value
        table.move_to_end(key)
        while len(table) > _WIRING_SIZE:
            table.popitem(last=False)


_catalogues: OrderedDict[tuple, Any] = OrderedDict()


def _catalogue_for(catalogue: Any, digest: str, settings: Any) -> Any:
    """The catalogue loaded, every tool's schema checked, once per content (whatever the key)."""
    if hasattr(catalogue, "tools"):
        return catalogue
    key = (digest, content_digest(settings.tool_kinds), settings.infer)
    with _lock:
        found = _catalogues.get(key)
    if found is None:
        found = engine.load_catalogue(
            unsealed(catalogue), tool_kinds=settings.tool_kinds, infer=settings.infer
        )
        _remember(_catalogues, key, found)
    return found


def _router_for(
    catalogue: Any, catalogue_key: str, rulebook: Any, rulebook_key: str, language: str
):
    from router import engine as router_engine

    key = (catalogue_key, rulebook_key, language)
    with _lock:
        found = _routers.get(key)
    if found is None:
        found = router_engine.Router(catalogue, rulebook=rulebook, language=language)
        _remember(_routers, key, found)
    return found


def wiring(
    catalogue: Mapping[str, Any] | Any,
    *,
    key: bytes,
    rulebook: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    catalogue_digest: str | None = None,
    rulebook_digest: str | None = None,
) -> Wiring:
    """The engines for this content, built once per (key, catalogue, rulebook, settings) and shared.

    `catalogue_digest` / `rulebook_digest` may be given by a caller that already knows them (the
    console keeps them per session), so that nothing is read or hashed again.
    """
    from router import engine as router_engine

    check_settings, modes, language = split_settings(settings)
    if catalogue_digest is None:
        if isinstance(catalogue, Sealed):
            catalogue_digest = catalogue.digest
        elif hasattr(catalogue, "tools"):  # a loaded Catalogue: the object is its identity
            catalogue_digest = f"loaded-{id(catalogue)}"
        else:
            catalogue_digest = content_digest(catalogue)
    if rulebook_digest is None:
        if isinstance(rulebook, Sealed):
            rulebook_digest = rulebook.digest
        else:
            rulebook_digest = content_digest(rulebook) if rulebook else ""
    identity = (
        hashlib.sha256(key).hexdigest(),
        catalogue_digest,
        rulebook_digest,
        content_digest(check_settings),
        tuple(sorted(modes.items())),
        language,
    )
    with _lock:
        found = _wirings.get(identity)
        if found is not None:
            _wirings.move_to_end(identity)
            return found
    loaded_settings = load_settings(check_settings, known_checks=NAMES)
    loaded = _catalogue_for(catalogue, catalogue_digest, loaded_settings)
    rulebook = unsealed(rulebook)
    router = _router_for(loaded, catalogue_digest, rulebook, rulebook_digest, language)
    posts = [
        post
        for post in router_engine.said_checks(router, turns=None, modes=modes)
        if post.name != "grounded"  # the origin of values is derived here, before step 11
    ]
    check = engine.ToolCheck(
        loaded, key=key, rulebook=rulebook, settings=loaded_settings, post_checks=posts
    )
    built = Wiring(check, router, modes, language)
    _remember(_wirings, identity, built)
    return built


# -- origins -------------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:[.\s]\d{3})*(?:,\d+)?(?![\w])|\d+(?:[.,]\d+)?")


def _numbers(text: str) -> set[float]:
    """Every number a turn writes, read the English way and the Brazilian way (`40,00`, `1.234,5`)."""
    found: set[float] = set()
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        for form in (token.replace(",", ""), token.replace(".", "").replace(",", ".")):
            try:
                found.add(float(form.replace(" ", "")))
            except ValueError:
                continue
    return found


def _leaves(value: Any) -> Iterable[Any]:
    """The values inside a result an argument may have been copied from (no nulls or booleans)."""
    return (leaf for leaf in leaves(value) if leaf is not None and not isinstance(leaf, bool))


@dataclass(frozen=True)
class _Said:
    """What one turn says, as the origin check compares values against it."""

    values: tuple[Any, ...]
    numbers: frozenset[float]
    folded: str
    tokens: frozenset[str]


def _said(wired: Wiring, turn: str) -> _Said:
    from router.engine.text import fold

    found = wired.readings.get(turn)
    if found is not None:
        return found
    reading = wired.router.read(turn)
    values: list[Any] = []
    values.extend(value.value for value in reading.values)
    values.extend(value.text for value in reading.values)
    values.extend(value.value for value in reading.texts)
    folded = fold(turn)
    found = _Said(tuple(values), frozenset(_numbers(turn)), folded, frozenset(folded.split()))
    if len(wired.readings) >= 4096:
        wired.readings.clear()  # a bound, not an order: the next checks read their turns again
    wired.readings[turn] = found
    return found


def _typed_in(leaf: Any, said: _Said) -> bool:
    from router.engine.text import fold

    if isinstance(leaf, (int, float)):
        return float(leaf) in said.numbers or any(same_value(leaf, value) for value in said.values)
    text = fold(str(leaf)).strip()
    if not text:
        return True
    return (
        any(same_value(leaf, value) for value in said.values)
        or text in said.tokens
        or (len(text) >= 3 and text in said.folded)
    )


def _returned_in(leaf: Any, result: Any) -> bool:
    """Whether a result holds the value: as one of its values, or written inside its text (a
    number or a name copied out of an e-mail's body counts as coming from that e-mail)."""
    from router.engine.text import fold

    wanted = fold(str(leaf)).strip() if isinstance(leaf, str) else None
    for value in _leaves(result):
        if same_value(leaf, value):
            return True
        if not isinstance(value, str):
            continue
        if isinstance(leaf, (int, float)):
            if float(leaf) in _numbers(value):
                return True
        elif wanted and len(wanted) >= 3 and wanted in fold(value):
            return True
    return False


def _origin_of(
    leaf: Any, readings: Sequence[_Said], entries: Sequence[Any], outside: Mapping[str, Any]
) -> tuple[str, str]:
    """Where one value came from: the latest turn that says it, else the latest result holding it."""
    for index in range(len(readings) - 1, -1, -1):
        if _typed_in(leaf, readings[index]):
            return "typed", f"turn {index}"
    for index in range(len(entries) - 1, -1, -1):
        content = entries[index].content
        if _returned_in(leaf, content.get("result")):
            ran = str(content.get("tool"))
            labels = content.get("labels") or ()
            return ("outside" if ran in outside or labels else "tool"), f"history {index} ({ran})"
    return "model", "model"


def derive_origins(
    wired: Wiring,
    arguments: Mapping[str, Any],
    claimed: Mapping[str, Any],
    *,
    turns: Sequence[str],
    history: engine.History,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Each argument's origin and where it came from (see the module docstring).

    Returns (origins for the tool check, detail per argument: `{origin, from}` with `from` one of
    `turn N`, `history N (tool)`, `claim`, `model`, and `claimed` where a claim lowered it).
    """
    given = [turn for turn in turns if isinstance(turn, str) and turn.strip()]
    origins: dict[str, str] = {}
    detail: dict[str, Any] = {}
    if not given:
        for name in arguments:
            word = claimed.get(name)
            origin = word if isinstance(word, str) and word in TRUST else "model"
            origins[name] = origin
            detail[name] = {"origin": origin, "from": "claim" if name in claimed else "model"}
        return origins, detail
    readings = [_said(wired, turn) for turn in given]
    outside = wired.catalogue.outside_tools
    entries = list(history)
    for name, value in arguments.items():
        origin: str | None = None
        source = "no value"
        for leaf in _leaves(value):
            leaf_origin, leaf_source = _origin_of(leaf, readings, entries, outside)
            if origin is None or TRUST[leaf_origin] < TRUST[origin]:
                origin, source = leaf_origin, leaf_source
        origin = origin or "typed"  # nothing in it to vouch for (empty, null, true or false)
        item: dict[str, Any] = {"origin": origin, "from": source}
        word = claimed.get(name)
        if isinstance(word, str) and word != origin:
            weaker = word if word in TRUST else "model"
            if TRUST[weaker] < TRUST[origin]:
                item = {
                    "origin": weaker,
                    "from": "claim",
                    "derived": origin,
                    "derived_from": source,
                }
                origin = weaker
        origins[name] = origin
        detail[name] = item
    return origins, detail


# -- a session -----------------------------------------------------------------------------------


def asked_in_words(wired: Wiring | None, tool: str, arguments: Mapping[str, Any]) -> str:
    """The confirm question every door asks, in the wiring's language: from the tool's
    description and its parameters' titles, a secret argument masked (no wiring: English, the
    tool's name in words)."""
    from router.engine.phrases import confirm_question

    entry = wired.catalogue.tools.get(tool) if wired is not None else None
    hidden = set(getattr(entry, "secret", ()) or ())
    shown = {k: ("[secret]" if k in hidden else v) for k, v in arguments.items()}
    return confirm_question(wired.language if wired is not None else "en", tool, shown, entry=entry)


def _as_function(function: Callable[..., Any]) -> Function:
    from stalwart_agents.chat import as_tool

    return as_tool(function)


#: The outcomes after which a run's earlier writes are undone, last first (not `UNCERTAIN`: the
#: write may have had its effect, and a guess undoes nothing).
UNDO_AFTER = frozenset({"REFUSED", "REJECTED", "BLOCKED", "FAILED"})


#: The lock a session's calls take here, by session (`id`), where a call of that session is
#: running further up this call tree: a tool that runs a guarded graph of the same session.
_calls_below: ContextVar[Mapping[int, threading.RLock] | None] = ContextVar(
    "stalwart_calls_below", default=None
)


@contextmanager
def one_call_at_a_time(owner: object, lock: threading.RLock) -> Iterator[None]:
    """Hold `owner`'s session for one call: its check, its tool and its record.

    Calls of one session from several threads (a model turn's parallel calls) wait for each other,
    on `lock`. A call made while the tool of another call of the session runs -- a graph used as
    a tool, its own calls in its own threads, which copy the context -- cannot wait for the call
    that waits for it: it takes the lock that call left for the calls below it, so the calls
    below are one at a time among themselves."""
    held = _calls_below.get() or {}
    with held.get(id(owner), lock):
        token = _calls_below.set({**held, id(owner): threading.RLock()})
        try:
            yield
        finally:
            _calls_below.reset(token)


@dataclass
class Pending:
    """A call a person is asked about: the exact call their yes signs a token for."""

    id: str
    call: dict[str, Any]
    decision: Decision
    status: str = "pending"
    user: str = ""  # the person the call is for (`execute(user=...)`): never its approver


@dataclass
class RuntimeSession:
    """One conversation of one agent in this process (see the module docstring).

    `functions(tool)` (or the `tools` mapping) gives the function that runs a tool, for `execute`
    without a function and for the undo's compensations; `approver(request)` asks a person.
    """

    wired: Wiring
    agent: str
    session: str = field(default_factory=lambda: f"local-{uuid.uuid4()}")
    approver: Approver | None = None
    context: Facts = None
    tools: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    functions: Callable[[str], Callable[..., Any] | None] | None = None
    tenant: str = "local"
    # What the console's controls say, for a session deciding from a bundle (`connected.py`):
    # `before_check(session)` gives what the check is decided under (and raises where the bundle
    # cannot answer: nothing is decided), `after_check(session, call, decision, under)` may only
    # make the decision stricter, `blocked(session, tool, write) -> reason | None` is the write
    # switch, asked before a write runs. None in a session of its own.
    controls: Any = None
    # Decision logs: called with one record per decision and per call that ran (see the module
    # docstring); `policy_version` is written in each record where the host knows it.
    sink: Sink | None = None
    policy_version: str | int | None = None

    def __post_init__(self) -> None:
        self.history = self.wired.check.new_history(self.session)
        # The head this session's history must be at, kept apart from the history itself: a
        # history swapped for another session's, emptied or cut short is refused (history_invalid).
        self.head = self.history.head
        self.turns: list[str] = []
        self.ledger: dict[str, Any] = {}
        self.run_writes: list[int] = []
        self.pending: dict[str, Pending] = {}
        self._ids = itertools.count(1)
        self._sequence = itertools.count(1)
        self.unlogged: list[dict[str, Any]] = []
        self.unlogged_dropped = 0
        # The last decision logged: (call, history length, answer, reasons), so the executor's
        # check right after a door's own check of the same call is one decision in the logs.
        self._decided: tuple[Any, ...] | None = None
        # One call at a time: a framework runs a model turn's parallel calls in threads, and each
        # must be checked against the history with the calls before it recorded (a run's spend,
        # a duplicate write, a stale token), so check, run and record hold this together.
        self._serial = threading.RLock()

    # -- what the person said ------------------------------------------------------------------

    def read(self, turn: str, *, continues: bool = False) -> None:
        """Keep the person's turn (the checks of what was said read it) and begin a new run,
        unless the turn `continues` the run (a person's yes or no to a call it put to them)."""
        if not isinstance(turn, str):
            raise TypeError("a turn is the person's text")
        self.turns.append(turn)
        self.turns = self.turns[-50:]
        if not continues:
            self.begin_run()

    def begin_run(self) -> None:
        """A new run: a refusal from now on undoes only the writes made from now on."""
        self.run_writes = []

    # -- deciding ------------------------------------------------------------------------------

    def facts(self, context: Facts) -> Facts:
        """The facts for one check: the call's own, over the session's (code); the file's win in
        the engine, which reads them from the history."""
        if context is None:
            return self.context
        if self.context is None:
            return context
        session_facts, call_facts = self.context, context

        def merged() -> Mapping[str, Any]:
            base = session_facts() if callable(session_facts) else session_facts
            over = call_facts() if callable(call_facts) else call_facts
            return {**dict(base or {}), **dict(over or {})}

        return merged

    def call_of(self, tool: str, arguments: Mapping[str, Any], **given: Any) -> dict[str, Any]:
        """The call as the check reads it; `agent` names the agent making it where one session
        holds a conversation across agents (a handoff continues the same signed history)."""
        call: dict[str, Any] = {"tool": tool, "arguments": dict(arguments)}
        agent = given.get("agent") or self.agent
        if agent:
            call["agent"] = agent
        for name in ("origins", "labels", "compensation_of", "plan", "plan_token", "plan_step"):
            if given.get(name) is not None:
                call[name] = given[name]
        return call

    def check_call(
        self,
        call: Mapping[str, Any],
        *,
        context: Facts = None,
        token: str | None = None,
        checks: Sequence[str] | None = None,
        usage: Mapping[str, Any] | None = None,
        now: Any = None,
        turns: Sequence[str] | None = None,
        cost: Any = None,
        run: Mapping[str, Any] | None = None,
        rechecked: bool = False,
    ) -> Decision:
        """Decide a call (a tool-call mapping): the one place every door's check goes through.

        `turns` stands in for the person's turns (the undo's compensations, which the runtime
        sends on its own, are read against none); `run` the framework's run and thread ids
        (`framework_ids`), shown in the decision's `detail.run`. `rechecked`: the executor's
        check before it runs the call, logged only where it is not the decision just logged."""
        ids = framework_ids(run)
        call = dict(call)
        if self.agent:
            call.setdefault("agent", self.agent)
        under = self.controls.before_check(self) if self.controls is not None else None
        decision = self.wired.decide(
            call,
            history=self.history,
            head=self.head,
            turns=self.turns if turns is None else turns,
            context=self.facts(context),
            token=token,
            checks=checks,
            usage=usage,
            now=now,
            cost=cost,
        )
        if self.controls is not None:
            decision = self.controls.after_check(self, call, decision, under)
        if ids:
            decision = Decision(
                decision.decision, decision.reasons, {**decision.detail, "run": ids}, decision.rule
            )
        if decision.decision == CONFIRM:
            ident = f"local-{next(self._ids)}"
            self.pending[ident] = Pending(ident, call, decision)
            decision = Decision(
                decision.decision,
                decision.reasons,
                {**decision.detail, "approval": ident},
                decision.rule,
            )
        if self.sink is not None:
            decided = (call, len(self.history), decision.decision, decision.reasons)
            if not (rechecked and decided == self._decided):
                self._log("decision", call, decision)
            # Only a door's own check is remembered: the executor's check after it is that same
            # decision once, and an executor's check with no door's check before it (a door that
            # lets the executor decide: the gateway) is always a decision of its own, even when
            # the same call is refused again at the same point.
            self._decided = None if rechecked else decided
        return decision

    # -- decision logs -------------------------------------------------------------------------

    def _log(
        self,
        kind: str,
        call: Mapping[str, Any],
        decision: Decision,
        outcome: Mapping[str, Any] | None = None,
        **firewall: Any,
    ) -> None:
        """Hand one record to the sink; a sink that fails keeps it here, never the decision.
        `firewall`: a firewall decision's `stage`, `verdict` and `policy_version`."""
        known = self.wired.catalogue.tools.get(str(call.get("tool") or ""))
        record = decision_record(
            kind,
            call,
            decision,
            session=self.history.session,
            sequence=next(self._sequence),
            agent=str(call.get("agent") or self.agent or ""),
            policy_version=firewall.pop("policy_version", self.policy_version),
            outcome=outcome,
            secret_keys=known.secret if known is not None else frozenset(),
            **firewall,
        )
        self.unlogged.append(record)
        sink = self.sink
        # The spool writes the text the record was measured by; any other sink is handed a
        # plain dict of its own, which it may change without the spool's text going stale.
        ours = isinstance(sink, Spool)
        while self.unlogged and sink is not None:
            try:
                sink(self.unlogged[0] if ours else dict(self.unlogged[0]))
            except Exception:  # noqa: BLE001 - the record is kept and logged; the call goes on
                log.warning(
                    "the decision log's sink failed; %d record(s) of session %s kept to retry",
                    len(self.unlogged),
                    self.history.session,
                    exc_info=True,
                )
                break
            self.unlogged.pop(0)
        if len(self.unlogged) > UNLOGGED_MAX:
            dropped = len(self.unlogged) - UNLOGGED_MAX
            del self.unlogged[:dropped]
            self.unlogged_dropped += dropped
            log.error(
                "the decision log's sink has failed for %d records: %d dropped from session %s",
                UNLOGGED_MAX,
                dropped,
                self.history.session,
            )

    def log_evaluation(
        self, call: Mapping[str, Any], result: Mapping[str, Any], *, sequences: bool
    ) -> None:
        """Record a firewall's answer to `call` (`ConnectedSession.evaluate`) as the console
        records what `POST /v1/firewall/evaluate` decides: every verdict but a plain allow, and
        plain allows too when the policy has sequence rules (`sequences`), which read every call."""
        if self.sink is None:
            return
        plain = result.get("verdict") == "allow" and not result.get("shadow")
        if plain and not sequences:
            return
        stage = str(call.get("stage") or ("egress" if call.get("destination") else "tool_call"))
        decision = Decision(
            str(result["decision"]),
            tuple(str(reason) for reason in result.get("reasons") or ()),
            {
                "policy": result.get("policy"),
                "arguments_after": result.get("arguments"),
                "shadow": result.get("shadow"),
                "cap_cost_cents": result.get("cap_cost_cents"),
            },
            result.get("rule"),
        )
        self._log(
            "decision",
            call,
            decision,
            stage=stage,
            verdict=str(result.get("verdict") or ""),
            policy_version=result.get("policy_version"),
        )

    def check(self, tool: str, arguments: Mapping[str, Any], **given: Any) -> Decision:
        """`check_call` for a tool and its arguments (`origins`, `labels`, `compensation_of`,
        `plan`, `context`, `token`, `checks`, `usage`, `now` as keywords)."""
        call = self.call_of(tool, arguments, **given)
        options = {k: given[k] for k in OPTIONS if k in given}
        return self.check_call(call, **options)

    # -- confirmations -------------------------------------------------------------------------

    def request(self, approval: str | Decision | Mapping[str, Any]) -> Pending:
        ident = approval
        if isinstance(approval, Decision):
            ident = approval.detail.get("approval")
        elif isinstance(approval, Mapping):
            ident = approval.get("approval") or (approval.get("detail") or {}).get("approval")
        found = self.pending.get(str(ident)) if ident else None
        if found is None:
            raise KeyError(f"no call of this session is waiting for `{ident}`")
        return found

    def approve(
        self, approval: str | Decision | Mapping[str, Any], *, granted: bool = False
    ) -> str:
        """Sign a person's yes to exactly the call asked about, at this point of the history
        (`granted`: the console's approvers said it, their grant verified; see `token_for`)."""
        pending = self.request(approval)
        if pending.status != "pending":
            raise PermissionError(f"`{pending.id}` was already {pending.status}")
        token = self.token_for(pending.call, granted=granted)
        pending.status = "approved"
        return token

    def approve_plan(self, plan: Mapping[str, Any]) -> str:
        """Sign a person's approval of a plan (`{id, steps}`) for this session: each step then
        runs only as the plan's next step, with the approved arguments."""
        return self.wired.check.issue_plan_token(plan, session=self.history)

    def deny(self, approval: str | Decision | Mapping[str, Any]) -> None:
        self.request(approval).status = "denied"

    def token_for(self, call: Mapping[str, Any], *, granted: bool = False) -> str:
        """A token for exactly this call at the session's head (the host is the person's yes).

        Deciding from the console's bundle, a write in a session the console holds is not signed
        on the host's word: `HeldOnConsole`, unless `granted` (the console's approvers said yes,
        and their grant was verified: `ConnectedSession.wait_for_approval`)."""
        held = getattr(self.controls, "held_write", None)
        if not granted and held is not None and held(self, call):
            raise HeldOnConsole(
                f"the console holds this session (session_held): a yes to `{call.get('tool')}` "
                "is given by its approvers, on its Approvals page (wait_for_approval)"
            )
        return self.wired.check.issue_token(call, session=self.history, head=self.head)

    def question(self, pending: Pending) -> dict[str, Any]:
        """What a person is shown: the question (from the tool's description and its parameters'
        titles, in the session's language), the call, each argument with its origin, the reasons."""
        detail = pending.decision.detail
        tool = str(pending.call.get("tool"))
        arguments = dict(pending.call.get("arguments") or {})
        return {
            "approval": pending.id,
            "question": asked_in_words(self.wired, tool, arguments),
            "tool": pending.call.get("tool"),
            "agent": pending.call.get("agent"),
            "arguments": detail.get("arguments") or arguments,
            "origins": detail.get("origins", {}),
            "reasons": list(pending.decision.reasons),
        }

    def ask(self, approval: str | Decision | Mapping[str, Any]) -> str | None:
        """Ask the host's approver about a waiting call: the token on yes, None on no.

        Without an approver nobody can answer here: `NoApprover` is raised and nothing runs.
        """
        pending = self.request(approval)
        if self.approver is None:
            raise NoApprover("nobody to ask here: give the session an approver, or use the console")
        answer = self.approver(self.question(pending))
        if answer is True:
            return self.approve(pending.id)
        self.deny(pending.id)
        return None

    # -- what ran ------------------------------------------------------------------------------

    def record_call(
        self, call: Mapping[str, Any], result: Any, *, cost: Any = None, **extra: Any
    ) -> Any:
        """Append a call that ran to the signed history; a write joins the run's writes."""
        if not self.history.at_head(self.head):
            raise engine.HistoryInvalid("the history does not end at the head kept for its session")
        call = dict(call)
        if self.agent:
            call.setdefault("agent", self.agent)
        if cost is not None:
            extra["cost"] = cost
        entry = self.wired.check.record(self.history, call, result, **extra)
        self.head = self.history.head
        tool = self.wired.catalogue.tools.get(str(call.get("tool")))
        if (tool is None or tool.kind != "read") and call.get("compensation_of") is None:
            self.run_writes.append(len(self.history) - 1)
        return entry

    def record(self, tool: str, arguments: Mapping[str, Any], result: Any, **given: Any) -> Any:
        return self.record_call(self.call_of(tool, arguments, **given), result)

    def function(self, tool: str) -> Function | None:
        found = self.tools.get(tool)
        if found is None and self.functions is not None:
            try:
                found = self.functions(tool)
            except Exception:  # noqa: BLE001 - no function for it: reported, not guessed
                found = None
        return _as_function(found) if found is not None else None

    def execute(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        function: Callable[..., Any] | None = None,
        *,
        authorize: Callable[[dict[str, Any], ExecutionContext], bool] | None = None,
        user: str = "",
        undo_on_refusal: bool = True,
        **given: Any,
    ) -> dict[str, Any]:
        """Check the call, run it once per intent, record it; undo the run on a refusal.

        Outcomes: `SUCCEEDED`, `CONFIRM` (nothing ran; `approval` names the request), `REFUSED`,
        `REJECTED` (the arguments), `BLOCKED`, `FAILED`, `UNCERTAIN`. After a refusal, a block or
        a failure, `undone` reports the run's earlier writes undone last first. With
        `undo_on_refusal=False` the check's refusal (`REFUSED`, `REJECTED`) ends the call as a
        door's own refusal does, undoing nothing (a door that lets the executor's check be its
        only one: the MCP gateway); a block or a failure still undoes. Calls of one session from
        several threads run one at a time, each checked after the one before it was recorded.
        """
        with one_call_at_a_time(self, self._serial):
            call, decision, ended = self._before_run(tool, arguments, given, undo_on_refusal, user)
            if ended is not None:
                return ended
            runner = _as_function(function) if function is not None else self.function(tool)
            if runner is None:
                return self._undo_into(
                    {"outcome": "BLOCKED", "reasons": ["no_function"], "detail": {"tool": tool}}
                )
            return self.run_allowed(
                call, runner, decision, authorize=authorize, user=user, cost=given.get("cost")
            )

    async def execute_async(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        function: Callable[[dict[str, Any], ExecutionContext], Awaitable[Any]],
        *,
        authorize: Callable[[dict[str, Any], ExecutionContext], bool] | None = None,
        user: str = "",
        undo_on_refusal: bool = True,
        **given: Any,
    ) -> dict[str, Any]:
        """`execute` for a coroutine `function(arguments, context)`, awaited on the caller's loop.

        The same check, executor rules, recording and undo; the check and the recording are pure
        CPU and run where the caller is, so a door on an event loop (the MCP gateway) makes no
        thread hop per call. The caller serialises calls of one session.
        """
        call, decision, ended = self._before_run(tool, arguments, given, undo_on_refusal, user)
        if ended is not None:
            return ended
        from stalwart_agents.client import execute_here_async

        blocked = self._blocked(call, decision)
        if blocked is not None:
            return blocked
        outcome = await execute_here_async(
            function=function, **self._executor_inputs(call, user, authorize)
        )
        return self._after_run(call, decision, outcome, given.get("cost"))

    def _before_run(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        given: Mapping[str, Any],
        undo_on_refusal: bool = True,
        user: str = "",
    ) -> tuple[dict[str, Any], Decision, dict[str, Any] | None]:
        """The call and its decision, with the outcome when it is not to run (refused, confirm:
        its request remembers `user`, the person the call is for)."""
        call = self.call_of(tool, arguments, **given)
        options = {k: given[k] for k in OPTIONS if k in given}
        decision = self.check_call(call, rechecked=True, **options)
        if decision.decision == REFUSE:
            kind = (
                "REJECTED"
                if any(r.startswith("argument_schema") for r in decision.reasons)
                else "REFUSED"
            )
            outcome = {
                "outcome": kind,
                "reasons": list(decision.reasons),
                "detail": decision.detail,
            }
            return call, decision, self._undo_into(outcome) if undo_on_refusal else outcome
        if decision.decision == CONFIRM:
            # A call that would be blocked anyway (writes switched off, another tenant's object)
            # is blocked before anybody is asked, as the console's executor does.
            stopped = self._blocked(call, decision) or self._foreign(call, decision)
            if stopped is not None:
                return call, decision, stopped
            asked = self.pending.get(str(decision.detail.get("approval")))
            if asked is not None and user:
                asked.user = str(user)
            return (
                call,
                decision,
                {
                    "outcome": "CONFIRM",
                    "reasons": list(decision.reasons),
                    "detail": decision.detail,
                    "approval": decision.detail.get("approval"),
                },
            )
        return call, decision, None

    def run_allowed(
        self,
        call: Mapping[str, Any],
        runner: Function,
        decision: Decision,
        *,
        authorize: Callable[[dict[str, Any], ExecutionContext], bool] | None = None,
        user: str = "",
        cost: Any = None,
    ) -> dict[str, Any]:
        """Run a call the check allowed (the executor's rules) and record it (with the `cost`
        the host reports, where it reports one)."""
        from stalwart_agents.client import execute_here

        blocked = self._blocked(call, decision)
        if blocked is not None:
            return blocked
        outcome = execute_here(function=runner, **self._executor_inputs(call, user, authorize))
        return self._after_run(call, decision, outcome, cost)

    def _blocked(self, call: Mapping[str, Any], decision: Decision) -> dict[str, Any] | None:
        """The console's write switch, for a session deciding from a bundle (`controls`): a
        `BLOCKED` outcome (the run undone) where it is off for this call, else None."""
        if self.controls is None:
            return None
        tool = str(call["tool"])
        known = self.wired.catalogue.tools.get(tool)
        reason = self.controls.blocked(self, tool, known is None or known.kind != "read")
        if reason is None:
            return None
        outcome = {"outcome": "BLOCKED", "reasons": [reason], "detail": {"tool": tool}}
        if self.sink is not None:
            self._log("execution", call, decision, outcome)
        return self._undo_into(outcome)

    def _foreign(self, call: Mapping[str, Any], decision: Decision) -> dict[str, Any] | None:
        """A `BLOCKED` outcome (the run undone) for a call naming another tenant, else None."""
        named = execution.foreign_tenant(call.get("arguments") or {}, self.tenant)
        if named is None:
            return None
        outcome = {"outcome": "BLOCKED", "reasons": [f"tenant: {named}"]}
        if self.sink is not None:
            self._log("execution", call, decision, outcome)
        return self._undo_into(outcome)

    def _executor_inputs(
        self, call: Mapping[str, Any], user: str, authorize: Any
    ) -> dict[str, Any]:
        """What the executor's rules read of this session for `call` (a write's step reads the
        history; a read's does not, so a read never copies it)."""
        tool = str(call["tool"])
        known = self.wired.catalogue.tools.get(tool)
        write = known is None or known.kind != "read"
        return {
            "ledger": self.ledger,
            "entries": [entry.content for entry in self.history] if write else (),
            "tool": tool,
            "arguments": call.get("arguments") or {},
            "write": write,
            "tenant": self.tenant,
            "session": self.history.session,
            "agent": str(call.get("agent") or self.agent),
            "user": user,
            "authorize": authorize,
            "idempotent": bool(known is not None and known.idempotent),
        }

    def _after_run(
        self, call: Mapping[str, Any], decision: Decision, outcome: dict[str, Any], cost: Any
    ) -> dict[str, Any]:
        if self.sink is not None:
            self._log("execution", call, decision, outcome)
        if outcome["outcome"] == "SUCCEEDED":
            if not outcome.pop("suppressed", False):
                self.record_call(call, outcome["result"], cost=cost)
            outcome["reasons"] = list(decision.reasons)
            if decision.detail.get("run"):
                outcome["detail"] = {"run": dict(decision.detail["run"])}
            return outcome
        if outcome["outcome"] not in UNDO_AFTER:
            # `UNCERTAIN`: the write may have had its effect; the run is not undone on a guess
            # (the console's rule). A person decides what to do with it.
            return outcome
        return self._undo_into(outcome)

    # -- undo last first -----------------------------------------------------------------------

    def _undo_into(self, outcome: dict[str, Any]) -> dict[str, Any]:
        undone = self.undo_run()
        if undone:
            outcome["undone"] = undone
        return outcome

    def undo_run(self) -> list[dict[str, Any]]:
        """Compensate this run's writes, last first; each compensation checked and keyed."""
        if not self.run_writes:
            return []
        entries = [entry.content for entry in self.history]
        done = [i for i in range(len(self.history)) if self.history.undone_by(i) is not None]
        steps = execution.undo_plan(self.wired.catalogue, entries, self.run_writes, undone=done)
        self.run_writes = []
        report: list[dict[str, Any]] = []
        for step in steps:
            item: dict[str, Any] = {"index": step.index, "tool": step.tool, "status": step.status}
            if step.status == "compensate":
                item["compensation"] = step.compensation
                call = {
                    "tool": step.compensation,
                    "arguments": dict(step.arguments),
                    "compensation_of": step.index,
                }
                agent = entries[step.index].get("agent") or self.agent
                if agent:
                    call["agent"] = agent
                # The runtime sends the undo itself: the person's last turn asked for the run, not
                # for its undo, so the checks of what was said have nothing to read in it.
                decision = self.check_call(call, turns=())
                runner = self.function(step.compensation)
                if decision.decision != ALLOW:
                    item.update(status="failed", reasons=list(decision.reasons))
                elif runner is None:
                    item.update(status="failed", reasons=["no_function"])
                else:
                    ran = self.run_allowed(call, runner, decision)
                    ok = ran["outcome"] == "SUCCEEDED"
                    item["status"] = "compensated" if ok else "failed"
                    if not ok:
                        item["reasons"] = list(ran.get("reasons") or [])
            elif step.status == "unbound":
                item["missing"] = list(step.missing)
            report.append(item)
        return report


def decision_record(
    kind: str,
    call: Mapping[str, Any],
    decision: Decision,
    *,
    session: str,
    sequence: int,
    agent: str,
    policy_version: str | int | None = None,
    outcome: Mapping[str, Any] | None = None,
    at: float | None = None,
    secret_keys: frozenset[str] = frozenset(),
    stage: str | None = None,
    verdict: str | None = None,
) -> dict[str, Any]:
    """One decision-log record: JSON-able, redacted, with a unique id and its place in the session.

    `kind` is `decision` (a check's answer) or `execution` (a call that ran: `outcome` is the
    executor's `SUCCEEDED`, `FAILED`, `UNCERTAIN`...). The call's arguments and the decision's
    detail go through the credential table (`redact_jsonable`); a record past `RECORD_MAX_BYTES`
    keeps its fields but not its arguments or detail (`truncated` says so). A firewall's decision
    (`RuntimeSession.log_evaluation`) also names its `stage` and `verdict`, and its call its
    `destination`, which the console's sequence matchers read.
    """
    version = policy_version
    if version is None:
        version = decision.detail.get("policy_version")
    shown_call = {
        name: call[name]
        for name in (
            "tool",
            "arguments",
            "origins",
            "labels",
            "compensation_of",
            "plan_step",
            "skill",
            "destination",
        )
        if call.get(name) is not None
    }
    detail: dict[str, Any] = {"call": shown_call, "detail": dict(decision.detail)}
    if outcome is not None:
        detail["outcome"] = {
            name: outcome[name] for name in ("outcome", "key", "error") if outcome.get(name)
        }
    record = Record({
        "id": str(uuid.uuid4()),
        "session": session,
        "sequence": sequence,
        "kind": kind,
        "at": time.time() if at is None else at,
        "agent": agent,
        "tool": str(call.get("tool") or ""),
        "decision": decision.decision,
        "reasons": [str(reason) for reason in decision.reasons],
        "rule": decision.rule or "",
        "policy_version": version if isinstance(version, (str, int)) else None,
        "outcome": str(outcome.get("outcome")) if outcome is not None else None,
        # The arguments the catalogue marks secret are masked, as in the console's own events.
        "detail": redact_jsonable(detail, secret_keys=secret_keys),
    })  # fmt: skip
    if stage is not None:
        record["stage"] = stage
        record["verdict"] = verdict
    # JSON's own types only, written ASCII: the text's length is its size in bytes.
    text = json.dumps(record, separators=(",", ":"))
    if len(text) > RECORD_MAX_BYTES:
        record["detail"] = {"call": {"tool": record["tool"]}, "truncated": len(text)}
        text = json.dumps(record, separators=(",", ":"))
    record.text = text  # what the spool writes
    return record


class NoApprover(RuntimeError_):
    """Nobody in this process can answer a `confirm`: the call is not made."""


def open_session(
    agent: str,
    *,
    catalogue: Mapping[str, Any] | Any,
    key: bytes,
    rulebook: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    **state: Any,
) -> RuntimeSession:
    """A session of `agent` over the wiring for this content (shared, built once).

    `agent` may be empty: a session of no agent of the catalogue (`Agent.chat` without `agent=`)."""
    wired = wiring(catalogue, key=key, rulebook=rulebook, settings=settings)
    if agent and wired.catalogue.agents and agent not in wired.catalogue.agents:
        raise SettingsRefused(f"agent: `{agent}` is not an agent of the catalogue")
    return RuntimeSession(wired, agent, **state)


def open_from_bundle(
    agent: str,
    *,
    feed: Any,
    catalogue: Mapping[str, Any] | Sealed,
    key: bytes,
    rulebook: Mapping[str, Any] | Sealed | None = None,
    own: Mapping[str, Any] | None = None,
    **state: Any,
) -> RuntimeSession:
    """A session deciding in this process from the console's bundle, for every door that does
    (`Client(decide="local")`, `Agent.chat` under `STALWART_DECIDE=local`).

    `feed` is the agent's `connected.BundleFeed`; its current bundle decides the settings (the
    organisation's, made stricter by `own`, the session's or the file's) and the bundle's controls
    (holds, switches, write switches) are plugged in, followed as the bundle changes. The catalogue
    and the rulebook are sealed here unless they are already (a door that opens many sessions
    seals them once). `SelectorUnavailableError` with no bundle to decide with; `SettingsRefused`
    or the engine's errors for settings that do not load. `state` is `RuntimeSession`'s (the sink
    of the decision logs, the approver, the functions, ...).
    """
    from stalwart_agents import connected

    found = feed.current()
    sealed = seal(catalogue)
    sealed_rulebook = seal(rulebook) if rulebook is not None else None
    controls = connected.BundleControls(
        feed, catalogue=sealed, rulebook=sealed_rulebook, own=dict(own or {}), key=key
    )
    # The tenant is the organisation the bundle is signed for (its slug), as the console's
    # executor takes it from the authenticated identity: never an argument, never "local".
    state.setdefault("tenant", found.organisation)
    return open_session(
        agent,
        catalogue=sealed,
        key=key,
        rulebook=sealed_rulebook,
        settings=controls.settings_of(found),
        controls=controls,
        **state,
    )
