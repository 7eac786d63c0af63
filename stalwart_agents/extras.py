"""What `Agent.chat` adds on this machine to the router and the conversation it builds.

- **The sandbox** a calculation's function runs in: `stalwart_agents.sandbox.default_sandbox()`
  unless the agent was given another (`Agent(..., sandbox=...)`), or none (`sandbox=False`: every
  calculation is then declined, `compute off:`).
- **The documents** `on_unread: answer` answers from: agent.yaml's `documents:`, checked and
  indexed when the agent is built (`AgentFileError` naming the key and its line), and brought up
  to date again when a conversation starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ChatExtras:
    """The sandbox and the documents of one agent (see the module docstring)."""

    def __init__(self, *, path: Path, other: Any, text: str | None, sandbox: Any = None) -> None:
        from stalwart_agents.sandbox import default_sandbox

        self.sandbox = (
            default_sandbox() if sandbox is None else (None if sandbox is False else sandbox)
        )
        self.documents = None
        raw = (other or {}).get("documents")
        if raw is not None:
            from stalwart_agents.agent import AgentFileError
            from stalwart_agents.documents import DocumentsInvalid, open_documents

            if text is None:
                try:
                    text = path.read_text(encoding="utf-8")
                except OSError:
                    text = None
            try:
                self.documents = open_documents(path, raw, text)
            except DocumentsInvalid as error:
                raise AgentFileError("; ".join(error.problems)) from None

    def router_options(self) -> dict[str, Any]:
        """`Router(...)`'s sandbox and documents; the documents' index brought up to date."""
        if self.documents is not None:
            from stalwart_agents.agent import AgentFileError
            from stalwart_agents.documents import DocumentsInvalid

            try:
                self.documents.refresh()
            except DocumentsInvalid as error:
                raise AgentFileError("; ".join(error.problems)) from None
        return {"sandbox": self.sandbox, "documents": self.documents}

    def conversation_options(self, agent: Any) -> dict[str, Any]:
        """`Conversation(...)`'s sandbox, and the model adapter the agent holds, if any."""
        options: dict[str, Any] = {"sandbox": self.sandbox}
        model = getattr(agent, "model", None)
        if model is not None and callable(getattr(model, "respond", None)):
            options["model"] = model
        return options
