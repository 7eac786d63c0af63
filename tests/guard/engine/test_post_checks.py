"""The place for the checks of what was said: post-checks that can only make an answer stricter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from guard.engine import Decision, PostCheck, ToolCheck, stricter_only
from guard.engine.decision import STRICTNESS

from .conftest import KEY

decisions = st.builds(
    Decision,
    st.sampled_from(["allow", "confirm", "refuse"]),
    st.lists(st.sampled_from(["write", "s1_veto", "allow", "x"]), max_size=3).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(decisions, st.one_of(st.none(), decisions, st.just("not a decision")))
def test_a_post_check_never_makes_an_answer_looser(current, proposed):
    result = stricter_only(current, proposed, "s1_veto")
    assert STRICTNESS[result.decision] >= STRICTNESS[current.decision]
    if current.decision == "refuse":
        assert result == current
    if current.decision == "confirm":
        assert result.decision != "allow"
        assert set(current.reasons) <= set(result.reasons) or result.decision == "refuse"


def write_check(*post_checks) -> ToolCheck:
    data = {"tools": [{"name": "save_note", "kind": "write"}, {"name": "look", "kind": "read"}]}
    return ToolCheck(data, key=KEY, post_checks=post_checks)


def test_a_post_check_that_tries_to_allow_a_confirmed_write_is_ignored():
    check = write_check(
        PostCheck("s1_veto", lambda call, decision, **_: Decision("allow", ("fine",)))
    )
    decision = check.check({"tool": "save_note"}, session=check.new_history("s"))
    assert (decision.decision, decision.reasons) == ("confirm", ("write",))


def test_a_post_check_may_refuse_and_runs_only_when_switched_on():
    veto = PostCheck("s1_veto", lambda call, decision, **_: Decision("refuse", ("s1_veto",)))
    check = write_check(veto)
    refused = check.check({"tool": "look"}, session=check.new_history("s"))
    assert (refused.decision, refused.reasons, refused.detail["check"]) == (
        "refuse",
        ("s1_veto",),
        "s1_veto",
    )
    off = check.check({"tool": "look"}, session=check.new_history("s"), checks=["confirm_read"])
    assert off.decision == "allow"


def test_a_post_check_that_breaks_refuses():
    def broken(call, decision, **_):
        raise ValueError("reader crashed")

    check = write_check(PostCheck("confirm_read", broken))
    decision = check.check({"tool": "look"}, session=check.new_history("s"))
    assert (decision.decision, decision.reasons) == ("refuse", ("post_check_error",))


def test_a_second_confirm_adds_its_reasons():
    check = write_check(
        PostCheck("confirm_read", lambda c, d, **_: Decision("confirm", ("confirm_read",)))
    )
    decision = check.check({"tool": "save_note"}, session=check.new_history("s"))
    assert decision.reasons == ("write", "confirm_read")


def test_a_post_check_must_carry_a_registered_name():
    import pytest

    from guard.engine import GuardError

    with pytest.raises(GuardError):
        write_check(PostCheck("sentiment", lambda c, d, **_: None))
