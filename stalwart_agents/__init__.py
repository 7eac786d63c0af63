"""Stalwart's SDK and the `stalwart` command line (`stalwart_agents.cli`).

`Agent.from_file("agent.yaml")` reads an agent on this machine; `Client()` opens sessions whose
every tool call is checked, against the console (`STALWART_URL`) or in this process.
"""

from stalwart_agents.agent import Agent, AgentFileError, Rules
from stalwart_agents.client import (
    ApprovalDenied,
    ApprovalTimeout,
    Check,
    Client,
    RequestRefused,
    SelectorUnavailableError,
    Session,
)

__all__ = [
    "Agent",
    "AgentFileError",
    "ApprovalDenied",
    "ApprovalTimeout",
    "Check",
    "Client",
    "RequestRefused",
    "Rules",
    "SelectorUnavailableError",
    "Session",
]
