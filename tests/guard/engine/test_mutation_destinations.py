"""Where destinations are found in arguments, exactly, where mutation testing found gaps.

Chapter 45, step 4: a destination (an address, a URL, a host) in an argument of a tool not declared
`sends_out` is refused, naming where it is (a JSON pointer) and how it was seen; the admission
check `address` names the range it falls in. A whole value is an IP only in its standard spelling,
except where a host is expected.
"""

from __future__ import annotations

import pytest

from guard.engine import ToolCheck
from guard.engine.addresses import find_destinations

from .conftest import KEY, NOW, lab_catalogue


def found(arguments: dict, hosts: frozenset[str] = frozenset()) -> list[tuple[str, str, str]]:
    return [(item.pointer, item.host, item.form) for item in find_destinations(arguments, hosts)]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"url": "see https://a.example/x"}, [("/url", "a.example", "url")]),
        ({"note": "file:///etc/passwd"}, [("/note", "", "url")]),
        ({"to": "mailto:root@intranet"}, [("/to", "intranet", "email")]),
        ({"to": "ana@corp.example."}, [("/to", "corp.example", "email")]),
        ({"to": "ana@[::1]"}, [("/to", "::1", "email")]),
        ({"to": "ana@nodot"}, []),
        ({"ip": "10.0.0.1"}, [("/ip", "10.0.0.1", "ip")]),
        ({"ip": "::1"}, [("/ip", "::1", "ip")]),
        ({"version": "1.22.333.444"}, []),
        ({"code": "010.0.0.1"}, []),
        ({"a/b~c": ["x", {"k": "10.0.0.1"}]}, [("/a~1b~0c/1/k", "10.0.0.1", "ip")]),
    ],
)
def test_destinations_are_found_with_their_pointer_host_and_form(arguments, expected):
    assert found(arguments) == expected


def test_a_host_argument_reads_other_spellings_of_an_address():
    assert found({"host": "010.0.0.1"}, frozenset({"host"})) == [("/host", "010.0.0.1", "host")]


def check() -> ToolCheck:
    return ToolCheck(lab_catalogue(), key=KEY)


def test_a_mailto_to_a_local_host_in_a_tool_that_does_not_send_is_refused():
    lab = check()
    call = {"tool": "get_order", "arguments": {"order_id": "mailto:root@intranet"}}
    decision = lab.check(call, session=lab.new_history("s"))
    assert decision.reasons == ("undeclared_destination",)
    assert decision.detail["form"] == "email" and decision.detail["destination"] == "intranet"


def test_a_disallowed_address_refusal_names_the_pointer_range_and_host():
    lab = check()
    call = {"tool": "fetch_page", "arguments": {"url": "http://169.254.169.254/latest"}}
    decision = lab.check(call, session=lab.new_history("s"), now=NOW)
    assert (decision.decision, decision.reasons, decision.rule) == (
        "refuse",
        ("disallowed_address",),
        "address",
    )
    assert decision.detail == {
        "check": "address",
        "pointer": "/url",
        "range": "metadata",
        "host": "169.254.169.254",
    }
