"""The router: every turn, read before any model sees it, into a plan (see `plan` for the kinds).

How a turn becomes a plan, in order; the first step that decides, decides:

1. Read it (`reader`). A word of Portugal, a word nobody knows, a number written the other
   language's way, a how-to or why question, a negation ("don't refund ..."), or a word that
   points back at an earlier request ("the same for 4412") leaves it `unread`: no call is ever
   written from a turn the router could not read whole.
2. A rulebook intent the turn says word for word (`intents`) that leads to a refusal: `declined`,
   naming the flow.
3. A turn that only gives values, after an `ask`: those values complete the asked call.
4. A calculation word ("total", "how many", "quantos") over many things ("orders", "emails",
   "todos"): a `calculation` over the listing tool that returns them, the inbox included
   (`declined`, `compute off: ...`, with no sandbox or no model), with every value the turn types
   in that read's call (else `unread`). A calculation or a question about a state ("did you
   refund ...?") never plans a write.
5. Its action: the verbs it says (several different actions that no one tool does: `unread`),
   else the actions it names as nouns ("o estorno"), else light verbs ("get me ..."). With no
   action, only reads are candidates, and only those whose nouns the turn names.
6. The tool: every reachable tool that does the action is scored on its nouns, on whether it lists
   when the turn speaks of many, and on how well the turn's values fill its arguments (`slots`).
   A tie is an `ask` naming the tools; a tool this agent cannot reach is `declined`.
7. Its arguments. Every value the person typed is in the call or is why the turn is not planned:
   a value the tool would refuse is asked for again (`ask`, optional argument or not); a value no
   argument takes -- and that no listing read of the chain takes -- makes the turn `unread`,
   naming it (`leftover`), for a read as for a write. A missing value is taken from a listing
   tool's result (`chain`, or an `ask` with the options when the list holds several), else asked
   for (`ask`); an amount of a write is never taken from a result unless the turn asks for the
   whole ("the full amount", "estorno integral"): with none typed, it is asked for.
8. Its order rules: an `after` read that has not run is run first (`chain`: the reads a call
   draws on are chained like missing values); an `after` write that has not run declines it,
   naming the rule.
9. The rulebook's gate, with the facts the conversation reports: a refusal whose facts a read can
   report (`facts:` in agent.yaml) runs that read first (`chain`), else `declined`, naming the
   rule (its flow, or its rule sheet's row).
10. A read is a `tool` step; a write is a `confirm`.

The router reads for one agent (`agent=`): its own tools and those of the agents it hands off to;
the call names the agent that holds the tool. Without `agent`, every tool of the catalogue.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from guard.engine.agent_yaml import AgentFile
from guard.engine.catalogue import Catalogue, OrderRule, load_catalogue
from guard.engine.history import History
from guard.engine.kinds import words as name_words
from guard.engine.refs import MISSING, resolve, value_key

from . import plan as plans
from .answer import Composer
from .errors import RouterError, SelectorUnavailableError, SettingInvalid
from .grammars import GRAMMARS, base_lexicon, choose_language, router_lexicon
from .intents import Intent, learn_intent_words, match, read_intents
from .lexicon import READ, WRITE, items
from .phrases import Phrases
from .plan import Plan
from .reader import Reader, Reading
from .slots import TOOL as FROM_TOOL
from .slots import Filled, fill, takes
from .text import fold
from .tools import ToolProfile, catalogue_words, profile_catalogue
from .values import value_grammar
from .vocabulary import Vocabulary, load_vocabulary

TODAY = Callable[[], dt.date]
_COMPUTE_OFF_SANDBOX = "compute off: no sandbox is configured on this machine"
_COMPUTE_OFF_MODEL = "compute off: the agent names no model to write the function"


def _today() -> dt.date:
    return dt.date.today()


def read_results(results: Any) -> list[Mapping[str, Any]]:
    """Calls that ran, as `{tool, arguments, result}`: a guard `History` or a list of them."""
    if results is None:
        return []
    if isinstance(results, History):
        return list(results.results)
    out = []
    for item in results:
        if isinstance(item, Mapping) and isinstance(item.get("tool"), str):
            out.append(item)
    return out


def _pending(history: Iterable[Any]) -> Plan | None:
    last: Plan | None = None
    for item in history or ():
        if isinstance(item, Plan):
            last = item
        elif isinstance(item, Mapping) and item.get("kind") in plans.KINDS:
            last = Plan.from_dict(item)
    if last is not None and last.kind == plans.ASK and last.call and last.missing:
        return last
    return None


class _Turn:
    """What planning one turn keeps: the reading, the results, the trace."""

    def __init__(
        self, reading: Reading, results: list[Mapping[str, Any]], context: Any, on_unread: str
    ) -> None:
        self.reading = reading
        self.results = results
        self.context = context
        self.on_unread = on_unread
        self.asked_again = False
        self.why: list[str] = []


class Router:
    """Reads turns into plans for one catalogue (see the module docstring).

    `catalogue` is a loaded `Catalogue`, an `AgentFile` (what `load_agent_yaml` returns) or the
    catalogue's data; `rulebook` the compiled record; `vocabulary` the vocabulary file's text (or a
    loaded `Vocabulary`); `language` `en` or `pt-BR` (else the vocabulary's, else English);
    `on_unread` the organisation's setting, which an agent that says nothing takes; `documents`
    what `on_unread: answer` answers from (texts, or an index with `composer_for(lexicon)`);
    `sandbox` what runs a calculation's function (only its presence, or its `compute_off`
    reason, matters here); `agent` the agent whose turns these are; `today` a date or a function
    giving today's date (for "tomorrow", "dia 5").
    """

    def __init__(
        self,
        catalogue: Catalogue | AgentFile | Mapping[str, Any],
        *,
        rulebook: Mapping[str, Any] | None = None,
        vocabulary: str | Vocabulary | None = None,
        language: str | None = None,
        on_unread: str | None = None,
        documents: Sequence[str | Mapping[str, str]] | None = None,
        sandbox: Any = None,
        agent: str | None = None,
        today: dt.date | TODAY | None = None,
    ) -> None:
        if isinstance(catalogue, AgentFile):
            catalogue = catalogue.catalogue
        if not isinstance(catalogue, Catalogue):
            catalogue = load_catalogue(catalogue)
        self.catalogue = catalogue
        if isinstance(vocabulary, Vocabulary) or vocabulary is None:
            self.vocabulary = vocabulary or Vocabulary()
        else:
            self.vocabulary = load_vocabulary(vocabulary)
        self.language = choose_language(language, self.vocabulary)
        self.phrases = Phrases(self.language)
        if agent is not None and agent not in catalogue.agents:
            raise RouterError(f"the catalogue has no agent `{agent}`")
        self.agent = agent
        if on_unread is not None and on_unread not in plans.ON_UNREAD:
            raise SettingInvalid(
                f"on_unread is one of {', '.join(plans.ON_UNREAD)}, not `{on_unread}`"
            )
        self.rulebook = rulebook
        self.sandbox = sandbox
        self._clock: TODAY = (
            (lambda: today) if isinstance(today, dt.date) else (today or _today)  # type: ignore[assignment]
        )
        english = base_lexicon("en")
        self.profiles: dict[str, ToolProfile] = profile_catalogue(catalogue, english)
        tool_verbs: dict[str, str] = {}
        tool_nouns: set[str] = set()
        for profile in self.profiles.values():
            for verb in profile.verbs:
                family = english.family(verb) or (WRITE if profile.write else READ)
                tool_verbs.setdefault(verb, family)
            for noun in profile.name_nouns:
                entry = english.words.get(noun)
                if entry is None or entry.role != "noun":
                    tool_nouns.add(noun)
        self.lexicon = router_lexicon(
            self.language,
            catalogue_words=catalogue_words(catalogue),
            tool_verbs=tool_verbs,
            tool_nouns=tool_nouns,
            vocabulary=self.vocabulary,
        )
        grammar = GRAMMARS[self.language]
        capture = frozenset(
            cue for p in self.profiles.values() for param in p.params if param.slot == "string"
            for cue in param.cues
        )  # fmt: skip
        self.reader = Reader(
            self.lexicon,
            value_grammar(self.language, self.lexicon.months, grammar.FREE_TEXT_MARKERS),
            capture=capture,
            tool_names=frozenset(self.profiles),
            id_nouns=grammar.ID_NOUNS,
            date_back=frozenset(grammar.DATE_BACK.split()),
            tu_imperatives=(
                grammar.tu_imperatives(self.lexicon) if self.language == "pt-BR" else frozenset()
            ),
            plural_determiners=frozenset(fold(w) for w in items(grammar.PLURAL_DETERMINERS)),
            auxiliaries=frozenset(grammar.AUXILIARIES.split()),
            separators=frozenset(grammar.SEPARATORS.split()),
            patterns=getattr(grammar, "PT_PT_PATTERNS", ()),
            mark_verbs=frozenset(grammar.MARK_VERBS.split()),
            mark_words=frozenset(grammar.MARK_WORDS.split()),
            head_negations=frozenset(grammar.HEAD_NEGATIONS.split()),
            head_compute=frozenset(grammar.HEAD_COMPUTE.split()),
            clause_markers=grammar.clause_markers(self.lexicon),
            whole=frozenset(fold(w) for w in items(grammar.WHOLE)),
            head_courtesy=frozenset(grammar.HEAD_COURTESY.split()),
            particles={
                fold(form): tuple(
                    (tuple(fold(particle).split()), concept) for particle, concept in particles
                )
                for forms, particles in grammar.PARTICLE_VERBS.items()
                for form in forms.split()
            },
            number_words={fold(word): n for word, n in grammar.NUMBER_WORDS.items()},
            money_words=frozenset(grammar.MONEY_WORDS.split()),
        )
        if learn_intent_words(rulebook, self.reader):
            self.reader = self.reader.rebuilt()
        self.intents: tuple[Intent, ...] = read_intents(rulebook, self.reader)
        governed = rulebook.get("tools") if isinstance(rulebook, Mapping) else None
        self._governed = frozenset(governed) if isinstance(governed, Mapping) else frozenset()
        read_facts = rulebook.get("facts") if isinstance(rulebook, Mapping) else None
        self._record_facts = frozenset(read_facts) if isinstance(read_facts, list) else frozenset()
        self.reachable, self._owner = self._reach()
        self._by_verb: dict[str, list[ToolProfile]] = {}
        for profile in self.profiles.values():
            for verb in profile.verbs:
                self._by_verb.setdefault(verb, []).append(profile)
        self._reads = [
            p for p in self.profiles.values() if not p.write and p.name in self.reachable
        ]
        self._family_reads = {
            p.name: p
            for p in self.profiles.values()
            if not p.write and any(self.lexicon.family(v) == READ for v in p.verbs)
        }
        self._by_noun: dict[str, set[str]] = {}
        self._by_name_noun: dict[str, set[str]] = {}
        for profile in self.profiles.values():
            for noun in profile.nouns:
                self._by_noun.setdefault(noun, set()).add(profile.name)
            for noun in profile.name_nouns:
                self._by_name_noun.setdefault(noun, set()).add(profile.name)
        self._one_tool_memo: dict[frozenset[str], bool] = {}
        self._by_verb_names = {
            verb: {p.name for p in tools} for verb, tools in self._by_verb.items()
        }
        self._family_read_names = frozenset(self._family_reads)
        self.model = self._agent_setting("model")
        self._agent_on_unread = self._agent_setting("on_unread")
        self.on_unread = self._agent_on_unread or on_unread or plans.REFUSE
        self.composer: Any = None
        if callable(getattr(documents, "composer_for", None)):  # an index of the documents
            self.composer = documents.composer_for(self.lexicon)  # type: ignore[union-attr]
        elif documents is not None:
            self.composer = Composer(documents, self.lexicon)

    # -- set-up --------------------------------------------------------------------------------

    def _reach(self) -> tuple[frozenset[str], dict[str, str]]:
        agents = self.catalogue.agents
        if self.agent is None:
            owner: dict[str, str] = {}
            for agent in agents.values():
                for tool in agent.tool_order:
                    owner.setdefault(tool, agent.name)
            return frozenset(self.profiles), owner
        order = [self.agent]
        for name in order:
            for other in agents[name].hands_off_to:
                if other not in order:
                    order.append(other)
        owner = {}
        for name in order:
            for tool in agents[name].tool_order:
                owner.setdefault(tool, name)
        return frozenset(t for t in owner if t in self.profiles), owner

    def _agent_setting(self, name: str) -> Any:
        agents = self.catalogue.agents
        if self.agent is not None:
            return getattr(agents[self.agent], name)
        if len(agents) == 1:
            return getattr(next(iter(agents.values())), name)
        return None

    # -- planning ------------------------------------------------------------------------------

    def read(self, turn: str, *, today: dt.date | None = None) -> Reading:
        """The reading of a turn alone (what the said checks and the trace use)."""
        return self.reader.read(turn, today or self._clock())

    def plan(
        self,
        turn: str,
        *,
        history: Iterable[Any] = (),
        results: Any = (),
        asked_again: bool = False,
        context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
        today: dt.date | None = None,
        on_unread: str | None = None,
    ) -> Plan:
        """The plan of one turn.

        `history` holds the conversation's earlier plans (`Plan`s or their dicts; a pending `ask`
        is completed by a turn that gives its values); `results` the calls that ran, with their
        results (a guard `History` or `[{tool, arguments, result}]`: a chain's reads are fed back
        here); `asked_again` says the person was already asked to say it again; `context` the
        facts the application reports for the rulebook; `on_unread` the setting this conversation
        took at its first turn (the agent's own setting still wins).

        Where the router cannot answer (an error of its own), it raises `SelectorUnavailableError`
        and no plan is made: the caller must not fall back to an unchecked call.
        """
        if not isinstance(turn, str):
            raise RouterError("a turn must be text")
        if on_unread is not None and on_unread not in plans.ON_UNREAD:
            raise SettingInvalid(
                f"on_unread is one of {', '.join(plans.ON_UNREAD)}, not `{on_unread}`"
            )
        try:
            return self._plan_turn(turn, history, results, asked_again, context, today, on_unread)
        except RouterError:
            raise
        except Exception as error:  # noqa: BLE001 - the router could not answer: fail closed
            raise SelectorUnavailableError(
                f"the router could not read the turn: {type(error).__name__}"
            ) from error

    def owner_of(self, tool: str) -> str | None:
        """The agent a call of `tool` names (the one that holds it), or None without agents."""
        return self._owner.get(tool)

    def _plan_turn(
        self,
        turn: str,
        history: Iterable[Any],
        results: Any,
        asked_again: bool,
        context: Any,
        today: dt.date | None,
        on_unread: str | None,
    ) -> Plan:
        reading = self.reader.read(turn, today or self._clock())
        setting = self._agent_on_unread or on_unread or self.on_unread
        state = _Turn(reading, read_results(results), context, setting)
        state.asked_again = asked_again
        self._trace_reading(state)
        blocked = self._blocked(state)
        if blocked is not None:
            return self._unread(state, blocked, asked_again)
        intent = match(self.intents, reading)
        if intent is not None:
            state.why.append(f"says the intent `{intent.name}`")
            if intent.refusal is not None:
                flow, reason = intent.refusal
                return self._declined(state, (reason,), rule=flow, detail={"intent": intent.name})
        pending = _pending(history)
        has_action = bool(
            reading.verbs or reading.nominals or reading.lights or reading.tools_named
        )
        if pending is not None and not has_action and (reading.values or reading.texts or
                                                       reading.statuses):  # fmt: skip
            profile = self.profiles.get(pending.tool or "")
            if profile is not None and profile.name in self.reachable:
                call = pending.call or {}
                filled = fill(
                    profile,
                    reading,
                    base=call.get("arguments") or {},
                    base_origins=call.get("origins") or {},
                    base_said=pending.said,
                )
                if len(filled.arguments) > len(call.get("arguments") or {}):
                    state.why.append(f"completes the asked {profile.name}")
                    return self._resolve(state, profile, filled)
        if reading.compute and (reading.plural_nouns() or reading.every):
            return self._calculation(state)
        actions = self._actions(state)
        if actions is None:
            return self._unread(state, "several_actions", asked_again)
        return self._choose(state, actions, intent, asked_again)

    # -- steps ---------------------------------------------------------------------------------

    def _trace_reading(self, state: _Turn) -> None:
        reading = state.reading
        why = state.why
        for word in reading.verbs:
            why.append(f"verb `{word.text}` -> {word.concept}")
        for word in reading.nominals:
            why.append(f"action noun `{word.text}` -> {word.concept}")
        for word in reading.nouns:
            why.append(f"noun `{word.text}` -> {word.concept}{' (many)' if word.plural else ''}")
        for word in reading.statuses:
            why.append(f"state `{word.text}` -> {word.concept}")
        for typed, known in reading.typos:
            why.append(f"typo `{typed}` read as `{known}`")

    def _blocked(self, state: _Turn) -> str | None:
        reading = state.reading
        why = state.why
        if reading.too_long:
            why.append("longer than a turn the router reads")
            return "too_long"
        if reading.pt_pt:
            why.append("European Portuguese: " + ", ".join(f"`{w}`" for w in reading.pt_pt))
            return "pt_pt"
        if reading.question:
            why.append("a how-to or why question: " + ", ".join(reading.question))
            return "question"
        if reading.unknown:
            why.append("unknown words: " + ", ".join(f"`{w}`" for w in reading.unknown))
            return "unknown_words"
        if reading.problems:
            why.append(
                "values not written the "
                + ("English" if self.language == "en" else "Brazilian")
                + " way: "
                + ", ".join(f"`{p.text}`" for p in reading.problems)
            )
            return "value_format"
        if reading.negated:
            why.append("a negation: " + ", ".join(f"`{w}`" for w in reading.negated))
            return "negated"
        if reading.refers:
            why.append("points back at an earlier request: " +
                       ", ".join(f"`{w}`" for w in reading.refers))  # fmt: skip
            return "refers_back"
        if reading.empty:
            return "empty"
        return None

    def _actions(self, state: _Turn) -> list[str] | None:
        """The turn's actions, or None where it asks for several different things."""
        reading = state.reading
        for group in (reading.verbs, reading.nominals):
            concepts = list(dict.fromkeys(w.concept for w in group if w.concept))
            if not concepts:
                continue
            if len(concepts) > 1 and not self._one_tool_does(concepts):
                state.why.append("several actions: " + ", ".join(concepts))
                return None
            return concepts
        lights = list(dict.fromkeys(w.concept for w in reading.lights if w.concept))
        if lights == ["mark"]:
            # "mark 742 as done", "marque como concluída": the state says the action.
            marked = GRAMMARS[self.language].MARKED
            lights = list(dict.fromkeys(
                marked[w.concept] for w in reading.statuses if w.concept in marked
            ))  # fmt: skip
        return [concept for concept in lights if concept != "mark"]

    def _one_tool_does(self, concepts: list[str]) -> bool:
        if all(self.lexicon.family(c) == READ for c in concepts):
            return True
        wanted = frozenset(concepts)
        known = self._one_tool_memo.get(wanted)
        if known is None:
            known = any(wanted <= p.verbs for p in self.profiles.values())
            if len(self._one_tool_memo) < 1024:
                self._one_tool_memo[wanted] = known
        return known

    def _choose(
        self, state: _Turn, actions: list[str], intent: Intent | None, asked_again: bool
    ) -> Plan:
        reading = state.reading
        no_writes = bool(reading.compute) or reading.state_question
        candidates: list[ToolProfile]
        if reading.tools_named:
            candidates = [self.profiles[n] for n in reading.tools_named if n in self.profiles]
            state.why.append("names the tool " + ", ".join(p.name for p in candidates))
        elif intent is not None and intent.tools:
            candidates = [self.profiles[n] for n in intent.tools if n in self.profiles]
        elif actions:
            # Tools that do the action (any read, for "show ..."), narrowed to those whose nouns
            # the turn names where some are: set operations on the indexes, whatever their size.
            names: set[str] = set()
            for action in actions:
                names |= self._by_verb_names.get(action, set())
            if all(self.lexicon.family(a) == READ for a in actions):
                names |= self._family_read_names
            named = self._with_nouns(reading.noun_concepts())
            if named is not None and names & named:
                names &= named
            candidates = [self.profiles[name] for name in sorted(names)]
        else:
            candidates = self._named_reads(reading)
        if no_writes:
            candidates = [p for p in candidates if not p.write]
            if not candidates:
                # "did you refund order 4411?": a question about the order, answered by a read.
                candidates = self._named_reads(reading)
                actions = []
        if not candidates:
            state.why.append("no tool does " + (", ".join(actions) if actions else "that"))
            return self._unread(state, "no_tool", asked_again)
        reachable = [p for p in candidates if p.name in self.reachable]
        if not reachable:
            names = sorted(p.name for p in candidates)
            state.why.append(
                f"only {', '.join(names)} would, which agent {self.agent} cannot reach"
            )
            return self._declined(
                state,
                tuple(f"allowed_tools: {name}" for name in names),
                rule="allowed_tools",
                detail={"agent": self.agent, "tools": names},
            )
        scored = []
        for profile in reachable:
            filled = fill(profile, reading)
            score = self._score(profile, reading, actions, filled, intent)
            scored.append((score, profile, filled))
        scored.sort(key=lambda item: (-item[0], item[1].name))
        best_score, best, filled = scored[0]
        state.why.append(f"tool {best.name} (score {best_score})")
        if len(scored) > 1 and scored[1][0] == best_score:
            tied = sorted(p.name for s, p, _ in scored if s == best_score)
            state.why.append("tied: " + ", ".join(tied))
            return Plan(
                plans.ASK,
                self.language,
                reading.turn,
                missing=("tool",),
                options=tuple(tied),
                question=self.phrases("ask_tool", options=", ".join(tied)),
                reasons=("ambiguous_tool",),
                why=tuple(state.why),
            )
        return self._resolve(state, best, filled)

    def _with_nouns(self, nouns: set[str]) -> set[str] | None:
        """The tools that have one of these nouns (None: no noun said, or none has one)."""
        if not nouns:
            return None
        found: set[str] = set()
        for noun in nouns:
            found |= self._by_noun.get(noun, set())
        return found or None

    def _named_reads(self, reading: Reading) -> list[ToolProfile]:
        """With no action said, the reads the turn names: by the noun of their name ("order
        4411?"), or by a noun they describe or a state ("status of 742", "is 743 still open?")
        together with values that fill all they need."""
        nouns = reading.noun_concepts()
        by_name: set[str] = set()
        for noun in nouns:
            by_name |= self._by_name_noun.get(noun, set())
        out = [self.profiles[n] for n in sorted(by_name) if not self.profiles[n].write]
        if out:
            return out
        named = self._with_nouns(nouns)
        pool = (
            [self.profiles[name] for name in sorted(named)]
            if named is not None
            else list(self.profiles.values())
        )
        for profile in pool:
            if profile.write:
                continue
            if nouns & profile.nouns or (reading.statuses and not nouns):
                filled = fill(profile, reading)
                if filled.missing(profile) or filled.leftover:
                    continue
                # A read that needs nothing is named by at least two of its filters ("anything
                # open at site west"), not by one ("the one at site north").
                if profile.required or len(filled.arguments) >= 2:
                    out.append(profile)
        return out

    def _score(
        self,
        profile: ToolProfile,
        reading: Reading,
        actions: list[str],
        filled: Filled,
        intent: Intent | None,
    ) -> int:
        score = 0
        if actions:
            if profile.verbs & set(actions):
                score += 10
            elif not profile.write:
                score += 9
        nouns = reading.noun_concepts()
        for noun in nouns:
            if noun in profile.name_nouns:
                score += 4
            elif noun in profile.nouns:
                score += 1
        if nouns & profile.name_nouns:
            # `get_invoice_line` names more than "invoice 4411" says.
            score -= len(profile.name_nouns - nouns)
        many = bool(reading.plural_nouns() & profile.nouns) or reading.every
        if many and profile.list_like:
            score += 4
        elif not many and not profile.list_like and nouns & profile.name_nouns:
            score += 3
        score += 2 * len(filled.arguments)
        score -= 3 * len(filled.missing(profile))
        score -= len(filled.invalid)
        score -= 2 * len(filled.leftover)
        if intent is not None and profile.name in intent.tools:
            score += 20
        return score

    def _call(self, profile: ToolProfile, filled: Filled) -> dict[str, Any]:
        call: dict[str, Any] = {"tool": profile.name}
        owner = self._owner.get(profile.name)
        if owner is not None:
            call["agent"] = owner
        call["arguments"] = dict(filled.arguments)
        call["origins"] = {name: filled.origins.get(name, "typed") for name in filled.arguments}
        return call

    def _read_call(self, profile: ToolProfile, arguments: Mapping[str, Any]) -> dict[str, Any]:
        call: dict[str, Any] = {"tool": profile.name}
        owner = self._owner.get(profile.name)
        if owner is not None:
            call["agent"] = owner
        call["arguments"] = dict(arguments)
        return call

    def _resolve(self, state: _Turn, profile: ToolProfile, filled: Filled) -> Plan:
        state.why.extend(filled.trace)
        missing = filled.missing(profile)
        options: list[Any] = []
        steps: list[dict[str, Any]] = []
        found: list[tuple[str, tuple[str, Any]]] = []
        producers_used: set[int] = set()
        for name in list(missing):
            param = profile.by_name[name]
            if name in filled.invalid or param.slot == "text":
                continue
            if profile.write and param.amount and not state.reading.whole:
                # An amount a write moves is the person's to say: "refund order 4411" asks how
                # much; only "the full amount", "estorno integral" takes the order's own.
                continue
            got = self._produce(state, profile, profile.by_name[name], filled)
            if got is not None:
                producers_used |= got[1]
                if got[0][0] != "none":
                    found.append((name, got[0]))
        leftover = [v for v in filled.leftover if id(v) not in producers_used]
        # A value two arguments could take is asked for only where one of them is: else nothing
        # would ever place it, and a call without it is not the call the person asked for.
        leftover += [
            value
            for value, takers in filled.unplaced
            if id(value) not in producers_used and not set(takers) & set(missing)
        ]
        if leftover:
            # Every value the person typed is in the call or is why the turn is not planned.
            state.why.append("nothing takes " + ", ".join(f"`{v.text}`" for v in leftover))
            return self._unread(state, "leftover", state.asked_again, leftover=leftover)
        if missing:
            for name, got in found:
                kind, payload = got
                if kind == "value":
                    filled.arguments[name] = payload
                    filled.origins[name] = FROM_TOOL
                    state.why.append(f"{name} from a listing tool's result")
                    missing.remove(name)
                elif kind == "options":
                    options = payload
                elif kind == "step" and payload not in steps:
                    steps.append(payload)
        call = self._call(profile, filled)
        producible = {name for name, _ in found}
        if missing and steps and not options and producible >= set(missing):
            state.why.append("runs " + ", ".join(s["tool"] for s in steps) + " first")
            return self._plan(plans.CHAIN, state, call=call, steps=steps, missing=missing,
                              said=filled.said)  # fmt: skip
        if missing:
            refused = self._refused_before_asking(state, profile, filled, missing)
            if refused is not None:
                return refused
            return self._ask(state, profile, filled, missing, options)
        steps = []
        for rule in profile.after:
            if self._after_ran(rule, filled.arguments, state.results):
                continue
            step = self._after_step(rule, filled.arguments)
            if step is None:
                state.why.append(f"{rule.text} has not run")
                return self._declined(state, ("order_rule",), rule=rule.text, call=call)
            steps.append(step)
        if steps:
            state.why.append("runs " + ", ".join(s["tool"] for s in steps) + " first")
            return self._plan(plans.CHAIN, state, call=call, steps=steps, said=filled.said)
        if self.rulebook is not None and profile.name in self._governed:
            answer = self._gate(state, profile, filled.arguments)
            if answer is not None and answer[0] == "refuse":
                _decision, reasons, detail, rule = answer
                reads = self._fact_steps(profile, filled.arguments, state.results)
                if reads:
                    state.why.append("the rulebook needs " + ", ".join(s["tool"] for s in reads))
                    return self._plan(plans.CHAIN, state, call=call, steps=reads,
                                      said=filled.said)  # fmt: skip
                return self._declined(state, reasons, rule=rule, detail=detail, call=call)
        if profile.write:
            tool = self.catalogue.tools.get(profile.name)
            question = self.phrases.question(
                profile.name,
                filled.arguments,
                description=getattr(tool, "description", ""),
                parameters=getattr(tool, "parameters", None),
                said=filled.said,
            )
            return self._plan(plans.CONFIRM, state, call=call, question=question,
                              said=filled.said)  # fmt: skip
        return self._plan(plans.TOOL, state, call=call, said=filled.said)

    def _refused_before_asking(
        self, state: _Turn, profile: ToolProfile, filled: Filled, missing: list[str]
    ) -> Plan | None:
        """A write that lacks only its amount, which the rulebook refuses whatever the amount
        (the order is not paid, as a read that ran reports): declined now, not asked how much."""
        if not profile.write or self.rulebook is None or profile.name not in self._governed:
            return None
        if not all(profile.by_name[name].amount for name in missing):
            return None
        if self._fact_steps(profile, filled.arguments, state.results):
            return None  # the facts are not known yet: ask, and read them once the call is whole
        answer = self._gate(state, profile, filled.arguments)
        if answer is None or answer[0] != "refuse":
            return None
        _decision, reasons, detail, rule = answer
        call = self._call(profile, filled)
        return self._declined(state, reasons, rule=rule, detail=detail, call=call)

    def _plan(self, kind: str, state: _Turn, **fields: Any) -> Plan:
        fields.setdefault("missing", ())
        fields["missing"] = tuple(fields["missing"])
        if "steps" in fields:
            fields["steps"] = tuple(fields["steps"])
        return Plan(kind, self.language, state.reading.turn, why=tuple(state.why), **fields)

    def _ask(
        self,
        state: _Turn,
        profile: ToolProfile,
        filled: Filled,
        missing: list[str],
        options: list[Any],
    ) -> Plan:
        phrases = self.phrases
        labels = phrases.join(
            [phrases.label(n, sorted(profile.by_name[n].cues) + name_words(n)) for n in missing]
        )
        question = phrases("ask_missing", action=phrases("run", tool=profile.name), labels=labels)
        reasons: list[str] = []
        invalid = [n for n in missing if n in filled.invalid]
        if invalid:
            question += " " + phrases(
                "ask_invalid",
                values=phrases.join([f"`{filled.invalid[n]}`" for n in invalid]),
                labels=phrases.join(invalid),
            )
            reasons.extend(f"invalid: {n}" for n in invalid)
        if options:
            question += " " + phrases("ask_options", options=", ".join(map(str, options)))
        state.why.append("missing " + ", ".join(missing))
        return self._plan(
            plans.ASK,
            state,
            call=self._call(profile, filled),
            missing=missing,
            options=tuple(options),
            question=question,
            reasons=tuple(reasons),
            said=filled.said,
        )

    def _declined(
        self,
        state: _Turn,
        reasons: Sequence[str],
        *,
        rule: str | None,
        detail: Mapping[str, Any] | None = None,
        call: Mapping[str, Any] | None = None,
    ) -> Plan:
        reason = "; ".join(reasons)
        key = "declined_rule" if rule and rule not in reasons else "declined"
        question = self.phrases(key, reason=reason, rule=rule)
        return self._plan(
            plans.DECLINED,
            state,
            call=call,
            reasons=tuple(reasons),
            rule=rule,
            question=question,
            detail=dict(detail or {}),
        )

    # -- chains --------------------------------------------------------------------------------

    def _produce(
        self, state: _Turn, profile: ToolProfile, param: Any, filled: Filled
    ) -> tuple[tuple[str, Any], set[int]] | None:
        """A missing value from a listing tool -- ("value", v), ("options", [...]) or ("step",
        call) -- with the turn's values the listing call uses."""
        best: tuple[int, ToolProfile, dict[str, Any], set[int]] | None = None
        for reader in self._reads:
            if reader.name == profile.name or reader.reads_outside:
                continue
            if param.name not in reader.produces:
                continue
            own = fill(reader, state.reading)
            # The listing call uses the turn's values the tool being completed could not take
            # ("site north", "open"), never one it left unplaced because two arguments could.
            arguments = {
                name: value
                for name, value in own.arguments.items()
                if (name not in profile.by_name or name not in filled.arguments)
                and (name not in own.sources or not takes(profile, own.sources[name]))
            }
            used = {id(value) for name, value in own.sources.items() if name in arguments}
            for name in reader.by_name:
                if name in filled.arguments and name != param.name:
                    arguments[name] = filled.arguments[name]
            if any(p.required and p.name not in arguments for p in reader.params):
                continue
            if reader.result_array and not arguments:
                continue  # listing everything to find one is not a lookup: ask instead
            rank = len(arguments) * 2 + (0 if reader.result_array else 1)
            if best is None or rank > best[0]:
                best = (rank, reader, arguments, used)
        if best is None:
            return None
        _rank, reader, arguments, used = best
        result = self._result_of(reader.name, arguments, state.results)
        if result is MISSING:
            return ("step", self._read_call(reader, arguments)), used
        found = []
        items = result if isinstance(result, list) else [result]
        for item in items:
            if isinstance(item, Mapping) and item.get(param.name) is not None:
                value = item[param.name]
                if param.validate(value) and value not in found:
                    found.append(value)
        if len(found) == 1:
            return ("value", found[0]), used
        if found:
            return ("options", found[:10]), used
        return ("none", None), used

    @staticmethod
    def result_of(tool: str, arguments: Mapping[str, Any], results: Sequence[Mapping[str, Any]]):
        """The newest result of `tool` called with `arguments` among `results`, or `MISSING`."""
        return Router._result_of(tool, arguments, results)

    @staticmethod
    def _result_of(tool: str, arguments: Mapping[str, Any], results: Sequence[Mapping[str, Any]]):
        try:
            wanted = value_key(dict(arguments))
        except Exception:  # noqa: BLE001 - arguments that cannot be compared match nothing
            return MISSING
        for content in reversed(results):
            if content.get("tool") != tool:
                continue
            try:
                same = value_key(dict(content.get("arguments") or {})) == wanted
            except Exception:  # noqa: BLE001
                same = False
            if same:
                return content.get("result")
        return MISSING

    @staticmethod
    def _after_ran(
        rule: OrderRule, arguments: Mapping[str, Any], results: Sequence[Mapping[str, Any]]
    ) -> bool:
        for content in reversed(results):
            if content.get("tool") != rule.tool:
                continue
            if all(
                binding.argument in arguments
                and resolve(content, binding.source) is not MISSING
                and value_key(resolve(content, binding.source))
                == value_key(arguments[binding.argument])
                for binding in rule.bind
            ):
                return True
        return False

    def _after_step(self, rule: OrderRule, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        reader = self.profiles.get(rule.tool)
        if reader is None or reader.write or reader.reads_outside:
            return None
        if reader.name not in self.reachable:
            return None
        own: dict[str, Any] = {}
        for binding in rule.bind:
            field = binding.source[-1]
            if field in reader.by_name and binding.argument in arguments:
                own[field] = arguments[binding.argument]
        for param in reader.params:
            if param.name not in own and param.name in arguments:
                own[param.name] = arguments[param.name]
        if any(p.required and p.name not in own for p in reader.params):
            return None
        return self._read_call(reader, own)

    def _fact_steps(
        self, profile: ToolProfile, arguments: Mapping[str, Any], results: Sequence[Any]
    ) -> list[dict[str, Any]]:
        steps: list[dict[str, Any]] = []
        for source in self.catalogue.fact_sources:
            if self._record_facts and source.name not in self._record_facts:
                continue
            reader = self.profiles.get(source.tool)
            if reader is None or reader.write or reader.reads_outside:
                continue
            if reader.name not in self.reachable:
                continue
            if not all(name in arguments for name in source.same):
                continue
            own = {name: arguments[name] for name in source.same if name in reader.by_name}
            for param in reader.params:
                if param.name not in own and param.name in arguments:
                    own[param.name] = arguments[param.name]
            if any(p.required and p.name not in own for p in reader.params):
                continue
            if self._result_of(reader.name, own, results) is not MISSING:
                continue
            call = self._read_call(reader, own)
            if call not in steps:
                steps.append(call)
        return steps

    def _gate(
        self, state: _Turn, profile: ToolProfile, arguments: Mapping[str, Any]
    ) -> tuple[str, tuple[str, ...], dict[str, Any], str | None] | None:
        try:
            from rulebooks.compiler import gate, resolve_facts

            spec = {
                name: spec
                for name, spec in self.catalogue.facts.items()
                if not self._record_facts or name in self._record_facts
            }
            facts = resolve_facts(
                spec,
                arguments=arguments,
                results=state.results,
                reads_outside=tuple(self.catalogue.outside_tools),
                context=state.context,
            )
            answer = gate(
                self.rulebook,  # type: ignore[arg-type]
                tool=profile.name,
                arguments=arguments,
                facts=facts,
                results=state.results,
            )
        except Exception as error:  # noqa: BLE001 - a rulebook that cannot answer declines
            code = getattr(error, "code", None)
            reason = code if isinstance(code, str) and code else "rulebook_error"
            return ("refuse", (reason,), {"error": type(error).__name__}, "your_rules")
        if answer is None:
            return None
        detail = dict(answer.detail)
        rule = None
        for key in ("flow", "rule"):
            if detail.get(key):
                rule = str(detail[key])
                break
        if rule is None and detail.get("row") is not None:
            rule = f"row {detail['row']}"
        return (answer.decision, tuple(answer.reasons) or ("refuse",), detail, rule)

    # -- calculations --------------------------------------------------------------------------

    def _calculation(self, state: _Turn) -> Plan:
        reading = state.reading
        nouns = reading.noun_concepts()
        best: tuple[int, ToolProfile, Filled] | None = None
        stray: list[Any] = []
        for reader in self._reads:
            # A read of outside content (the inbox) is counted too: the function runs in the
            # sandbox over its results, and no value of them becomes an argument of a call.
            if not reader.countable:
                continue
            if nouns and not (reader.nouns & nouns):
                continue
            own = fill(reader, reading)
            if own.leftover or own.unplaced or own.invalid:
                stray = stray or [
                    *own.leftover,
                    *(value for value, _ in own.unplaced),
                    *(v for v in reading.values if v.text in own.invalid.values()),
                ]
                continue
            if own.missing(reader):
                continue
            rank = (
                4 * len(reader.name_nouns & nouns)
                + 2 * len(own.arguments)
                + reader.result_array
                + reader.list_like
            )
            if best is None or rank > best[0]:
                best = (rank, reader, own)
        if best is None and stray:
            # A value the calculation's read would not take: never counted over without it.
            state.why.append("nothing takes " + ", ".join(f"`{v.text}`" for v in stray))
            return self._unread(state, "leftover", state.asked_again, leftover=stray)
        if best is None:
            state.why.append("no listing tool returns " + ", ".join(sorted(nouns)))
            return self._unread(state, "no_tool", False)
        _rank, reader, own = best
        state.why.append(f"a calculation over {reader.name}")
        state.why.extend(own.trace)
        call = self._read_call(reader, own.arguments)
        reads = [call, *self._more_reads(state, reader, nouns)]
        if not self.sandbox:
            off = getattr(self.sandbox, "compute_off", None) or _COMPUTE_OFF_SANDBOX
            return self._declined(state, (off,), rule="compute", call=call)
        if not self.model:
            return self._declined(state, (_COMPUTE_OFF_MODEL,), rule="compute", call=call)
        steps = [
            read
            for read in reads
            if self._result_of(read["tool"], read["arguments"], state.results) is MISSING
        ]
        return self._plan(
            plans.CALCULATION,
            state,
            call=call,
            steps=steps,
            question=reading.turn,
            said=own.said,
            detail={"reads": [copy.deepcopy(read) for read in reads]},
        )

    def _more_reads(
        self, state: _Turn, first: ToolProfile, nouns: set[str]
    ) -> list[dict[str, Any]]:
        """The other reads a calculation draws on: one listing read for each thing the turn
        counts that the first read does not return ("the orders and the payments"), each with
        every argument it needs (a read that would have to ask is left out)."""
        left = set(nouns) - set(first.nouns)
        more: list[dict[str, Any]] = []
        for reader in self._reads:
            if not left or reader is first or not reader.countable:
                continue
            if not (reader.name_nouns & left):
                continue
            own = fill(reader, state.reading)
            if own.invalid or own.missing(reader):
                continue
            left -= reader.nouns
            state.why.append(f"and over {reader.name}")
            more.append(self._read_call(reader, own.arguments))
        return more

    # -- unread --------------------------------------------------------------------------------

    def _unread(
        self,
        state: _Turn,
        reason: str,
        asked_again: bool,
        *,
        leftover: Sequence[Any] = (),
    ) -> Plan:
        reading = state.reading
        phrases = self.phrases
        reasons = (f"unread: {reason}",)
        if not asked_again:
            question = phrases("say_again")
            hint = self._hint(reason, reading, leftover)
            if hint:
                question = f"{question} {hint}"
            return self._plan(
                plans.UNREAD, state, action=plans.SAY_AGAIN, question=question, reasons=reasons
            )
        setting = state.on_unread
        state.why.append(f"on_unread: {setting}")
        if setting == plans.MODEL and self.model:
            return self._plan(plans.UNREAD, state, action=plans.MODEL, reasons=reasons)
        if setting == plans.ASK_MODEL and self.model:
            return self._plan(
                plans.UNREAD,
                state,
                action=plans.ASK_MODEL,
                question=phrases("ask_model"),
                reasons=reasons,
            )
        if setting == plans.ANSWER and self.composer is not None:
            answer = self.composer.answer(reading.turn)
            if answer is not None and answer.composer != "extract" and self.model:
                # The model writes the answer from the grounded passages, and cites them.
                return self._plan(
                    plans.UNREAD,
                    state,
                    action=plans.ANSWER,
                    answer=answer.to_dict(),
                    reasons=reasons,
                )
            if answer is not None and answer.composer != "extract":
                return self._plan(
                    plans.UNREAD,
                    state,
                    action=plans.REFUSE,
                    question=phrases("unread_refused"),
                    reasons=(*reasons, "no_model"),
                )
            if answer is not None:
                return self._plan(
                    plans.UNREAD,
                    state,
                    action=plans.ANSWER,
                    answer=answer.to_dict(),
                    question=phrases("answer", text=answer.text, source=answer.source),
                    reasons=reasons,
                )
            return self._plan(
                plans.UNREAD,
                state,
                action=plans.REFUSE,
                question=phrases("no_answer"),
                reasons=(*reasons, "no_grounded_answer"),
            )
        extra: tuple[str, ...] = ()
        if setting in (plans.MODEL, plans.ASK_MODEL) and not self.model:
            extra = ("no_model",)
        elif setting == plans.ANSWER:
            extra = ("no_documents",)
        return self._plan(
            plans.UNREAD,
            state,
            action=plans.REFUSE,
            question=phrases("unread_refused"),
            reasons=(*reasons, *extra),
        )

    def _hint(self, reason: str, reading: Reading, leftover: Sequence[Any]) -> str:
        phrases = self.phrases
        if reason == "pt_pt":
            return phrases("hint_pt_pt")
        if reason == "unknown_words":
            return phrases(
                "hint_unknown", words=phrases.join([f"`{w}`" for w in reading.unknown[:5]])
            )
        if reason == "value_format":
            return phrases(
                "hint_value",
                values=phrases.join([f"`{p.text}`" for p in reading.problems]),
                how=reading.problems[0].hint,
            )
        if reason == "several_actions":
            return phrases("hint_several")
        if reason == "negated":
            return phrases("hint_negated")
        if reason == "question":
            return phrases("hint_question")
        if reason == "refers_back":
            return phrases("hint_refers")
        if reason == "no_tool":
            return phrases("hint_no_tool")
        if reason == "too_long":
            return phrases("hint_too_long")
        if reason == "leftover":
            return phrases(
                "hint_unknown", words=phrases.join([f"`{v.text}`" for v in leftover[:5]])
            )
        return phrases("hint_empty")
