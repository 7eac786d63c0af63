"""The catalogue's marks (issue 14): free text, what a read fetches, and the run's cost.

Each test fails when the control it names is removed:

- `"free_text": true` on an argument's schema takes that argument, and only that one, out of value
  origin (`argument_origin`); the write is still confirmed for `write`; the mark is refused on an
  argument declared (or read) as a query or a destination, so it never hides one from QG017/QG018.
- `fetches: [url]` on a read lets that argument's destinations through step 4 while the address
  check is on, and only that argument's; the address check still refuses metadata, loopback and
  private addresses in every spelling; a write or a send may not declare it.
- `cost:` and the `cap_cost` check: the run's cost comes from the verified history; a call with
  spent + this call > cap is refused `cost_exceeded`, == cap runs (at most, as `spend`).
"""

from __future__ import annotations

from typing import Any

import pytest

from guard.engine import CatalogueInvalid, ToolCheck, load_agent_yaml, load_catalogue
from guard.engine.errors import GuardError, HistoryInvalid

from .conftest import KEY

TEXT = {"type": "string"}


def issues_of(data: dict[str, Any], **options: Any) -> list[str]:
    with pytest.raises(CatalogueInvalid) as caught:
        load_catalogue(data, **options)
    return [f"{issue.path}: {issue.message}" for issue in caught.value.issues]


# -- free text ---------------------------------------------------------------------------------


def notes(body: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "tools": [
            {
                "name": "save_note",
                "kind": "write",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "order_id": TEXT,
                        "text": body if body is not None else {**TEXT, "free_text": True},
                    },
                    "required": ["order_id", "text"],
                },
            }
        ]
    }


def note(origins: dict[str, str]) -> dict[str, Any]:
    return {
        "tool": "save_note",
        "arguments": {"order_id": "A1", "text": "call the customer back"},
        "origins": origins,
    }


def decide(data, call, **options):
    check = ToolCheck(data, key=KEY)
    return check.check(call, session=check.new_history("s"), **options)


def test_a_free_text_argument_the_model_wrote_is_not_asked_about_and_the_write_still_is():
    decision = decide(notes(), note({"order_id": "typed"}))
    assert (decision.decision, decision.reasons) == ("confirm", ("write",))


def test_without_the_mark_the_same_argument_is_asked_about():
    decision = decide(notes(TEXT), note({"order_id": "typed"}))
    assert decision.reasons == ("argument_origin: text",)


def test_free_text_exempts_only_the_marked_argument():
    decision = decide(notes(), note({}))
    assert (decision.decision, decision.reasons) == ("confirm", ("argument_origin: order_id",))


def test_the_loaded_tool_and_the_person_see_which_arguments_are_free_text():
    tool = load_catalogue(notes()).tools["save_note"]
    assert tool.free_text == frozenset({"text"})
    shown = decide(notes(), note({"order_id": "typed"})).detail["arguments"]
    assert shown["text"] == {
        "value": "call the customer back",
        "origin": "model",
        "free_text": True,
    }
    assert "free_text" not in shown["order_id"]


def test_free_text_false_marks_nothing_and_the_fast_validator_still_compiles():
    assert load_catalogue(notes({**TEXT, "free_text": False})).tools["save_note"].free_text == set()
    assert load_catalogue(notes()).tools["save_note"].arguments.fast is not None


def test_an_argument_named_free_text_is_an_argument_not_a_mark():
    data = {
        "tools": [
            {
                "name": "save_note",
                "kind": "write",
                "parameters": {"type": "object", "properties": {"free_text": TEXT}},
            }
        ]
    }
    assert load_catalogue(data).tools["save_note"].free_text == frozenset()


@pytest.mark.parametrize(
    ("name", "schema", "why"),
    [
        ("target", {**TEXT, "format": "uri"}, "its schema declares it `url`"),
        ("where", {**TEXT, "format": "path"}, "its schema declares it `path`"),
        ("statement", {**TEXT, "contentMediaType": "application/sql"}, "declares it `sql`"),
        ("script", {**TEXT, "format": "python"}, "its schema declares it `code`"),
        ("template", {**TEXT, "format": "jinja"}, "its schema declares it `template`"),
        ("webhook_url", TEXT, "the tool check reads it as a host"),
        ("to", TEXT, "it names a recipient"),
    ],
)
def test_a_query_or_a_destination_cannot_be_marked_free_text(name, schema, why):
    data = notes()
    data["tools"][0]["parameters"]["properties"][name] = {**schema, "free_text": True}
    found = issues_of(data)
    assert len(found) == 1
    path = f"tools[0].parameters.properties.{name}.free_text"
    assert found[0].startswith(f"{path}: cannot mark `{name}` as free text: ")
    assert why in found[0]


def test_a_misplaced_or_malformed_free_text_mark_is_refused_at_its_path():
    nested = notes({"type": "object", "properties": {"line": {**TEXT, "free_text": True}}})
    assert issues_of(nested) == [
        "tools[0].parameters.properties.text.properties.line.free_text: marks an argument: put "
        "it on a top-level `properties.<name>`"
    ]
    assert issues_of(notes({**TEXT, "free_text": "yes"})) == [
        "tools[0].parameters.properties.text.free_text: must be true or false, not `yes`"
    ]


def test_agent_yaml_takes_the_mark_and_names_a_module_tool_where_it_is_wrong():
    text = """agents:
  desk:
    tools: [save_note]
tools:
  - name: save_note
    kind: write
    parameters:
      type: object
      properties:
        text: {type: string, free_text: true}
"""
    assert load_agent_yaml(text).catalogue.tools["save_note"].free_text == {"text"}
    module = [{"name": "post", "kind": "sends_out", "parameters": {
        "type": "object", "properties": {"to": {"type": "string", "free_text": True}}}}]  # fmt: skip
    with pytest.raises(CatalogueInvalid) as caught:
        load_agent_yaml("tools:\n  - python: chat.tools\n", modules={"chat.tools": module})
    assert caught.value.issues[0].path == "chat.tools[0].parameters.properties.to.free_text"


# -- reads that fetch ---------------------------------------------------------------------------


def fetching(kind: str = "read", fetches: Any = ("url",), **extra: Any) -> dict[str, Any]:
    page = {
        "name": "fetch_page",
        "kind": kind,
        "parameters": {"type": "object", "properties": {"url": TEXT}, "required": ["url"]},
        **extra,
    }
    if fetches is not None:
        page["fetches"] = list(fetches)
    mail = {
        "name": "search_emails",
        "kind": "read",
        "parameters": {"type": "object", "properties": {"sender": TEXT, "folder": TEXT}},
        "fetches": ["sender"],
    }
    return {"tools": [page, mail]}


def page(url: str) -> dict[str, Any]:
    return {"tool": "fetch_page", "arguments": {"url": url}}


def test_a_read_that_fetches_a_public_url_runs_and_says_what_it_fetches():
    decision = decide(fetching(), page("https://example.org/a"))
    assert (decision.decision, decision.reasons) == ("allow", ("allow",))
    assert decision.detail["fetches"] == [
        {"pointer": "/url", "destination": "https://example.org/a"}
    ]
    assert load_catalogue(fetching()).tools["fetch_page"].fetches == ("url",)


def test_without_fetches_the_same_read_is_refused_at_step_4():
    decision = decide(fetching(fetches=None), page("https://example.org/a"))
    assert (decision.reasons, decision.detail["step"]) == (("undeclared_destination",), 4)


@pytest.mark.parametrize(
    ("url", "range_"),
    [
        ("http://169.254.169.254/latest/meta-data", "metadata"),
        ("169.254.169.254/latest", "metadata"),
        ("http://127.0.0.1:8080/", "loopback"),
        ("127.0.0.1", "loopback"),
        ("http://[::1]/", "loopback"),
        ("[::1]", "loopback"),
        ("http://0x7f000001/", "loopback"),
        ("0x7f000001", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://127.1/", "loopback"),
        ("http://0177.0.0.1/", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http:///127.0.0.1/", "loopback"),
        ("http:\\\\127.0.0.1\\", "loopback"),
        ("https://example.org@127.0.0.1/", "loopback"),
        ("http://10.0.0.5/", "private"),
        ("http://172.16.3.4/", "private"),
        ("http://192.168.1.1/admin", "private"),
        ("http://localhost/", "local_name"),
        ("http://metadata.google.internal/", "local_name"),
    ],
)
def test_a_fetched_address_the_installation_does_not_allow_is_refused(url, range_):
    decision = decide(fetching(), page(url))
    assert decision.reasons == ("disallowed_address",)
    assert (decision.detail["check"], decision.detail["range"]) == ("address", range_)
    assert decision.detail["pointer"] == "/url"


def test_an_address_the_settings_allow_may_be_fetched():
    check = ToolCheck(fetching(), key=KEY, settings={"address": {"allow": ["10.1.2.3/32"]}})
    history = check.new_history("s")
    assert check.check(page("http://10.1.2.3/status"), session=history).decision == "allow"
    assert check.check(page("http://10.1.2.4/status"), session=history).reasons == (
        "disallowed_address",
    )


def test_fetches_exempts_only_the_declared_argument():
    call = {
        "tool": "search_emails",
        "arguments": {"sender": "ana@example.com", "folder": "https://attacker.example/x"},
    }
    decision = decide(fetching(), call)
    assert decision.reasons == ("undeclared_destination",)
    assert decision.detail["pointer"] == "/folder"


def test_search_emails_by_sender_runs_and_a_sender_at_a_local_address_does_not():
    def search(sender: str):
        return decide(fetching(), {"tool": "search_emails", "arguments": {"sender": sender}})

    assert search("ana@example.com").decision == "allow"
    assert search("ana").decision == "allow"
    assert search("ana@[127.0.0.1]").reasons == ("disallowed_address",)
    assert search("bob@localhost").reasons == ("disallowed_address",)
    assert search("eve@10.0.0.1").reasons == ("disallowed_address",)


def test_with_the_address_check_off_step_4_holds_a_fetched_address_again():
    check = ToolCheck(fetching(), key=KEY)
    every_check_but_address = [
        "tool_kinds", "plan_step", "arguments", "destinations", "order", "undo", "your_rules",
        "outside_content", "grounded",
    ]  # fmt: skip
    decision = check.check(
        page("http://169.254.169.254/"),
        session=check.new_history("s"),
        checks=every_check_but_address,
    )
    assert decision.reasons == ("undeclared_destination",)


def test_a_read_known_only_by_inference_fetches_nothing_once_inference_is_off():
    data = fetching()
    del data["tools"][0]["kind"]
    check = ToolCheck(data, key=KEY, settings={"infer": True})
    assert check.catalogue.tools["fetch_page"].kind == "read"
    on = check.check(page("https://example.org/"), session=check.new_history("s"))
    assert on.decision == "allow"
    without_kinds = [
        "address", "plan_step", "arguments", "destinations", "order", "undo", "your_rules",
        "outside_content", "grounded",
    ]  # fmt: skip
    off = check.check(
        page("https://example.org/"), session=check.new_history("s"), checks=without_kinds
    )
    assert off.reasons == ("undeclared_destination",)


@pytest.mark.parametrize("kind", ["write", "sends_out"])
def test_a_write_or_a_send_may_not_fetch(kind):
    assert issues_of(fetching(kind)) == [
        f"tools[0].fetches: only a read may fetch: this tool is a `{kind}` (a write or a send "
        "keeps step 4: declare it `sends_out` to send to an address)"
    ]


def test_the_tool_kinds_file_decides_whether_a_tool_may_fetch():
    found = issues_of(fetching(), tool_kinds="fetch_page: write\n")
    assert found[0].startswith("tools[0].fetches: only a read may fetch: this tool is a `write`")


def test_fetches_must_name_the_tools_own_arguments_once():
    assert issues_of(fetching(fetches=("link",))) == [
        "tools[0].fetches[0]: names an argument the tool does not declare: `link`"
    ]
    assert issues_of(fetching(fetches=("url", "url"))) == ["tools[0].fetches[1]: names `url` twice"]
    assert issues_of(fetching(fetches=())) == [
        "tools[0].fetches: must be a non-empty list of argument names"
    ]


def test_a_fetched_argument_cannot_be_free_text():
    data = fetching()
    data["tools"][1]["parameters"]["properties"]["sender"] = {**TEXT, "free_text": True}
    assert issues_of(data) == [
        "tools[1].parameters.properties.sender.free_text: cannot mark `sender` as free text: the "
        "tool fetches it (`fetches`)"
    ]


# -- the run's cost -----------------------------------------------------------------------------


def priced(cost: Any = 5, cap: Any = 20, **extra: Any) -> dict[str, Any]:
    """`lookup` costs `cost` cents a call and is capped at `cap` cents for the run; `quote` prices
    a call by its argument and `free` has no price."""
    params = {"type": "object", "properties": {"q": TEXT, "price": {"type": "number"}}}
    checks = [{"cap_cost": cap}]
    return {
        "tools": [
            {
                "name": "lookup",
                "kind": "read",
                "parameters": params,
                "cost": cost,
                "checks": checks,
            },
            {
                "name": "quote",
                "kind": "read",
                "parameters": params,
                "cost": {"argument": "price"},
                "checks": checks,
            },
            {"name": "free", "kind": "read", "parameters": params, **extra},
        ]
    }


def lookup(**arguments: Any) -> dict[str, Any]:
    return {"tool": "lookup", "arguments": {"q": "x", **arguments}}


def test_the_cap_allows_a_call_that_reaches_it_and_refuses_one_that_passes_it():
    check = ToolCheck(priced(), key=KEY)
    history = check.new_history("s")
    for _ in range(3):
        assert check.check(lookup(), session=history).decision == "allow"
        check.record(history, lookup(), {"ok": True})
    assert check.run_cost(history) == 15
    assert check.check(lookup(), session=history).decision == "allow"  # 15 + 5 == 20
    check.record(history, lookup(), {"ok": True})
    refused = check.check(lookup(), session=history)  # 20 + 5 > 20
    assert refused.reasons == ("cost_exceeded",)
    assert refused.detail == {
        "step": 7,
        "check": "your_rules",
        "rule": "cap_cost 20",
        "index": 0,
        "spent": 20,
        "this_call": 5,
        "cap": 20,
    }


def test_every_entry_carries_its_cost_and_the_cap_reads_every_tool_of_the_run():
    check = ToolCheck(priced(), key=KEY)
    history = check.new_history("s")
    entry = check.record(history, lookup(), {})
    assert entry.content["cost"] == 5
    check.record(history, {"tool": "free", "arguments": {}}, {}, cost=14)
    assert check.run_cost(history) == 19
    assert check.check(lookup(), session=history).detail["spent"] == 19
    assert "cost" not in check.record(history, {"tool": "free", "arguments": {}}, {}).content


def test_the_host_may_raise_a_calls_cost_but_not_lower_it():
    check = ToolCheck(priced(cap=10), key=KEY)
    history = check.new_history("s")
    check.record(history, lookup(), {})
    assert check.check(lookup(), session=history, cost=1).decision == "allow"
    refused = check.check(lookup(), session=history, cost=6)
    assert (refused.reasons, refused.detail["this_call"]) == (("cost_exceeded",), 6)
    assert check.record(history, lookup(), {}, cost=1).content["cost"] == 5
    lowered = check.check(lookup(), session=history, cost=0)  # 10 + 5 > 10, whatever it says
    assert (lowered.reasons, lowered.detail["this_call"]) == (("cost_exceeded",), 5)


def test_a_cost_priced_by_an_argument_reads_it_and_an_unknown_one_fails_closed():
    check = ToolCheck(priced(), key=KEY)
    history = check.new_history("s")
    quote = {"tool": "quote", "arguments": {"q": "x", "price": 20}}
    assert check.check(quote, session=history).decision == "allow"
    over = {"tool": "quote", "arguments": {"q": "x", "price": 20.5}}
    assert check.check(over, session=history).reasons == ("cost_exceeded",)
    unknown = check.check({"tool": "quote", "arguments": {"q": "x"}}, session=history)
    assert (unknown.reasons, unknown.detail["argument"]) == (("cost_unknown",), "price")
    assert (
        check.check({"tool": "quote", "arguments": {"q": "x"}}, session=history, cost=3).decision
        == "allow"
    )
    assert check.record(history, quote, {}).content["cost"] == 20


def test_cents_add_up_as_written():
    check = ToolCheck(priced(cost=0.1, cap=0.3), key=KEY)
    history = check.new_history("s")
    check.record(history, lookup(), {})
    check.record(history, lookup(), {})
    assert check.check(lookup(), session=history).decision == "allow"  # 0.1 + 0.1 + 0.1 == 0.3


def test_the_cost_is_read_from_the_signed_history_not_from_the_caller():
    check = ToolCheck(priced(), key=KEY)
    history = check.new_history("s")
    for _ in range(4):
        check.record(history, lookup(), {})
    data = history.to_json()
    data["entries"][0]["content"]["cost"] = 0
    decision = check.check(lookup(), session=data, head=history.head)
    assert decision.reasons == ("history_invalid",)
    with pytest.raises(HistoryInvalid):
        history.append({"tool": "lookup", "arguments": {}, "cost": -1})


def test_a_bad_cost_from_the_host_is_refused_or_raised():
    check = ToolCheck(priced(), key=KEY)
    history = check.new_history("s")
    for bad in (-1, True, "5", float("nan")):
        decision = check.check(lookup(), session=history, cost=bad)
        assert (decision.reasons, decision.detail["field"]) == (("malformed_call",), "cost")
        with pytest.raises(GuardError):
            check.record(history, lookup(), {}, cost=bad)


def test_the_firewalls_cap_cost_verdict_is_held_with_the_same_figures():
    check = ToolCheck(priced(), key=KEY)
    history = check.new_history("s")
    check.record(history, lookup(), {})
    call = {"tool": "free", "arguments": {}}
    assert check.over_cost_cap(call, session=history, cap=10, cost=5) is None  # 5 + 5 == 10
    refused = check.over_cost_cap(call, session=history, cap=10, cost=6)
    assert refused.reasons == ("cost_exceeded",)
    assert refused.rule == "cap_cost 10"
    assert refused.detail == {"check": "firewall", "rule": "cap_cost 10", "spent": 5,
                              "this_call": 6, "cap": 10}  # fmt: skip


def test_spend_per_run_sums_the_argument_over_the_verified_history():
    data = {
        "tools": [
            {
                "name": "pay",
                "kind": "write",
                "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}},
                "checks": [{"spend": {"argument": "amount", "at_most": 100, "per": "run"}}],
            }
        ]
    }
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")
    paid = {"tool": "pay", "arguments": {"amount": 60}, "origins": {"amount": "typed"}}
    check.record(history, paid, {})
    exact = {**paid, "arguments": {"amount": 40}}
    assert check.check(exact, session=history).reasons == ("write",)  # 60 + 40 == 100
    over = check.check({**paid, "arguments": {"amount": 40.01}}, session=history)
    assert over.reasons == ("spend_exceeded",)
    assert {key: over.detail[key] for key in ("per", "spent", "this_call", "cap")} == {
        "per": "run",
        "spent": 60,
        "this_call": 40.01,
        "cap": 100,
    }


@pytest.mark.parametrize(
    ("cost", "message"),
    [
        (-1, "tools[0].cost: must be a number of cents, 0 or more, or `{argument: <name>}`, not `-1`"),
        (True, "tools[0].cost: must be a number of cents, 0 or more, or `{argument: <name>}`, not `True`"),
        ("5", "tools[0].cost: must be a number of cents, 0 or more, or `{argument: <name>}`, not `5`"),
        ({"argument": "nope"}, "tools[0].cost.argument: must name an argument of this tool, not `nope`"),
        ({"argument": "price", "per": "call"}, "tools[0].cost: takes only `argument`: `cost: {argument: <name>}`"),
    ],
)  # fmt: skip
def test_a_malformed_cost_is_refused_at_its_path(cost, message):
    assert issues_of(priced(cost=cost)) == [message]


@pytest.mark.parametrize("cap", [-1, "20", None, False])
def test_a_malformed_cap_is_refused_at_its_path(cap):
    found = issues_of(priced(cap=cap))
    assert found[0] == "tools[0].checks[0].cap_cost: must be a number of cents, 0 or more"


def test_a_cap_stands_alone_in_its_check():
    data = priced()
    data["tools"][0]["checks"] = [{"cap_cost": 5, "per": "day"}]
    assert issues_of(data) == ["tools[0].checks[0]: `cap_cost` stands alone in its check"]


def test_a_list_of_fetched_addresses_is_held_entry_by_entry_and_a_lookalike_name_is_not_exempt():
    data = {
        "tools": [
            {
                "name": "fetch_pages",
                "kind": "read",
                "parameters": {
                    "type": "object",
                    "properties": {"url": {"type": "array", "items": TEXT}, "url2": TEXT},
                },
                "fetches": ["url"],
            }
        ]
    }
    check = ToolCheck(data, key=KEY)
    history = check.new_history("s")

    def pages(**arguments):
        return check.check({"tool": "fetch_pages", "arguments": arguments}, session=history)

    allowed = pages(url=["https://a.example/", "https://b.example/"])
    assert allowed.decision == "allow"
    assert [item["pointer"] for item in allowed.detail["fetches"]] == ["/url/0", "/url/1"]
    refused = pages(url=["https://a.example/", "http://10.0.0.1/"])
    assert (refused.reasons, refused.detail["pointer"]) == (("disallowed_address",), "/url/1")
    other = pages(url=["https://a.example/"], url2="https://c.example/")
    assert (other.reasons, other.detail["pointer"]) == (("undeclared_destination",), "/url2")
