"""A turn read into a plan under the organisation's settings, and the checks' answers for it.

The language is chosen (the request's, else the Settings page's), never guessed; `on_unread` is
the organisation's (an agent's own setting in the catalogue still wins). The conversation state
(`history`, `results`, `asked_again`; see `router.state`) is the caller's: the results are recorded
into the signed history the plan's check runs over, so a chain continues from them and the check
reads them as a conversation's check would. The check runs the checks of what was said in the
organisation's modes, over the person's turns (the earlier plans' and this one).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from console.access import Actor, require
from console.services import settings_get
from guard import engine as guard_engine
from router import engine
from router.state import StateInvalid, read_state

LANGUAGES = {"en": "en", "pt-BR": "pt-BR", "pt-br": "pt-BR"}


def plan_turn(
    *,
    actor: Actor,
    turn: Any,
    catalogue: Any,
    agent: str | None = None,
    rulebook: dict | None = None,
    language: str | None = None,
    vocabulary: str | None = None,
    check: bool = False,
    history: Any = None,
    results: Any = None,
    asked_again: Any = False,
    model: bool = False,
) -> dict[str, Any]:
    """The plan for one turn, why, and (with `check`) what the tool check answers its call;
    with `model`, where the settings send the turn to a model, what that model does with it
    (`model_turn`).

    `history`, `results` and `asked_again` are the conversation's state (`router.state`); a
    ValidationError names every field path that is wrong, and nothing is planned then.
    """
    require(actor, "router.plan")
    errors: dict[str, list[str]] = {}
    if not isinstance(turn, str) or not turn.strip():
        errors["turn"] = ["the person's turn, as text"]
    settings = settings_get(organisation=actor.organisation)
    chosen = LANGUAGES.get(language or settings.language)
    if chosen is None:
        errors["language"] = [f"`{language}` is not a language the router reads (en, pt-BR)"]
    if errors:
        raise ValidationError(errors)
    try:
        loaded = guard_engine.load_catalogue(catalogue)
    except guard_engine.CatalogueInvalid as exc:
        raise ValidationError(
            {f"catalogue.{i.path}" if i.path else "catalogue": [i.message] for i in exc.issues}
        ) from exc
    try:
        state = read_state(
            history=history,
            results=results,
            asked_again=asked_again,
            tools=frozenset(loaded.tools),
        )
    except StateInvalid as exc:
        raise ValidationError(exc.errors) from exc
    try:
        vocab = engine.load_vocabulary(vocabulary) if vocabulary else None
        router = engine.Router(
            loaded,
            rulebook=rulebook,
            vocabulary=vocab,
            language=chosen,
            on_unread=settings.on_unread,
            agent=agent,
        )
    except engine.VocabularyInvalid as exc:
        raise ValidationError({"vocabulary": [str(exc)]}) from exc
    except engine.RouterError as exc:
        raise ValidationError({"non_field_errors": [str(exc)]}) from exc
    from guard.services import engine_settings, session_key
    from stalwart_agents import runtime

    # The plan's call is decided by the runtime every door runs on, under the organisation's
    # settings (its taint policy, licence and the modes of the checks of what was said).
    wired = runtime.wiring(
        catalogue,
        key=session_key(actor.organisation.pk),
        rulebook=rulebook,
        settings={**engine_settings(actor.organisation.pk), "language": chosen},
    )
    tool_check = wired.check
    session = tool_check.new_history("plan")
    problems: dict[str, list[str]] = {}
    for i, ran in enumerate(state.results):
        call = {key: ran[key] for key in ("tool", "agent", "arguments", "labels") if key in ran}
        try:
            tool_check.record(session, call, ran["result"])
        except guard_engine.MalformedCall as exc:
            problems[f"results[{i}]"] = [str(exc)]
    if problems:
        raise ValidationError(problems)
    try:
        plan = router.plan(
            turn, history=state.history, results=session, asked_again=state.asked_again
        )
    except engine.RouterError as exc:
        raise ValidationError({"non_field_errors": [str(exc)]}) from exc
    planned = plan.to_dict()
    result = {"plan": planned, "language": chosen}
    if check and planned.get("call"):
        result["check"] = wired.decide(
            planned["call"], history=session, head=session.head, turns=[*state.turns, turn]
        ).to_dict()
        if result["check"]["decision"] == "confirm":
            # What the person would be asked, as the conversation asks it.
            call = planned["call"]
            tool = loaded.tools.get(str(call.get("tool")))
            result["question"] = planned.get("question") or router.phrases.question(
                str(call.get("tool")),
                call.get("arguments") or {},
                description=getattr(tool, "description", ""),
                parameters=getattr(tool, "parameters", None),
                said=planned.get("said") or None,
            )
    if model:
        result["model"] = model_turn(router, turn, plan, wired=wired, turns=[*state.turns, turn])
    return result


NOT_FAKED = "The turn is refused; no answer is made up."


def model_turn(
    router: engine.Router, turn: str, plan: Any, *, wired: Any, turns: list[str]
) -> dict[str, Any] | None:
    """Where the settings send an unread turn to a model (after the one request to say it again):
    the model the agent names, called once, and the tool check's answer to each call it asks for
    (none runs here). With no model configured, or one that cannot answer, it says so: an answer
    is never made up. None where no model would be asked."""
    from stalwart_agents.models import ModelOptions, make_model

    if plan.kind != engine.plan.UNREAD:
        return None
    then = plan
    if plan.action == engine.plan.SAY_AGAIN:
        then = router.plan(turn, asked_again=True)
    if "no_model" in then.reasons:
        return {
            "status": "none",
            "message": "The settings send this turn to a model, but no model is configured: "
            f'the agent names none (`model: "provider:model"`). {NOT_FAKED}',
        }
    if then.action not in (engine.plan.MODEL, engine.plan.ASK_MODEL):
        return None
    name = router.model
    if then.action == engine.plan.ASK_MODEL:
        return {
            "status": "ask",
            "name": name,
            "message": f"The person is asked first ({then.question}); only on their yes does "
            f"`{name}` get the turn.",
        }
    reachable = tuple(sorted(router.reachable))
    request = engine.models.ModelRequest(
        engine.models.TURN,
        turn,
        router.language,
        tools=reachable,
        messages=({"role": "user", "content": turn},),
        schemas=engine.models.tool_schemas(router.catalogue, reachable),
    )
    try:
        adapter = make_model(name, ModelOptions(timeout=20, max_retries=0), agent=router.agent)
        reply = adapter.respond(request)
    except engine.RouterError as exc:
        return {
            "status": "unavailable",
            "name": name,
            "message": f"No model could answer: {exc}. {NOT_FAKED}",
        }
    history = wired.check.new_history("try-a-turn-model")
    calls = []
    for asked in reply.calls:
        arguments = dict(asked.get("arguments") or {})
        call = {"tool": asked.get("tool"), "arguments": arguments,
                "origins": {key: "model" for key in arguments}}  # fmt: skip
        owner = router.owner_of(str(call["tool"]))
        if owner is not None:
            call["agent"] = owner
        decision = wired.decide(call, history=history, head=history.head, turns=turns)
        calls.append({"call": call, "check": decision.to_dict()})
    return {"status": "answered", "name": name, "text": reply.text, "calls": calls}
