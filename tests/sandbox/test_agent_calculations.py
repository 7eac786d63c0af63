"""Calculations end to end through `Agent.chat`: the model writes the function, the sandbox runs it.

The shop in `shop/` has two listing reads, orders and credit notes. A turn that totals both has
both reads run (through the tool check), the agent's model -- scripted here -- writes a function,
and the sandbox runs it with one argument per read.
"""

from __future__ import annotations

from pathlib import Path

from router.engine.models import ScriptedModel
from stalwart_agents import Agent
from stalwart_agents.sandbox import Limits, Sandbox, SandboxUnavailable

SHOP = Path(__file__).resolve().parent / "shop" / "agent.yaml"
NET = (
    "def net(orders, credits):\n"
    "    return sum(o['amount'] for o in orders) - sum(c['amount'] for c in credits)\n"
)
SMALL = Sandbox(Limits(cpu_seconds=1, wall_seconds=30.0, memory_bytes=256 * 1024 * 1024))


def shop(*script, sandbox=SMALL):
    agent = Agent.from_file(SHOP, sandbox=sandbox)
    agent.model = ScriptedModel("scripted:desk", list(script))
    return agent


def test_a_function_over_two_reads_results_gives_the_right_number():
    agent = shop({"function": NET})
    reply = agent.chat("what is the total of the orders and the credits", user="ana")
    assert reply.text == "The answer is 37.75."
    assert reply.model_called
    assert [r["tool"] for r in reply.ran] == ["list_orders", "list_credits", "sandbox"]
    asked = agent.model.requests[0]
    assert asked.purpose == "function"
    assert [read["tool"] for read in asked.data] == ["list_orders", "list_credits"]
    assert asked.data[1]["result"] == [{"order_id": "4411", "amount": 40.0}]


def test_a_function_the_sandbox_stops_is_refused_naming_why():
    agent = shop({"function": "import os\ndef f(orders, credits):\n    return os.getcwd()\n"})
    reply = agent.chat("what is the total of the orders and the credits", user="bo")
    assert reply.text.startswith("I can't do that: the calculation was stopped:")
    assert "`os`" in reply.text
    assert reply.ran[-1]["tool"] == "sandbox" and reply.ran[-1]["reason"] == "import"


def test_a_function_that_loops_forever_is_stopped_and_the_turn_says_so():
    agent = shop({"function": "def f(orders, credits):\n    while True:\n        pass\n"})
    reply = agent.chat("how many orders and credits are there", user="cy")
    assert "CPU time" in reply.text and reply.ran[-1]["reason"] == "cpu_time"


def test_with_no_sandbox_the_calculation_is_declined_compute_off():
    agent = shop({"function": NET}, sandbox=False)
    reply = agent.chat("what is the total of the orders and the credits", user="di")
    assert reply.text.startswith("I can't do that: compute off:")
    assert reply.ran == [] and agent.model.requests == []


def test_a_sandbox_that_cannot_start_here_is_compute_off_with_its_reason():
    agent = shop({"function": NET}, sandbox=Sandbox(python="/nonexistent/python3"))
    reply = agent.chat("what is the total of the orders and the credits", user="ed")
    assert "compute off: the sandbox cannot start on this machine" in reply.text
    assert agent.model.requests == []


def test_agent_chat_has_a_sandbox_by_default():
    agent = Agent.from_file(SHOP)
    assert isinstance(agent.extras.sandbox, Sandbox) and agent.extras.sandbox


def test_a_sandbox_that_fails_to_start_at_run_time_is_compute_off_not_a_result():
    def gone(source, arguments):
        raise SandboxUnavailable("the sandbox cannot start on this machine: no fork")

    agent = shop({"function": NET}, sandbox=gone)
    reply = agent.chat("what is the total of the orders and the credits", user="fi")
    assert reply.text == (
        "I can't do that: compute off: the sandbox cannot start on this machine: no fork."
    )
    assert reply.ran[-1]["reason"] == "unavailable"


def test_a_named_model_that_cannot_answer_is_compute_off_and_no_function_runs():
    # `scripted:desk` is named with no replies to give: the model is there, and says nothing.
    agent = Agent.from_file(SHOP, sandbox=SMALL)
    reply = agent.chat("what is the total of the orders and the credits", user="gu")
    assert reply.text == "I can't do that: compute off: the model did not answer."
    assert all(item["tool"] != "sandbox" for item in reply.ran)
