"""A scripted `Model` for the OpenAI Agents SDK: it answers each call from its script, no network."""

from __future__ import annotations

import json
from typing import Any

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


class ScriptedModel(Model):
    """Each step is a text (the reply), `(tool, arguments, call_id)` (a function call), or a list
    of such calls (one turn's parallel calls).

    `seen` keeps the input the model was given at each call, so a test can see what it read.
    """

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.seen: list[Any] = []

    async def get_response(
        self,
        system_instructions,  # noqa: ANN001
        input,  # noqa: A002, ANN001
        model_settings,  # noqa: ANN001
        tools,  # noqa: ANN001
        output_schema,  # noqa: ANN001
        handoffs,  # noqa: ANN001
        tracing,  # noqa: ANN001
        *,
        previous_response_id=None,  # noqa: ANN001
        conversation_id=None,  # noqa: ANN001
        prompt=None,  # noqa: ANN001
    ) -> ModelResponse:
        return ModelResponse(output=self._next(input), usage=Usage(), response_id=None)

    def _next(self, input: Any) -> list[Any]:  # noqa: A002
        """The output items of the script's next step, noting the input the model was given."""
        self.seen.append(input)
        step = self.steps.pop(0) if self.steps else "done"
        if isinstance(step, str):
            text = ResponseOutputText(text=step, type="output_text", annotations=[], logprobs=[])
            output: list[Any] = [
                ResponseOutputMessage(
                    id="msg", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        else:
            calls = step if isinstance(step, list) else [step]  # a list: parallel calls
            output = [
                ResponseFunctionToolCall(
                    id=call_id,
                    call_id=call_id,
                    type="function_call",
                    name=name,
                    arguments=json.dumps(arguments),
                )
                for name, arguments, call_id in calls
            ]
        return output

    async def stream_response(
        self,
        system_instructions,  # noqa: ANN001
        input,  # noqa: A002, ANN001
        *args: Any,
        **kwargs: Any,
    ):  # noqa: ANN201
        """`Runner.run_streamed`'s model: the step's whole response as one completed event."""
        response = Response(
            id="scripted",
            created_at=0,
            model="scripted",
            object="response",
            output=self._next(input),
            tool_choice="auto",
            tools=[],
            parallel_tool_calls=False,
        )
        yield ResponseCompletedEvent(
            response=response, type="response.completed", sequence_number=0
        )

    def read(self, text: str) -> bool:
        """Whether any input the model was given holds `text`."""
        return any(text in json.dumps(given, default=str) for given in self.seen)
