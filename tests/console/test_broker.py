"""The embedded broker: kombu's SQLAlchemy transport over SQLite, shared by several processes."""

from __future__ import annotations

import datetime as dt
import sqlite3
import subprocess
import sys
from pathlib import Path

from kombu import Connection

from console import broker

ROOT = Path(__file__).resolve().parent.parent.parent


def _connection(folder: Path) -> Connection:
    return Connection(broker.broker_url(folder), transport=broker.TRANSPORT)


def test_a_message_put_by_another_process_is_taken_whole_once(tmp_path):
    script = (
        "import sys; from kombu import Connection; from console import broker; "
        "from pathlib import Path\n"
        "with Connection(broker.broker_url(Path(sys.argv[1])), transport=broker.TRANSPORT) as c:\n"
        "    q = c.SimpleQueue('soak')\n"
        "    for i in range(50): q.put({'n': i, 'pad': 'x' * 5000})\n"
    )
    producers = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT) for _ in range(3)
    ]
    for producer in producers:
        assert producer.wait(timeout=120) == 0
    with _connection(tmp_path) as connection:
        queue = connection.SimpleQueue("soak")
        seen = []
        while len(seen) < 150:
            message = queue.get(timeout=5)
            seen.append(message.payload["n"])
            assert len(message.payload["pad"]) == 5000
            message.ack()
        assert queue.qsize() == 0
    assert sorted(seen) == sorted(list(range(50)) * 3)


def test_delivered_messages_older_than_an_hour_are_pruned_and_waiting_ones_kept(tmp_path):
    with _connection(tmp_path) as connection:
        queue = connection.SimpleQueue("prune")
        queue.put({"n": 1})
        queue.put({"n": 2})
        queue.get(timeout=5).ack()
    path = broker.broker_file(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE kombu_message SET timestamp = ? WHERE visible = 0",
            ((dt.datetime.now() - dt.timedelta(hours=2)).isoformat(sep=" "),),
        )
    assert broker.prune_delivered(path) == 1
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT visible FROM kombu_message").fetchall() == [(1,)]


def test_pruning_a_broker_that_never_ran_removes_nothing(tmp_path):
    assert broker.prune_delivered(tmp_path / "none.sqlite3") == 0


def test_the_embedded_broker_is_the_default_without_redis(tmp_path):
    code = (
        "from django.conf import settings; "
        "print(settings.CELERY_BROKER_URL, settings.CELERY_BROKER_TRANSPORT)"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "STALWART_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "console.settings.dev",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == [f"sqlite:///{tmp_path}/broker.sqlite3", broker.TRANSPORT]
