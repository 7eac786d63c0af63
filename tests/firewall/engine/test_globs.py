"""The glob grammar: four shapes, case-sensitive, and the exact-string fallback."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firewall.engine.globs import (
    ANY,
    EXACT,
    INFIX,
    MAX_GLOB_LENGTH,
    PREFIX,
    SUFFIX,
    classify,
    compile_glob,
    glob_matches,
    glob_problem,
)


@pytest.mark.parametrize("glob", ["", "*"])
def test_empty_and_star_match_every_tool(glob: str) -> None:
    assert classify(glob) == (ANY, "")
    assert glob_matches(glob, "shell.exec")
    assert glob_matches(glob, "x")


def test_prefix_glob_matches_names_under_it() -> None:
    assert classify("foo.*") == (PREFIX, "foo.")
    assert glob_matches("foo.*", "foo.bar")
    assert glob_matches("foo.*", "foo.bar.baz")


@pytest.mark.parametrize("name", ["foo", "foo.", "foobar", "xfoo.bar", "Foo.bar"])
def test_prefix_glob_does_not_match_bare_name_or_others(name: str) -> None:
    assert not glob_matches("foo.*", name)


def test_suffix_glob_matches_the_verb_across_servers() -> None:
    assert classify("*.exec") == (SUFFIX, ".exec")
    assert glob_matches("*.exec", "shell.exec")
    assert glob_matches("*.exec", "db.admin.exec")


@pytest.mark.parametrize("name", ["exec", ".exec", "shellexec", "shell.exec2", "shell.EXEC"])
def test_suffix_glob_does_not_match_bare_verb_or_others(name: str) -> None:
    assert not glob_matches("*.exec", name)


def test_infix_glob_needs_a_character_on_each_side() -> None:
    assert classify("*.shell.*") == (INFIX, ".shell.")
    assert glob_matches("*.shell.*", "local.shell.exec")
    assert glob_matches("*.shell.*", "a.b.shell.c.d")
    for name in ("shell.exec", "local.shell", ".shell.exec", "local.shell.", "local.shellx.exec"):
        assert not glob_matches("*.shell.*", name), name


@pytest.mark.parametrize("glob", ["foo.*.bar", "*.*", "foo*", "**", "*foo", "*..*", ".*", "*."])
def test_other_globs_are_exact_strings(glob: str) -> None:
    assert classify(glob) == (EXACT, glob)
    assert glob_matches(glob, glob)
    assert not glob_matches(glob, glob.replace("*", "x"))


def test_globs_are_case_sensitive() -> None:
    assert not glob_matches("Shell.exec", "shell.exec")
    assert not glob_matches("shell.*", "SHELL.exec")


def test_glob_problem_refuses_non_strings_whitespace_and_empty_steps() -> None:
    assert glob_problem(3) == "must be a string"
    assert "whitespace" in (glob_problem("shell. exec") or "")
    assert glob_problem("", allow_empty=False)
    assert glob_problem("") is None
    assert glob_problem("x" * 300)


_names = st.text(alphabet="ab.", max_size=8)
_globs = st.one_of(
    _names,
    _names.map(lambda n: n + ".*"),
    _names.map(lambda n: "*." + n),
    _names.map(lambda n: "*." + n + ".*"),
    st.sampled_from(["", "*", "*.*", "**"]),
)


@settings(max_examples=300, deadline=None)
@given(glob=_globs, name=_names)
def test_compiled_glob_agrees_with_the_definition(glob: str, name: str) -> None:
    assert compile_glob(glob)(name) == glob_matches(glob, name)


@pytest.mark.parametrize("char", [" ", "\t", "\n", "\x00", "\x7f", "\u00a0", "\u2028", "\u3000"])
def test_glob_problem_refuses_every_space_and_control_character(char: str) -> None:
    assert glob_problem(f"shell.{char}exec") == (
        f"`shell.{char}exec` contains whitespace or control characters"
    )


def test_glob_problem_takes_printable_text_beyond_ascii() -> None:
    assert glob_problem("café.*") is None


def test_the_shortest_glob_of_each_shape() -> None:
    assert classify("a.*") == (PREFIX, "a.")
    assert classify("*.a") == (SUFFIX, ".a")
    assert classify("*.a.*") == (INFIX, ".a.")
    assert compile_glob("a.*")("a.b") and not compile_glob("a.*")("a.")
    assert compile_glob("*.a")("b.a") and not compile_glob("*.a")(".a")
    assert compile_glob("*.a.*")("b.a.c") and not compile_glob("*.a.*")(".a.c")
    assert not compile_glob("*.a.*")("b.a.")


def test_glob_problem_messages_and_the_length_limit() -> None:
    assert glob_problem("", allow_empty=False) == "must not be empty (use `*` to match every tool)"
    assert glob_problem("x" * MAX_GLOB_LENGTH) is None
    assert glob_problem("x" * (MAX_GLOB_LENGTH + 1)) == (
        f"is longer than {MAX_GLOB_LENGTH} characters"
    )
    assert glob_problem("*", allow_empty=False) is None
