"""The Agents SDK door keeps a catalogue's `secret` arguments out of the SDK's traces: the run
config `StalwartTools.run_config()` makes records no tool inputs or outputs when a tool it guards
has a secret argument (a host may still say otherwise, explicitly)."""

from __future__ import annotations

import asyncio
import json

import pytest
from agents import Agent, Runner
from agents.tracing import get_trace_provider, set_trace_processors
from agents.tracing.processor_interface import TracingProcessor

from stalwart_agents import Client
from stalwart_agents.guarded import Guard
from stalwart_agents.openai_agents import StalwartTools
from tests.frameworks.scripted_agents_model import ScriptedModel
from tests.frameworks.test_secret_arguments import CARD, CATALOGUE


class Kept(TracingProcessor):
    """Every span that ended, as the SDK exports it."""

    def __init__(self) -> None:
        self.spans: list[dict] = []

    def on_trace_start(self, trace):  # noqa: ANN001, ANN201
        pass

    def on_trace_end(self, trace):  # noqa: ANN001, ANN201
        pass

    def on_span_start(self, span):  # noqa: ANN001, ANN201
        pass

    def on_span_end(self, span):  # noqa: ANN001, ANN201
        self.spans.append(span.export() or {})

    def shutdown(self):  # noqa: ANN201
        pass

    def force_flush(self):  # noqa: ANN201
        pass


@pytest.fixture
def kept():
    provider = get_trace_provider()
    before = list(provider._multi_processor._processors)  # noqa: SLF001 - restored after
    processor = Kept()
    set_trace_processors([processor])
    yield processor
    set_trace_processors(before)


def run_once(tools, **options):  # noqa: ANN001, ANN003, ANN201
    model = ScriptedModel(("pay", {"invoice": "A-1", "card_number": CARD}, "c1"), "done")
    agent = Agent(name="desk", instructions="The desk.", tools=tools.tools, model=model)
    return asyncio.run(Runner.run(agent, "pay invoice A-1", run_config=tools.run_config(**options)))


def test_a_secret_argument_is_not_in_the_sdks_traces(kept):
    guard = Guard(Client().session("desk", catalogue=CATALOGUE))
    tools = StalwartTools(guard, CATALOGUE, functions={"pay": lambda a: {"paid": a["invoice"]}})
    result = run_once(tools)
    assert result.interruptions  # the write waits for a person; the model's call was traced
    assert kept.spans
    assert CARD not in json.dumps(kept.spans, default=str)


def test_a_host_that_says_so_explicitly_still_gets_the_inputs_traced(kept):
    guard = Guard(Client().session("desk", catalogue=CATALOGUE))
    tools = StalwartTools(guard, CATALOGUE, functions={"pay": lambda a: {"paid": a["invoice"]}})
    run_once(tools, trace_include_sensitive_data=True)
    assert CARD in json.dumps(kept.spans, default=str)
