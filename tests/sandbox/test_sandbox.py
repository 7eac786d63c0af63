"""The calculation sandbox: a function that breaks a limit or reaches out is stopped, saying why.

Each limit is small here so each test takes well under a few seconds. A test with `reaching`
lets the function import a module the allow-list refuses (socket, io, os, subprocess), so the
layers behind the allow-list -- the audit hook, the network namespace, the private folder -- are
the ones that must stop it.
"""

from __future__ import annotations

import os
import time

import pytest

from stalwart_agents.sandbox import (
    ALLOWED_MODULES,
    CalculationRefused,
    Limits,
    Sandbox,
    SandboxUnavailable,
    check_source,
)

# The wall clock is generous: on a shared, loaded machine one CPU second can take many seconds.
SMALL = Limits(cpu_seconds=1, wall_seconds=30.0, memory_bytes=256 * 1024 * 1024)
sandbox = Sandbox(SMALL)
reaching = Sandbox(SMALL, allowed=[*ALLOWED_MODULES, "socket", "io", "os", "subprocess"])


def refusal(box: Sandbox, source: str, arguments=()) -> CalculationRefused:
    with pytest.raises(CalculationRefused) as caught:
        box(source, list(arguments))
    return caught.value


def test_a_correct_function_over_two_reads_results_gives_the_right_number():
    source = (
        "def net(orders, credits):\n"
        "    return sum(o['amount'] for o in orders) - sum(c['amount'] for c in credits)\n"
    )
    orders = [{"amount": 40.0}, {"amount": 25.5}, {"amount": 12.25}]
    credits = [{"amount": 40.0}]
    assert sandbox(source, [orders, credits]) == 37.75


def test_allowed_modules_work_and_exact_numbers_come_back_as_numbers():
    source = (
        "import statistics\nfrom decimal import Decimal\nfrom collections import Counter\n"
        "def f(rows):\n"
        "    counted = Counter(r['status'] for r in rows)\n"
        "    return {'median': statistics.median(r['n'] for r in rows),\n"
        "            'total': sum(Decimal(str(r['n'])) for r in rows), 'open': counted['open']}\n"
    )
    rows = [{"n": 1.1, "status": "open"}, {"n": 2.2, "status": "open"}, {"n": 4, "status": "x"}]
    assert sandbox(source, [rows]) == {"median": 2.2, "total": 7.3, "open": 2}


def test_a_function_that_loops_forever_is_stopped_at_its_cpu_time_limit():
    started = time.monotonic()
    refused = refusal(sandbox, "def f():\n    while True:\n        pass\n")
    assert refused.reason == "cpu_time"
    assert "1 s of CPU time" in refused.message
    assert time.monotonic() - started < 30.0


def test_a_function_that_outlasts_the_wall_clock_is_killed():
    box = Sandbox(Limits(cpu_seconds=30, wall_seconds=0.5))
    refused = refusal(box, "def f():\n    n = 0\n    while True:\n        n += 1\n")
    assert refused.reason == "wall_clock"
    assert "0.5 s" in refused.message


def test_allocating_ten_gigabytes_is_stopped_at_the_memory_limit():
    refused = refusal(sandbox, "def f():\n    return len(bytes(10 * 1024 ** 3))\n")
    assert refused.reason == "memory"
    assert "256 MB" in refused.message


def test_importing_os_is_refused_before_anything_runs():
    refused = refusal(sandbox, "import os\ndef f():\n    return os.listdir('/')\n")
    assert refused.reason == "import"
    assert "`os`" in refused.message and "allow-list" in refused.message


def test_opening_a_socket_is_refused_by_the_allow_list_and_by_the_audit_hook():
    source = (
        "import socket\n"
        "def f():\n"
        "    s = socket.socket()\n"
        "    s.connect(('1.1.1.1', 80))\n"
        "    return 1\n"
    )
    assert refusal(sandbox, source).reason == "import"
    refused = refusal(reaching, source)
    assert refused.reason == "network"
    assert "socket" in refused.message


def test_reading_etc_passwd_is_refused_by_name_and_by_the_audit_hook():
    assert refusal(sandbox, "def f():\n    return open('/etc/passwd').read()\n").reason == (
        "forbidden"
    )
    refused = refusal(reaching, "import io\ndef f():\n    return io.open('/etc/passwd').read()\n")
    assert refused.reason == "file_system"
    assert "/etc/passwd" in refused.message
    listed = refusal(reaching, "import os\ndef f():\n    return os.listdir('/')\n")
    assert listed.reason == "file_system"


def test_spawning_a_process_is_refused_by_the_allow_list_and_by_the_audit_hook():
    source = "import subprocess\ndef f():\n    return subprocess.run(['id']).returncode\n"
    assert refusal(sandbox, source).reason == "import"
    assert refusal(reaching, source).reason == "process"
    assert refusal(reaching, "import os\ndef f():\n    return os.system('id')\n").reason == (
        "process"
    )


def test_a_function_that_catches_the_refusal_is_still_refused():
    source = (
        "import socket\n"
        "def f():\n"
        "    try:\n"
        "        socket.socket()\n"
        "    except Exception:\n"
        "        return 'caught'\n"
    )
    assert refusal(reaching, source).reason == "network"


def test_names_and_attributes_that_reach_the_interpreter_are_refused_with_their_line():
    escapes = {
        "def f():\n    return ().__class__.__base__.__subclasses__()\n": "__subclasses__",
        "def f():\n    g = (x for x in [1])\n    return g.gi_frame\n": "gi_frame",
        "def f():\n    return eval('1')\n": "eval",
        "def f():\n    return __import__('os')\n": "__import__",
        "def f():\n    return getattr(1, 'real')\n": "getattr",
    }
    for source, named in escapes.items():
        refused = refusal(sandbox, source)
        assert refused.reason == "forbidden", source
        assert named in refused.message and "line " in refused.message


def test_a_function_that_fails_says_how():
    refused = refusal(
        sandbox, "def f(rows):\n    return rows[0]['amount'] / 0\n", [[{"amount": 1}]]
    )
    assert refused.reason == "failed"
    assert "ZeroDivisionError" in refused.message


def test_a_result_that_is_not_data_is_refused():
    assert refusal(sandbox, "def f():\n    return max\n").reason == "not_data"


def test_a_source_that_is_not_one_function_is_refused():
    assert refusal(sandbox, "def f(:\n").reason == "invalid"
    assert refusal(sandbox, "def f():\n    return 1\ndef g():\n    return 2\n").reason == (
        "invalid"
    )
    assert refusal(sandbox, "").reason == "invalid"
    with pytest.raises(CalculationRefused):
        check_source("while True:\n    pass\n")


def test_the_inputs_are_data_never_code():
    source = "def f(rows):\n    return rows\n"
    text = "__import__('os').system('id')"
    assert sandbox(source, [text]) == text
    with pytest.raises(CalculationRefused) as caught:
        sandbox(source, [object()])
    assert caught.value.reason == "not_data"


def test_the_private_folder_is_removed_after_each_calculation(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert sandbox("def f():\n    return 1\n", []) == 1
    assert list(tmp_path.iterdir()) == []


def test_where_the_sandbox_cannot_start_it_says_compute_off_and_why():
    broken = Sandbox(SMALL, python="/nonexistent/python3")
    assert not broken
    assert broken.compute_off.startswith("compute off: the sandbox cannot start on this machine")
    with pytest.raises(SandboxUnavailable):
        broken("def f():\n    return 1\n", [])


def test_the_isolation_this_machine_gives_is_reported():
    isolation = sandbox.isolation()
    assert "audit hook" in isolation["network"] and "audit hook" in isolation["file system"]
    if os.geteuid() == 0:  # as root, the kernel's own walls hold too
        assert isolation["network"].startswith("network namespace")
        assert isolation["file system"].startswith("chroot")


def test_limits_must_be_positive_numbers():
    with pytest.raises(ValueError, match="cpu_seconds"):
        Limits(cpu_seconds=0)


def test_what_allowed_modules_import_when_first_used_is_loaded_beforehand():
    source = (
        "import datetime\nfrom collections import Counter\n"
        "def f(rows):\n"
        "    days = [datetime.datetime.strptime(r['day'], '%Y-%m-%d') for r in rows]\n"
        "    return [days[0].strftime('%A'), Counter(r['day'] for r in rows).most_common(1)]\n"
    )
    rows = [{"day": "2026-03-04"}, {"day": "2026-03-04"}, {"day": "2026-03-05"}]
    assert sandbox(source, [rows]) == ["Wednesday", [["2026-03-04", 2]]]
    assert refusal(sandbox, "import time\ndef f():\n    return time.time()\n").reason == "import"


def test_open_files_are_bounded_by_the_kernel():
    source = "import os\ndef f():\n    return len([os.pipe() for _ in range(64)])\n"
    refused = refusal(reaching, source)
    assert refused.reason == "failed" and "Too many open files" in refused.message
    assert reaching("import os\ndef f():\n    return len([os.pipe() for _ in range(4)])\n", []) == 4
