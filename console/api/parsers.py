"""The API's edge: one JSON parser for every `/v1/` body, bounded in size and depth, strict in text.

A body is refused before any view or database sees it when it is larger than
`STALWART_API_MAX_BODY_BYTES` (413), not UTF-8, not JSON, not an object at the top, nested deeper
than `STALWART_API_MAX_JSON_DEPTH`, holds a NUL or a lone surrogate in any key or string (which
PostgreSQL's `jsonb` and text columns cannot store), or a number too large for a float (`1e400`,
which Python reads as infinity and no JSON store keeps). Every refusal names the field path
(`arguments.pad`, `rules[0].when`). Form and multipart bodies get the same text check.

Only a `\\u` escape writes a NUL or a lone surrogate into a parsed string, so a body whose text
has none (one RE2 search) and whose containers nest within the bound is taken without the walk
of every key and string; any other body gets that walk, which names the field.

The refusal carries a storable copy of the body (offending characters escaped as `\\u0000`, too
deep a subtree cut), so that a view that decides calls can still record the refused call as an
event: a malformed call is an attempt the security team must see.
"""

from __future__ import annotations

import json
import math
from typing import Any

import re2
from django.conf import settings
from rest_framework import exceptions, parsers, renderers, status

TOO_DEEP = "[nested too deep]"


class MalformedBody(exceptions.ParseError):
    """A body the API refuses at its edge, naming the field path of the first problem."""

    def __init__(self, field: str, message: str, *, storable: Any = None) -> None:
        self.field = field
        self.problem = message
        self.storable = storable
        super().__init__({field: [message]})


class BodyTooLarge(MalformedBody):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


def max_body_bytes() -> int:
    return int(settings.STALWART_API_MAX_BODY_BYTES)


def _escaped(text: str) -> str:
    """The text with NULs and lone surrogates written as `\\uXXXX`, so that any store keeps it."""
    if "\x00" not in text and _encodes(text):
        return text
    out = []
    for char in text:
        code = ord(char)
        out.append(f"\\u{code:04x}" if code == 0 or 0xD800 <= code <= 0xDFFF else char)
    return "".join(out)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "a NUL character is not allowed"
    if not _encodes(text):
        return "a lone surrogate is not allowed"
    return None


def _join(path: str, step: str | int) -> str:
    if isinstance(step, int):
        return f"{path}[{step}]"
    step = _escaped(step)
    return f"{path}.{step}" if path else step


def too_deep(value: Any, max_depth: int) -> bool:
    """Whether a dict or a list in `value` nests deeper than `max_depth` levels: the containers
    walked alone, no path written (`first_problem` names it, when there is one)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


#: Where a JSON text can hold a NUL or a lone surrogate: only a `\u` escape writes either into a
#: string (raw, a NUL is not allowed in a JSON string and a surrogate is not UTF-8). A text with
#: no such escape has no string to look at. RE2, as every pattern on the path of a request.
_SUSPECT_ESCAPE = re2.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def first_problem(value: Any, *, max_depth: int) -> tuple[str, str] | None:
    """The field path and the problem of the first key or string the API cannot take, if any.

    Iterative, so a body at the depth bound costs no recursion.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, dict | list) and depth > max_depth:
            return path or "body", f"nests deeper than {max_depth} levels"
        if isinstance(node, dict):
            children = []
            for key, child in node.items():
                problem = _text_problem(key)
                if problem is not None:
                    return _join(path, key), f"the key: {problem}"
                children.append((child, _join(path, key), depth + 1))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            stack.extend(
                (child, _join(path, i), depth + 1) for i, child in reversed(list(enumerate(node)))
            )
        elif isinstance(node, str):
            problem = _text_problem(node)
            if problem is not None:
                return path or "body", problem
    return None


def storable(value: Any, *, max_depth: int, depth: int = 1) -> Any:
    """A copy of a refused body that any store keeps: text escaped, subtrees past the bound cut."""
    if isinstance(value, dict | list) and depth > max_depth:
        return TOO_DEEP
    if isinstance(value, dict):
        return {
            _escaped(k): storable(v, max_depth=max_depth, depth=depth + 1) for k, v in value.items()
        }
    if isinstance(value, list):
        return [storable(v, max_depth=max_depth, depth=depth + 1) for v in value]
    if isinstance(value, str):
        return _escaped(value)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"`{name}` is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"`{text[:40]}` is a number too large to keep")
    return number


def strict_loads(text: str) -> Any:
    """`json.loads` as the API reads JSON: `NaN` and `Infinity` refused, and a number too large
    for a float (`ValueError`, as for any of Python's own refusals)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, or `MalformedBody` naming what is wrong and where."""
    max_depth = int(settings.STALWART_API_MAX_JSON_DEPTH)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedBody("body", f"not UTF-8 at byte {exc.start}") from exc
    try:
        data = strict_loads(text)
    except RecursionError as exc:
        raise MalformedBody("body", f"nests deeper than {max_depth} levels") from exc
    except json.JSONDecodeError as exc:
        raise MalformedBody("body", f"line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except ValueError as exc:
        raise MalformedBody("body", f"not JSON: {str(exc).splitlines()[0][:200]}") from exc
    if not isinstance(data, dict):
        raise MalformedBody("non_field_errors", "the body must be a JSON object")
    if not _SUSPECT_ESCAPE.search(text) and not too_deep(data, max_depth):
        return data  # what `first_problem` would find nothing in, without walking every string
    problem = first_problem(data, max_depth=max_depth)
    if problem is not None:
        field, message = problem
        raise MalformedBody(field, message, storable=storable(data, max_depth=max_depth))
    return data


def _read_bounded(stream: Any, parser_context: dict | None) -> bytes:
    limit = max_body_bytes()
    request = (parser_context or {}).get("request")
    declared = request.META.get("CONTENT_LENGTH") if request is not None else None
    too_large = f"the body is larger than {limit} bytes"
    try:
        if declared and int(declared) > limit:
            raise BodyTooLarge("body", too_large)
    except ValueError:
        pass
    raw = stream.read(limit + 1) if stream is not None else b""
    if len(raw) > limit:
        raise BodyTooLarge("body", too_large)
    return raw


class StrictJSONParser(parsers.BaseParser):
    """`application/json` bodies through `parse_json_object`, read no further than the bound."""

    media_type = "application/json"
    renderer_class = renderers.JSONRenderer

    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        return parse_json_object(_read_bounded(stream, parser_context))


def form_problem(data: Any) -> tuple[str, str] | None:
    """The first field of a form or a query string with a NUL or a lone surrogate, and why."""
    for key, values in data.lists():
        for value in [key, *values]:
            problem = _text_problem(value) if isinstance(value, str) else None
            if problem is not None:
                return _escaped(key), problem
    return None


def _check_form(data: Any) -> None:
    problem = form_problem(data)
    if problem is not None:
        raise MalformedBody(*problem)


class StrictFormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        data = super().parse(stream, media_type, parser_context)
        _check_form(data)
        return data


class StrictMultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):  # noqa: ANN001, ANN201
        parsed = super().parse(stream, media_type, parser_context)
        _check_form(parsed.data)
        return parsed


# The parsers of a view that takes a file as well as JSON (the rulebook uploads), or that takes
# no body and should not refuse the empty form a client sends by default (answering approvals).
WITH_FILES = [StrictJSONParser, StrictMultiPartParser, StrictFormParser]
