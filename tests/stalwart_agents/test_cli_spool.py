"""`stalwart spool adopt`: a spool written before spools recorded their organisation is shipped
with the current key on the operator's word, after saying what it holds; what is not a spool, or
is another organisation's, is refused. Against a live console, with real keys."""

from __future__ import annotations

import pytest

from stalwart_agents import cli
from tests.runtime import spools
from tests.runtime.spools import feed, legacy_spool, stranded_spool, waiting

pytestmark = pytest.mark.django_db(transaction=True)

keys, state = spools.keys, spools.state  # the fixtures the tests share


def run_cli(monkeypatch, capsys, url: str, key: str, *argv: str) -> tuple[int, str, str]:  # noqa: ANN001
    monkeypatch.setenv("STALWART_URL", url)
    monkeypatch.setenv("STALWART_API_KEY", key)
    code = cli.main(["spool", "adopt", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_adopt_command_says_what_a_spool_holds_and_sends_nothing_without_yes(
    live_server, keys, tmp_path, monkeypatch, capsys, organisation
):
    path = legacy_spool(tmp_path / "old.sqlite3")
    key = keys()
    code, out, err = run_cli(monkeypatch, capsys, live_server.url, key, str(path))
    assert code == 0, err
    assert "5 records waiting" in out and "1 session" in out and "--yes" in out
    assert "no organisation recorded" in out
    assert key not in out + err and waiting(path) == 5 and feed(organisation) == []


def test_the_adopt_command_ships_a_spool_made_before_with_the_current_key(
    live_server, keys, tmp_path, monkeypatch, capsys, organisation
):
    path = legacy_spool(tmp_path / "old.sqlite3")
    key = keys()
    code, out, err = run_cli(monkeypatch, capsys, live_server.url, key, str(path), "--yes")
    assert code == 0, err
    assert "5 records sent" in out and "`acme`" in out and key not in out + err
    assert waiting(path) == 0 and feed(organisation) == [1, 2, 3, 4, 5]


def test_the_adopt_command_refuses_another_organisations_spool(
    live_server, keys, state, monkeypatch, capsys, organisation, other_organisation
):
    path = stranded_spool(live_server.url, keys(other=True))
    code, _, err = run_cli(monkeypatch, capsys, live_server.url, keys(), str(path), "--yes")
    assert code == 1 and "another organisation or console" in err
    assert waiting(path) == 7 and feed(organisation) == [] and feed(other_organisation) == []


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p, "no such file"),
        (lambda p: (p.write_text("not a spool"), p)[1], "not a decision-log spool"),
        (lambda p: p.mkdir() or p, "not a decision-log spool"),
    ],
)
def test_the_adopt_command_refuses_what_is_not_a_spool(
    tmp_path, monkeypatch, capsys, make, problem
):
    path = make(tmp_path / "given")
    code, _, err = run_cli(monkeypatch, capsys, "http://127.0.0.1:9", "k", str(path), "--yes")
    assert code == 1 and problem in err and "Traceback" not in err


def test_the_adopt_command_needs_the_consoles_url_and_a_key(tmp_path, monkeypatch, capsys):
    path = legacy_spool(tmp_path / "old.sqlite3")
    code, _, err = run_cli(monkeypatch, capsys, "", "", str(path), "--yes")
    assert code == 2 and "STALWART_URL" in err
    assert waiting(path) == 5


@pytest.mark.parametrize("given", ["0", "-1", "soon", "100000"])
def test_the_adopt_command_refuses_a_timeout_that_is_not_one(tmp_path, monkeypatch, capsys, given):
    path = legacy_spool(tmp_path / "old.sqlite3")
    code, _, err = run_cli(
        monkeypatch, capsys, "http://127.0.0.1:9", "k", str(path), "--timeout", given
    )
    assert code == 2 and "--timeout" in err and waiting(path) == 5
