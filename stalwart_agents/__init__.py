"""Stalwart's SDK and the `stalwart` command line (`stalwart_agents.cli`).

`Agent.from_file("agent.yaml")` reads an agent on this machine and proves it first (`verify=True`,
the default; `NotVerified` when the proof stops it); `Client()` opens sessions whose every tool
call is checked, against the console (`STALWART_URL`) or in this process, and submits graph
proofs (`verify_graph`).
"""

from guard.engine.execution import ExecutionContext, Replayed
from stalwart_agents.agent import Agent, AgentFileError, NotVerified, Rules
from stalwart_agents.client import (
    ApprovalDenied,
    ApprovalTimeout,
    Check,
    Client,
    ProofUnfinished,
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
    "ExecutionContext",
    "NotVerified",
    "ProofUnfinished",
    "RequestRefused",
    "Replayed",
    "Rules",
    "SelectorUnavailableError",
    "Session",
]
