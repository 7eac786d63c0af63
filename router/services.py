"""A turn read into a plan under the organisation's settings, and the checks' answers for it.

The language is chosen (the request's, else the Settings page's), never guessed; `on_unread` is
the organisation's unless the request names one.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.core.exceptions import ValidationError

from console.access import Actor, require
from console.services import settings_get
from guard import engine as guard_engine
from router import engine

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
) -> dict[str, Any]:
    """The plan for one turn, why, and (with `check`) what the tool check answers its call."""
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
        vocab = engine.load_vocabulary(vocabulary) if vocabulary else None
        router = engine.Router(
            loaded,
            rulebook=rulebook,
            vocabulary=vocab,
            language=chosen,
            on_unread=settings.on_unread,
            agent=agent,
        )
        plan = router.plan(turn)
    except engine.VocabularyInvalid as exc:
        raise ValidationError({"vocabulary": [str(exc)]}) from exc
    except engine.RouterError as exc:
        raise ValidationError({"non_field_errors": [str(exc)]}) from exc
    result = {"plan": plan.to_dict(), "language": chosen}
    if check and plan.to_dict().get("call"):
        call = plan.to_dict()["call"]
        tool_check = guard_engine.ToolCheck(
            loaded,
            key=secrets.token_bytes(32),
            rulebook=rulebook,
            post_checks=engine.said_checks(router, turns=[turn]),
        )
        history = tool_check.new_history("try-a-turn")
        result["check"] = tool_check.check(call, session=history).to_dict()
    return result
