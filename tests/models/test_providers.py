"""The real provider SDKs against a local fake of their HTTP APIs, from `Agent.chat` (no network).

A turn the router cannot read goes to the model under `on_unread: model` (after the one request
to say it again), is asked first under `ask`, and every call the model asks for is checked: a
read runs, a write it proposes is put to the person, a tool it invents is refused.
"""

from __future__ import annotations

import json

import pytest

from stalwart_agents import Agent
from stalwart_agents.agent import AgentFileError

from .conftest import PLANTED
from .fake_provider import FakeProvider, Hang, Raw, anthropic_message, openai_completion

PROVIDERS = {
    "openai": (openai_completion, "OPENAI_API_KEY", "/v1"),
    "anthropic": (anthropic_message, "ANTHROPIC_API_KEY", ""),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request, monkeypatch):
    name = request.param
    answer, key_env, _suffix = PROVIDERS[name]
    monkeypatch.setenv(key_env, PLANTED)
    return name


def agent_for(shop_folder, provider, url, on_unread="model", timeout=5, model="fake-1"):
    suffix = PROVIDERS[provider][2]
    path = shop_folder(
        f'model: "{provider}:{model}"\non_unread: {on_unread}',
        f'models:\n  "{provider}:{model}":\n    base_url: {url}{suffix}\n'
        f"    timeout: {timeout}\n    max_retries: 0\n",
    )
    return Agent.from_file(path)


def answer(provider, text=None, calls=()):
    return PROVIDERS[provider][0](text, list(calls))


def unread_twice(agent, turn, user="ana"):
    first = agent.chat(turn, user=user)
    assert first.plan.kind == "unread" and first.plan.action == "say_again"
    return agent.chat(turn, user=user)


def test_an_unread_turn_goes_to_the_model_and_a_read_it_asks_for_runs(shop_folder, provider):
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, provider, fake.url)
        fake.answers.append(answer(provider, "Let me look.", [("get_order", {"order_id": "4411"})]))
        reply = unread_twice(agent, "write me a poem about my parcel")
        assert reply.model_called and reply.plan.action == "model"
        assert [r["tool"] for r in reply.ran] == ["get_order"]
        assert reply.text.startswith("Let me look.") and "status paid" in reply.text
        (check,) = reply.checks
        assert check["call"]["origins"] == {"order_id": "model"}
        assert check["decision"]["decision"] == "allow"
        (sent,) = fake.requests
    body = sent["body"]
    if provider == "openai":
        assert sent["path"] == "/v1/chat/completions"
        assert body["messages"][0]["role"] == "system"
        conversation = body["messages"][1:]
        tools = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    else:
        assert sent["path"] == "/v1/messages" and "desk" in body["system"]
        conversation = body["messages"]
        tools = {t["name"]: t["input_schema"] for t in body["tools"]}
    # The conversation so far: the turn, the request to say it again, the turn again.
    assert [m["role"] for m in conversation] == ["user", "assistant", "user"]
    assert conversation[-1]["content"] == "write me a poem about my parcel"
    assert "say it again" in conversation[1]["content"]
    assert body["model"] == "fake-1"
    assert tools["get_order"]["required"] == ["order_id"] and len(tools) == 5
    assert PLANTED in str(sent["headers"])  # the key went where it belongs, and nowhere else


def test_a_write_the_model_proposes_is_put_to_the_person(shop_folder, provider):
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, provider, fake.url)
        calls = [("get_order", {"order_id": "4411"}),
                 ("refund_card", {"order_id": "4411", "amount": 40})]  # fmt: skip
        fake.answers.append(answer(provider, calls=calls))
        held = unread_twice(agent, "sort out my money please")
        assert held.waiting == "confirm" and [r["tool"] for r in held.ran] == ["get_order"]
        # Put to the person in words: the catalogue's description of the tool, its arguments.
        assert "Refunds an amount of an order to the card it was paid with" in held.text
        reasons = held.checks[-1]["decision"]["reasons"]
        assert "argument_origin: amount" in reasons and "argument_origin: order_id" in reasons
        done = agent.chat("yes", user="ana")
        assert [r["tool"] for r in done.ran] == ["refund_card"]
        assert done.ran[0]["arguments"] == {"order_id": "4411", "amount": 40}
        assert done.checks[-1]["decision"]["reasons"] == ["confirmed"]
        assert len(fake.requests) == 1  # the yes is the person's, not the model's


def test_a_tool_the_model_invents_is_refused_and_nothing_runs(shop_folder, provider):
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, provider, fake.url)
        fake.answers.append(answer(provider, calls=[("delete_all_orders", {"confirm": True})]))
        reply = unread_twice(agent, "clean everything up")
        assert reply.ran == []
        assert reply.checks[0]["decision"]["decision"] == "refuse"
        assert reply.checks[0]["decision"]["reasons"] == ["unknown_tool"]
        assert "not done" in reply.text


def test_under_ask_the_person_is_asked_first_and_the_model_gets_the_turn_only_on_yes(
    shop_folder, provider
):
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, provider, fake.url, on_unread="ask")
        asked = unread_twice(agent, "write me a poem")
        assert asked.waiting == "ask_model" and not fake.requests
        assert "May I pass your message" in asked.text
        assert agent.chat("no", user="ana").text == "OK, I will not pass it on."
        assert not fake.requests
        unread_twice(agent, "tell me a story")
        fake.answers.append(answer(provider, "Once upon a time."))
        told = agent.chat("yes", user="ana")
        assert told.model_called and told.text == "Once upon a time." and told.ran == []
        (sent,) = fake.requests
    messages = [m for m in sent["body"]["messages"] if m["role"] != "system"]
    # The question and the person's yes are turns of the conversation like any other.
    assert messages[-1] == {"role": "user", "content": "yes"}
    assert "May I pass your message" in messages[-2]["content"]
    assert any(m["content"] == "tell me a story" for m in messages)


def test_a_turn_the_router_reads_never_reaches_the_model(shop_folder, provider):
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, provider, fake.url)
        reply = agent.chat("show order 4411", user="ana")
        assert [r["tool"] for r in reply.ran] == ["get_order"] and not reply.model_called
        assert not fake.requests


def test_a_model_that_cannot_be_reached_refuses_the_turn_cleanly(
    shop_folder, provider, closed_port
):
    agent = agent_for(shop_folder, provider, f"http://127.0.0.1:{closed_port}")
    reply = unread_twice(agent, "write me a poem")
    assert reply.ran == [] and reply.checks == []
    assert reply.text.startswith("Sorry, I can't help with that: the model could not answer")
    assert f"`{provider}:fake-1`: it could not be reached" in reply.text
    assert reply.text.endswith("Nothing was run.")
    assert "Traceback" not in reply.text and PLANTED not in reply.text


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (Hang(2), "it did not answer in time"),
        (Raw(b"<html>not json"), "its answer could not be read"),
        (Raw(b'{"choices": 3, "content": 5}'), "its answer could not be read"),
        ((500, {"error": {"message": "boom"}}), "it answered HTTP 500"),
        ((401, {"error": {"message": f"Incorrect API key provided: {PLANTED}"}}),
         "it refused the key (HTTP 401)"),
    ],
    ids=["timeout", "html", "wrong-shape", "500", "401-echoing-the-key"],
)  # fmt: skip
def test_a_model_that_answers_garbage_or_late_refuses_the_turn(shop_folder, provider, bad, said):
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, provider, fake.url, timeout=0.5)
        fake.answers.append(bad)
        reply = unread_twice(agent, "write me a poem")
    assert said in reply.text and reply.ran == [] and reply.checks == []
    assert PLANTED not in reply.text


def test_a_tool_call_whose_arguments_are_not_an_object_runs_nothing(shop_folder):
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, "openai", fake.url)
        fake.answers.append(openai_completion(None, [("get_order", "{not json")]))
        reply = unread_twice(agent, "write me a poem")
    assert "not JSON" in reply.text and reply.ran == [] and reply.checks == []


def test_with_no_key_in_the_environment_nothing_is_sent(shop_folder, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with FakeProvider() as fake:
        agent = agent_for(shop_folder, "anthropic", fake.url)
        reply = unread_twice(agent, "write me a poem")
        assert "the environment variable ANTHROPIC_API_KEY is not set" in reply.text
        assert not fake.requests and reply.ran == []


def test_the_key_comes_from_the_variable_api_key_env_names(shop_folder, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SHOP_MODEL_KEY", PLANTED)
    with FakeProvider() as fake:
        path = shop_folder(
            'model: "openai:fake-1"\non_unread: model',
            f'models:\n  "openai:fake-1":\n    base_url: {fake.url}/v1\n'
            "    api_key_env: SHOP_MODEL_KEY\n    max_retries: 0\n",
        )
        agent = Agent.from_file(path)
        fake.answers.append(openai_completion("Hello."))
        assert unread_twice(agent, "write me a poem").text == "Hello."
        assert fake.requests[0]["headers"]["authorization"] == f"Bearer {PLANTED}"


def test_a_key_written_in_agent_yaml_is_refused(shop_folder):
    path = shop_folder(
        'model: "openai:fake-1"\non_unread: model',
        f'models:\n  "openai:fake-1":\n    api_key: {PLANTED}\n',
    )
    with pytest.raises(AgentFileError) as caught:
        Agent.from_file(path, verify=False)
    assert "models.openai:fake-1.api_key" in str(caught.value)
    assert "environment" in str(caught.value) and PLANTED not in str(caught.value)


def test_openai_base_url_from_the_environment(shop_folder, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    with FakeProvider() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")
        path = shop_folder('model: "openai:llama3.1"\non_unread: model')
        agent = Agent.from_file(path)
        fake.answers.append(openai_completion("From the local server."))
        assert unread_twice(agent, "write me a poem").text == "From the local server."
        assert fake.requests[0]["body"]["model"] == "llama3.1"


def test_a_calculations_function_is_asked_of_the_model_with_the_reads_results(provider):
    from router.engine.models import ModelRequest
    from stalwart_agents.models import ModelOptions, make_model

    with FakeProvider() as fake:
        suffix = PROVIDERS[provider][2]
        model = make_model(
            f"{provider}:fake-1", ModelOptions(base_url=fake.url + suffix, max_retries=0)
        )
        fake.answers.append(answer(provider, "```python\ndef f(data):\n    return len(data)\n```"))
        rows = [{"order_id": "4411"}, {"order_id": "4412"}]
        reply = model.respond(ModelRequest("function", "how many orders", "en", data=rows))
        (sent,) = fake.requests
    assert reply.function == "def f(data):\n    return len(data)" and not reply.calls
    assert "tools" not in sent["body"]
    assert json.dumps(rows) in sent["body"]["messages"][-1]["content"]


def test_a_model_asking_for_more_calls_than_allowed_runs_none(shop_folder, provider):
    from stalwart_agents.models import MAX_CALLS

    with FakeProvider() as fake:
        agent = agent_for(shop_folder, provider, fake.url)
        many = [("get_order", {"order_id": "4411"})] * (MAX_CALLS + 1)
        fake.answers.append(answer(provider, calls=many))
        reply = unread_twice(agent, "write me a poem")
    assert f"it asked for {MAX_CALLS + 1} tool calls at once" in reply.text
    assert reply.ran == [] and reply.checks == []
