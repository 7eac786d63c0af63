"""The checks of what was said, as post-checks of the guard's `ToolCheck`.

Each reads the person's turns with the router's own reader (the chosen language, no model) and can
only make the tool check's answer stricter (`guard.engine.stricter_only`): a refusal stays a
refusal, a confirmation never becomes an allow. S1, S2 and the confirmation reading read only the
person's latest turn, and only when turns are given; each has three modes, `off`, `refuse` (a hard
stop) and `confirm` (ask the person, the default). The call is never changed.

- `s1_veto` -- the turn asks to send something out (a sending verb: "post", "email ...", "envie",
  "publique") and the call's tool does not send out: held.
- `s2_veto` -- the turn names a destination (an e-mail address, a URL, a channel: `#team`, "the
  team channel", "canal geral") that no tool of the catalogue receives (no `sends_out` tool has an
  argument of that kind) and the call does not carry: held. Where some tool does receive it, the
  call may be one step of several ("save a note, then e-mail it"); a call that carries it
  differently is the confirmation reading's to catch.
- `confirm_read` -- the turn is read against the call's tool as the router would fill it, values
  as typed; a value the turn gives that the call lacks, or gives differently, makes the call wait
  for the person, who is shown both (`detail.said` and `detail.call`).
- `grounded` -- the origin of values: in a write, a value that no turn of the person says and no
  tool returned in the session is asked about (`argument_origin: <name>`); never allowed, never
  refused, so it has no modes beyond on and off.

Which checks run is the tool check's `checks=[...]`; the modes are given here. A `confirm` asks the
person about exactly this call; once they said yes to it (the tool check allowed it with their
token: `confirmed`), a check in `confirm` mode has its answer and does not ask again, while one in
`refuse` mode still refuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from guard.engine.decision import CONFIRM, REFUSE, Decision
from guard.engine.kinds import SENDS_OUT, is_write
from guard.engine.post_checks import PostCheck

from .errors import SettingInvalid
from .lexicon import SEND
from .reader import Reading, Word
from .router import Router
from .slots import fill
from .text import fold
from .values import CHANNEL, EMAIL, URL, Value

MODES = ("off", "refuse", "confirm")
MODAL_CHECKS = ("s1_veto", "s2_veto", "confirm_read")
SAID_CHECKS = (*MODAL_CHECKS, "grounded")
Turns = Sequence[str] | Callable[[], Sequence[str]] | None


def _modes(modes: Mapping[str, str] | None) -> dict[str, str]:
    out = {name: "confirm" for name in SAID_CHECKS}
    for name, mode in (modes or {}).items():
        if name not in SAID_CHECKS:
            raise SettingInvalid(f"there is no check of what was said named `{name}`")
        allowed = MODES if name in MODAL_CHECKS else ("off", "confirm")
        if mode not in allowed:
            raise SettingInvalid(f"`{name}` runs in {', '.join(allowed)}, not `{mode}`")
        out[name] = mode
    return out


def _turns(turns: Turns) -> list[str]:
    given = turns() if callable(turns) else turns
    if not given:
        return []
    return [turn for turn in given if isinstance(turn, str) and turn.strip()]


def _answer(mode: str, reason: Sequence[str], detail: Mapping[str, Any]) -> Decision:
    return Decision(REFUSE if mode == "refuse" else CONFIRM, tuple(reason), dict(detail))


def same_value(a: Any, b: Any) -> bool:
    """Whether two values are the one a person means: numbers by value, text folded (case and
    accents), a number and its text either way round; a boolean is only ever itself."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, str) and isinstance(b, str):
        return fold(a).strip() == fold(b).strip()
    if isinstance(a, str) and isinstance(b, (int, float)):
        return fold(a).strip() == str(b)
    if isinstance(b, str) and isinstance(a, (int, float)):
        return fold(b).strip() == str(a)
    return a == b


def sending_words(reading: Reading, router: Router) -> list[str]:
    """The words of a turn that ask to send something out."""
    return [word.text for word in reading.verbs if router.lexicon.family(word.concept) == SEND]


def destinations(reading: Reading) -> list[tuple[str, str]]:
    """(kind, text) of each place a turn names to send to: e-mails, URLs, channels."""
    out: list[tuple[str, str]] = []
    for value in reading.values:
        if value.kind == EMAIL:
            out.append(("email", value.text))
        elif value.kind == URL:
            out.append(("url", value.text))
        elif value.kind == CHANNEL:
            out.append(("channel", value.text))
    items = reading.items
    for index, item in enumerate(items):
        if not (isinstance(item, Word) and item.role == "noun" and item.concept == "channel"):
            continue
        if any(kind == "channel" for kind, _ in out):
            break
        name = None
        before = items[index - 1] if index > 0 else None
        after = items[index + 1] if index + 1 < len(items) else None
        if isinstance(before, Word) and before.role not in ("determiner", "function", "modal"):
            name = before.text
        elif isinstance(after, Word) and after.role in ("noun", "word", "unknown"):
            name = after.text
        elif isinstance(after, Value) and after.kind == "word":
            name = after.text
        out.append(("channel", f"{name} {item.text}" if name else item.text))
    return out


def _carries(arguments: Mapping[str, Any], text: str) -> bool:
    wanted = fold(text).strip()
    core = wanted.split()[0].lstrip("#") if wanted else ""

    def walk(value: Any) -> bool:
        if isinstance(value, str):
            folded = fold(value)
            return wanted in folded or (len(core) >= 3 and core in folded)
        if isinstance(value, Mapping):
            return any(walk(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return any(walk(v) for v in value)
        return False

    return walk(dict(arguments))


def leaves(value: Any) -> Iterable[Any]:
    """Every scalar inside a JSON value (mappings and lists walked through)."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    else:
        yield value


class _Said:
    """The four checks over one router and a source of the person's turns."""

    def __init__(self, router: Router, turns: Turns, modes: Mapping[str, str] | None) -> None:
        self.router = router
        self.turns = turns
        self.modes = _modes(modes)
        self._readings: dict[str, Reading] = {}
        receives: dict[str, bool] = {"email": False, "url": False, "channel": False}
        for profile in router.profiles.values():
            if profile.kind != SENDS_OUT:
                continue
            for param in profile.params:
                if param.slot in receives:
                    receives[param.slot] = True
        self.receives = receives

    def latest(self, given: Turns = None) -> Reading | None:
        turns = _turns(given if given is not None else self.turns)
        if not turns:
            return None
        return self.read(turns[-1])

    def read(self, turn: str) -> Reading:
        """The router's reading of a turn, read once: the three checks read the same turn."""
        found = self._readings.get(turn)
        if found is None:
            found = self.router.read(turn)
            if len(self._readings) >= 256:
                self._readings.clear()  # a bound, not an order: the next reads fill it again
            self._readings[turn] = found
        return found

    def s1(
        self, call: Any, decision: Decision, *, turns: Turns = None, **_: Any
    ) -> Decision | None:
        mode = self.modes["s1_veto"]
        reading = self.latest(turns) if mode != "off" else None
        if reading is None:
            return None
        tool = self.router.catalogue.tools.get(call.tool)
        if tool is None or tool.kind == SENDS_OUT:
            return None
        words = sending_words(reading, self.router)
        if not words:
            return None
        return _answer(mode, ("s1_veto",), {"said": words, "tool_kind": tool.kind})

    def s2(
        self, call: Any, decision: Decision, *, turns: Turns = None, **_: Any
    ) -> Decision | None:
        mode = self.modes["s2_veto"]
        reading = self.latest(turns) if mode != "off" else None
        if reading is None:
            return None
        held = [
            text
            for kind, text in destinations(reading)
            if not self.receives.get(kind, False) and not _carries(call.arguments, text)
        ]
        if not held:
            return None
        return _answer(mode, ("s2_veto",), {"destinations": held})

    def confirm_read(
        self, call: Any, decision: Decision, *, turns: Turns = None, **_: Any
    ) -> Decision | None:
        mode = self.modes["confirm_read"]
        reading = self.latest(turns) if mode != "off" else None
        if reading is None:
            return None
        profile = self.router.profiles.get(call.tool)
        if profile is None:
            return None
        filled = fill(profile, reading)
        said: dict[str, str] = {}
        given: dict[str, Any] = {}
        names: list[str] = []
        for name, value in filled.arguments.items():
            if name in call.arguments and same_value(value, call.arguments[name]):
                continue
            said[name] = filled.said.get(name, str(value))
            given[name] = call.arguments.get(name)
            names.append(name)
        if not names:
            return None
        secret = getattr(self.router.catalogue.tools.get(call.tool), "secret", frozenset())
        reasons = []
        for name in names:
            shown_said = "[secret]" if name in secret else said[name]
            if name not in call.arguments:
                reasons.append(f"confirm_read: {name} (said `{shown_said}`, the call lacks it)")
            else:
                shown = "[secret]" if name in secret else given[name]
                reasons.append(
                    f"confirm_read: {name} (said `{shown_said}`, the call has `{shown}`)"
                )
        # The reasons carry both values: where the answer was already `confirm`, the guard keeps
        # the first detail, and the person must still see what they said beside what the call says.
        return _answer(
            mode,
            tuple(reasons),
            {"said": said, "call": given, "lacks": [n for n in names if n not in call.arguments]},
        )

    def grounded(
        self, call: Any, decision: Decision, *, session: Any = None, turns: Turns = None, **_: Any
    ):
        if self.modes["grounded"] == "off":
            return None
        tool = self.router.catalogue.tools.get(call.tool)
        if tool is None or not is_write(tool.kind):
            return None
        turns = _turns(turns if turns is not None else self.turns)
        if not turns:
            return None
        readings = [self.read(turn) for turn in turns]
        folded_turns = [fold(turn) for turn in turns]
        tokens = {word for text in folded_turns for word in text.split()}
        said: list[Any] = []
        for reading in readings:
            said.extend(value.value for value in reading.values)
            said.extend(value.text for value in reading.values)
            said.extend(value.value for value in reading.texts)
            said.extend(word.concept for word in reading.statuses if word.concept)
        returned: list[Any] = []
        if session is not None:
            for content in getattr(session, "results", ()):
                returned.extend(leaves(content.get("result")))
        unvouched = []
        free_text = getattr(tool, "free_text", frozenset())
        for name, value in call.arguments.items():
            if name in free_text:  # the model is expected to write it (a message's body)
                continue
            found = [leaf for leaf in leaves(value) if leaf is not None]
            if all(
                isinstance(leaf, bool)
                or any(same_value(leaf, s) for s in said)
                or any(same_value(leaf, r) for r in returned)
                or (isinstance(leaf, str) and fold(leaf).strip() in tokens)
                or (
                    isinstance(leaf, str)
                    and len(leaf.strip()) >= 3
                    and any(fold(leaf).strip() in text for text in folded_turns)
                )
                for leaf in found
            ):
                continue
            unvouched.append(name)
        if not unvouched:
            return None
        return Decision(
            CONFIRM,
            tuple(f"argument_origin: {name}" for name in unvouched),
            {"unvouched": unvouched},
        )


def said_checks(
    router: Router, *, turns: Turns, modes: Mapping[str, str] | None = None
) -> list[PostCheck]:
    """S1, S2, the confirmation reading and `grounded`, to give to `ToolCheck(post_checks=...)`.

    `turns` is the person's turns, oldest first (or a function returning them, read at each
    check); `modes` maps `s1_veto`, `s2_veto`, `confirm_read` to `off`, `refuse` or `confirm`, and
    `grounded` to `off` or `confirm`.
    """
    said = _Said(router, turns, modes)
    return [
        PostCheck("grounded", _asks_once(said.grounded)),
        PostCheck("s1_veto", _asks_once(said.s1)),
        PostCheck("s2_veto", _asks_once(said.s2)),
        PostCheck("confirm_read", _asks_once(said.confirm_read)),
    ]


def _asks_once(run: Callable[..., Decision | None]) -> Callable[..., Decision | None]:
    """A check whose `confirm` is answered by the person's yes to exactly this call."""

    def check(call: Any, decision: Decision, **given: Any) -> Decision | None:
        answer = run(call, decision, **given)
        if answer is not None and answer.decision == CONFIRM and "confirmed" in decision.reasons:
            return None
        return answer

    return check
