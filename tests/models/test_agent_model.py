"""`model:` in agent.yaml and `Agent(..., model=...)`: which adapter a turn goes to, and how.

The file wins: the `model=` given in code is used for an agent whose file names no model, or as
the configured adapter of the very model the file names; it never replaces another model.
"""

from __future__ import annotations

import traceback

import pytest

from router.engine.models import ModelRequest, ScriptedModel
from stalwart_agents import Agent
from stalwart_agents.agent import AgentFileError
from stalwart_agents.models import (
    AnthropicModel,
    ModelOptions,
    ModelUnavailable,
    OpenAIModel,
    make_model,
)

from .conftest import PLANTED


def unread_twice(agent, turn, user="ana"):
    agent.chat(turn, user=user)
    return agent.chat(turn, user=user)


def test_a_scripted_model_named_in_agent_yaml_answers_from_its_replies_file(shop_folder):
    path = shop_folder(
        'model: "scripted:demo"\non_unread: model',
        'models:\n  "scripted:demo":\n    replies: ./replies.yaml\n',
    )
    (path.parent / "replies.yaml").write_text(
        '- text: "Let me look that up."\n'
        "  calls: [{tool: get_order, arguments: {order_id: '4412'}}]\n"
        "- Nothing else today.\n",
        encoding="utf-8",
    )
    agent = Agent.from_file(path)
    first = unread_twice(agent, "write me a poem")
    assert first.text.startswith("Let me look that up.") and first.ran[0]["tool"] == "get_order"
    assert unread_twice(agent, "sing me a song").text == "Nothing else today."
    out = unread_twice(agent, "dance for me")
    assert "has no reply left" in out.text and out.ran == []
    # Each person's conversation reads the script from its start.
    assert unread_twice(agent, "write me a poem", user="bob").ran[0]["tool"] == "get_order"


def test_a_model_given_in_code_serves_an_agent_whose_file_names_none(shop_folder):
    model = ScriptedModel("scripted:code", ["Hello from the code's model."])
    agent = Agent.from_file(shop_folder("on_unread: model"), model=model)
    reply = unread_twice(agent, "write me a poem")
    assert reply.model_called and reply.text == "Hello from the code's model."
    assert model.requests[0].purpose == "turn"


def test_without_any_model_on_unread_model_is_refused_naming_no_model(shop_folder):
    agent = Agent.from_file(shop_folder("on_unread: model"))
    reply = unread_twice(agent, "write me a poem")
    assert not reply.model_called and "no_model" in reply.plan.reasons
    assert reply.text == "Sorry, I can't help with that."


def test_the_file_wins_over_a_model_of_another_name_given_in_code(shop_folder, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = ScriptedModel("scripted:code", ["the code's model"])
    path = shop_folder('model: "anthropic:claude-x"\non_unread: model')
    reply = unread_twice(Agent.from_file(path, model=code), "write me a poem")
    assert code.requests == []  # the file's anthropic model had the turn (and has no key)
    assert "`anthropic:claude-x`" in reply.text and "ANTHROPIC_API_KEY" in reply.text


def test_an_adapter_of_the_name_the_file_names_is_used_for_it(shop_folder):
    code = ScriptedModel("scripted:desk", ["configured in code"])
    path = shop_folder('model: "scripted:desk"\non_unread: model')
    assert unread_twice(Agent.from_file(path, model=code), "write me a poem").text == (
        "configured in code"
    )


def test_a_model_name_given_in_code_resolves_like_the_files(shop_folder, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = Agent.from_file(shop_folder("on_unread: model"), model="openai:gpt-x")
    reply = unread_twice(agent, "write me a poem")
    assert "`openai:gpt-x`: no key: the environment variable OPENAI_API_KEY is not set" in (
        reply.text
    )


@pytest.mark.parametrize(
    ("agent_lines", "extra", "given", "said"),
    [
        ("on_unread: model", "", "gpt-4", "model: a model is named `provider:model`"),
        ("on_unread: model", "", 42, "model: give a `provider:model` name or an adapter"),
        ("on_unread: model", 'models:\n  "openai:x":\n    colour: blue\n', None,
         "models.openai:x.colour: is not an option"),
        ("on_unread: model", 'models:\n  "openai:x":\n    timeout: forever\n', None,
         "models.openai:x.timeout: must be a number"),
        ("on_unread: model", 'models:\n  "openai:x":\n    base_url: ftp://x\n', None,
         "models.openai:x.base_url: must be an http(s) URL"),
        ("on_unread: model", 'models:\n  "openai:x":\n    replies: [hi]\n', None,
         "only a `scripted:` model has replies"),
        ("on_unread: model", 'models:\n  "scripted:x":\n    replies: ./missing.yaml\n', None,
         "the replies file `./missing.yaml` cannot be read"),
    ],
    ids=["name", "type", "option", "timeout", "url", "replies", "file"],
)  # fmt: skip
def test_a_model_that_cannot_be_configured_is_an_error_naming_the_field(
    shop_folder, agent_lines, extra, given, said
):
    with pytest.raises(AgentFileError) as caught:
        Agent.from_file(shop_folder(agent_lines, extra), model=given, verify=False)
    assert said in str(caught.value)


def test_whatever_origin_the_model_claims_its_values_are_the_models(shop_folder):
    # A model that says the person typed its values: the check still reads them as the model's.
    model = ScriptedModel(
        "scripted:liar",
        [{"calls": [
            {"tool": "get_order", "arguments": {"order_id": "4411"}},
            {"tool": "refund_card", "arguments": {"order_id": "4411", "amount": 40},
             "origins": {"order_id": "typed", "amount": "typed"}},
        ]}],
    )  # fmt: skip
    agent = Agent.from_file(shop_folder("on_unread: model"), model=model)
    held = unread_twice(agent, "write me a poem")
    assert held.waiting == "confirm"
    assert held.checks[-1]["call"]["origins"] == {"order_id": "model", "amount": "model"}
    assert "argument_origin: amount" in held.checks[-1]["decision"]["reasons"]


@pytest.mark.parametrize("adapter", [OpenAIModel, AnthropicModel])
def test_the_key_is_never_in_an_error_a_repr_or_a_traceback(adapter, monkeypatch, closed_port):
    monkeypatch.setenv(adapter.key_env, PLANTED)
    model = adapter(
        f"{adapter.provider}:m",
        ModelOptions(base_url=f"http://127.0.0.1:{closed_port}", timeout=1, max_retries=0),
    )
    with pytest.raises(ModelUnavailable) as caught:
        model.respond(ModelRequest("turn", "hi", "en"))
    error = caught.value
    shown = "".join(traceback.format_exception(error)) + repr(error) + repr(model)
    assert "could not be reached" in str(error)
    assert PLANTED not in shown
    assert error.__cause__ is None and error.__context__ is None  # the SDK's error is not kept


def test_a_provider_no_adapter_serves_refuses_the_turn_naming_it(shop_folder):
    agent = Agent.from_file(shop_folder('model: "mystery:x"\non_unread: model'), verify=False)
    reply = unread_twice(agent, "write me a poem")
    assert "no adapter serves the provider `mystery`" in reply.text and reply.ran == []
    with pytest.raises(AgentFileError, match="the provider `mystery`"):
        Agent.from_file(shop_folder("on_unread: model"), model="mystery:x", verify=False)


def test_make_model_knows_three_providers():
    assert isinstance(make_model("openai:x"), OpenAIModel)
    assert isinstance(make_model("anthropic:x"), AnthropicModel)
    assert make_model("scripted:x", replies=["hi"]).respond(ModelRequest("turn", "a", "en")).text


def test_the_conversation_sent_to_a_model_is_bounded_and_starts_with_the_person():
    from stalwart_agents.models import MAX_MESSAGES, MAX_TEXT, _messages

    turns = tuple(
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} " + "x" * 9000}
        for i in range(101)
    )
    sent = _messages(ModelRequest("turn", "100", "en", messages=turns))
    assert len(sent) <= MAX_MESSAGES and sent[0]["role"] == "user"
    assert sent[-1]["content"].startswith("100 ") and all(
        len(m["content"]) <= MAX_TEXT for m in sent
    )


def _two_writes(then: dict) -> ScriptedModel:
    return ScriptedModel(
        "scripted:two-writes",
        [{"calls": [
            {"tool": "get_order", "arguments": {"order_id": "4411"}},
            {"tool": "charge_card", "arguments": {"order_id": "4411", "amount": 40}},
            then,
        ]}],
    )  # fmt: skip


def test_a_yes_continues_the_models_run_and_a_later_refusal_undoes_it_last_first(shop_folder):
    import sys

    model = _two_writes({"tool": "delete_everything", "arguments": {}})
    agent = Agent.from_file(shop_folder("on_unread: model"), model=model)
    asked = unread_twice(agent, "write me a poem")
    assert asked.waiting == "confirm" and asked.checks[-1]["call"]["tool"] == "charge_card"
    done = agent.chat("yes", user="ana")
    # The charge ran with the person's yes; the model's next call is refused within the same
    # run, so the charge is undone by its declared compensation, itself checked and run once.
    assert [r["tool"] for r in done.ran] == ["charge_card"], done.ran
    assert "unknown_tool" in done.text and "charge_card compensated" in done.text
    assert done.undone == [
        {"index": 1, "tool": "charge_card", "status": "compensated", "compensation": "refund_card"}
    ]
    assert sys.modules["shop.tools"].ORDERS["4411"]["status"] == "refunded"


def test_a_no_within_the_models_run_cancels_it_and_undoes_what_it_wrote(shop_folder):
    model = _two_writes({"tool": "refund_card", "arguments": {"order_id": "4411", "amount": 1}})
    agent = Agent.from_file(shop_folder("on_unread: model"), model=model)
    unread_twice(agent, "write me a poem")
    ran = agent.chat("yes", user="ana")
    assert ran.waiting == "confirm" and ran.checks[-1]["call"]["tool"] == "refund_card"
    assert [r["tool"] for r in ran.ran] == ["charge_card"]
    cancelled = agent.chat("no", user="ana")
    assert [u["tool"] for u in cancelled.undone] == ["charge_card"]
    assert cancelled.undone[0]["status"] == "compensated"
    # A no outside a run's question is a new turn: nothing is left to undo.
    assert agent.chat("no", user="ana").undone == []
