"""Models named `provider:model`; the scripted model; no silent fall-back."""

from __future__ import annotations

import pytest

from router.engine import ModelNameInvalid, ModelUnavailable
from router.engine.models import ModelReply, ModelRequest, Models, ScriptedModel, parse_model_name


def test_a_model_is_named_provider_colon_model():
    assert parse_model_name("anthropic:claude-sonnet-5-5") == ("anthropic", "claude-sonnet-5-5")
    for bad in ("claude", "Anthropic:x", ":x", "a:", 3, None):
        with pytest.raises(ModelNameInvalid):
            parse_model_name(bad)


def test_a_scripted_model_answers_in_order_and_records_what_it_was_asked():
    model = ScriptedModel("scripted:demo", ["hello", {"calls": [{"tool": "get_order"}]}])
    request = ModelRequest("turn", "hi", "en")
    assert model.respond(request) == ModelReply(text="hello")
    assert model.respond(request).calls == ({"tool": "get_order"},)
    assert model.requests == [request, request]
    with pytest.raises(ModelUnavailable):
        model.respond(request)


def test_a_provider_with_no_adapter_is_an_error_not_a_fall_back():
    models = Models(scripts={"demo": ["hi"]})
    assert models.resolve("scripted:demo").respond(ModelRequest("turn", "x", "en")).text == "hi"
    with pytest.raises(ModelUnavailable):
        models.resolve("anthropic:claude-sonnet-5-5")
    with pytest.raises(ModelUnavailable):
        models.resolve("scripted:other")
    with pytest.raises(ModelNameInvalid):
        ScriptedModel("openai:gpt")
