"""The console's Settings, as a conversation of `Agent.chat` takes them at its first turn.

Where `STALWART_URL` (and `STALWART_API_KEY`) are set, a conversation takes from the console's
Settings page (`GET /v1/settings`, which a key of any role may read) the language its turns are
read in, `on_unread` (what a turn nothing reads does, where the agent says nothing) and the modes
of the checks of what was said. They are read once, when the conversation starts, and kept for
it: a change on the Settings page applies to the conversations that start after it.

Where the console cannot answer -- unreachable, an error, a key it refuses, an answer without
these settings or with a value this SDK does not know -- `SelectorUnavailableError` is raised and
the turn is not taken: a conversation never runs under settings it guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stalwart_agents.client import Client, RequestRefused, SelectorUnavailableError

LANGUAGES = ("en", "pt-BR")
ON_UNREAD = ("refuse", "model", "ask", "answer")
SAID_MODES = {
    "grounded": ("off", "confirm"),
    "s1_veto": ("off", "refuse", "confirm"),
    "s2_veto": ("off", "refuse", "confirm"),
    "confirm_read": ("off", "refuse", "confirm"),
}


@dataclass(frozen=True)
class ConsoleSettings:
    """What a conversation takes from the console: language, `on_unread`, the said modes."""

    language: str
    on_unread: str
    said_modes: Mapping[str, str] = field(default_factory=dict)


def _read(answer: Any, url: str) -> ConsoleSettings:
    if not isinstance(answer, Mapping):
        raise SelectorUnavailableError(f"the console at {url} answered no settings")
    wanted: dict[str, tuple[str, ...]] = {
        "language": LANGUAGES,
        "on_unread": ON_UNREAD,
        **SAID_MODES,
    }
    values: dict[str, str] = {}
    for name, allowed in wanted.items():
        value = answer.get(name)
        if value not in allowed:
            raise SelectorUnavailableError(
                f"the console at {url} answered `{name}` as `{value}`, "
                f"not one of {', '.join(allowed)}"
            )
        values[name] = value
    return ConsoleSettings(
        language=values["language"],
        on_unread=values["on_unread"],
        said_modes={name: values[name] for name in SAID_MODES},
    )


def console_settings(client: Client | None = None) -> ConsoleSettings | None:
    """The console's settings for a new conversation, or None where no console is configured.

    Raises `SelectorUnavailableError` where a console is configured and cannot answer.
    """
    client = client or Client()
    if not client.remote:
        return None
    try:
        answer = client.get("/v1/settings")
    except RequestRefused as exc:
        raise SelectorUnavailableError(
            f"the console at {client.url} refused to give its settings ({exc.status})"
        ) from exc
    return _read(answer, client.url)
