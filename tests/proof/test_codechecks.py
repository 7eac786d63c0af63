"""Code checks: network and credential problems in the tools' code, each with a clean twin."""

from __future__ import annotations

import pytest

from proof.engine.codechecks import check_files, check_python, check_text, rules_digest


@pytest.mark.parametrize(
    ("rule", "bad", "good"),
    [
        ("CC001", "API_KEY = 'k3y-4-real-9'\n", "API_KEY = os.environ['API_KEY']\n"),
        ("CC001", "conf = {'password': 'hunter2'}\n", "conf = {'password': secret()}\n"),
        ("CC001", "client(token='abc123')\n", "client(token=load())\n"),
        ("CC001", "X = 'AKIAABCDEFGHIJKLMNOP'\n", "X = 'AKIA-not-a-key'\n"),
        ("CC002", "requests.get(u, verify=False)\n", "requests.get(u, verify=True)\n"),
        ("CC003", "U = 'http://api.example.com/x'\n", "U = 'http://localhost:8080/x'\n"),
        ("CC003", "U = 'http://10.0.0.5/x'\n", "U = 'https://10.0.0.5/x'\n"),
        ("CC004", "subprocess.run(c, shell=True)\n", "subprocess.run([c])\n"),
        (
            "CC005",
            "ctx = ssl._create_unverified_context()\n",
            "ctx = ssl.create_default_context()\n",
        ),
        ("CC005", "ctx.check_hostname = False\n", "ctx.check_hostname = True\n"),
        ("CC005", "ctx.verify_mode = ssl.CERT_NONE\n", "ctx.verify_mode = ssl.CERT_REQUIRED\n"),
        ("CC006", "DSN = 'https://bob:pw@db.example/x'\n", "DSN = 'https://db.example/x'\n"),
    ],
)
def test_each_code_check_fires_on_its_problem_and_not_on_the_fix(rule, bad, good) -> None:
    assert rule in {f.rule for f in check_python("t.py", bad)}
    assert rule not in {f.rule for f in check_python("t.py", good)}


def test_placeholder_secrets_are_not_findings() -> None:
    assert check_python("t.py", "PASSWORD = ''\nTOKEN = 'changeme'\n") == []


def test_yaml_and_rulebooks_are_read_for_credential_shapes() -> None:
    found = check_text("agent.yaml", "a: 1\nkey: ghp_" + "a" * 36 + "\n")
    assert [(f.file, f.line, f.rule) for f in found] == [("agent.yaml", 2, "CC001")]


def test_the_shop_has_no_code_finding_and_the_digest_is_twelve_hex_digits() -> None:
    from .conftest import SHOP

    report = check_files({"tools.py": (SHOP / "tools.py").read_text(), "agent.yaml": "a: 1\n"})
    assert report.findings == () and report.files == 2
    assert len(rules_digest()) == 12 and int(rules_digest(), 16) >= 0


def test_a_python_file_that_does_not_parse_is_named_not_fatal() -> None:
    report = check_files({"broken.py": "def (:\n"})
    assert report.unreadable == ("broken.py",)
