"""Decision logs under faults, end to end: a runtime session's spool shipping to a live console
(a real HTTP server on a free port, stopped and started again), the real database and Redis, and
a real `celery worker` matching the sequence rules over what arrives."""

from __future__ import annotations

import threading
import time

import pytest

from console.access import Actor
from console.models import Event, MatchState
from firewall import services as firewall_services
from stalwart_agents import runtime
from stalwart_agents.spool import Shipper, Spool
from tests.guard.engine.conftest import lab_catalogue
from tests.worker import flush_broker, running_worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

KEY = b"k" * 32
#: Three order reads, then a refund, in one session: the chain the console must see.
REFUND_AFTER_READS = {
    "name": "refund after reads",
    "priority": 50,
    "verdict": "audit",
    "sequence": {
        "steps": [{"tool_glob": "get_order", "min_count": 3}, {"tool_glob": "refund_card"}],
        "window_seconds": 600,
    },
}


class Console:
    """The console's WSGI application served from this process on a port the OS chose; `stop()`
    closes the port (connections are refused), `start()` serves on the same port again."""

    def __init__(self) -> None:
        self.port = 0
        self.server = None

    def start(self) -> Console:
        from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
        from django.core.wsgi import get_wsgi_application

        class Quiet(WSGIRequestHandler):
            def log_message(self, *args):  # noqa: ANN002
                pass

        self.server = ThreadedWSGIServer(("127.0.0.1", self.port), Quiet, allow_reuse_address=True)
        self.server.set_app(get_wsgi_application())
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def key(admin, organisation, actor_for):
    from console import services as console_services

    flush_broker()
    actor = Actor(organisation=organisation, role="editor", label="user:eve", user_id=admin.pk)
    policy = firewall_services.policy_create(actor=actor, name="production")
    firewall_services.rule_create(actor=actor, policy=policy, data=REFUND_AFTER_READS)
    firewall_services.policy_publish(actor=actor, policy=policy)
    _, plain = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="runtime", role="editor"
    )
    yield plain
    flush_broker()


def _work(session, orders: int) -> None:
    for i in range(orders):
        session.check("get_order", {"order_id": f"A{i}"})
    session.check("refund_card", {"order_id": "A0", "amount": 5})


def _wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} not within {timeout} s")


def test_the_console_down_for_a_while_loses_nothing_and_the_sequence_rules_match(
    key, organisation, tmp_path
):
    console = Console().start()
    spool = Spool(tmp_path / "spool.sqlite3")
    shipper = Shipper(
        spool, url=console.url, api_key=key, batch=50, interval=0.05, backoff=(0.1, 0.4)
    ).start()
    sessions = [
        runtime.open_session("assistant", catalogue=lab_catalogue(), key=KEY, sink=spool)
        for _ in range(3)
    ]
    try:
        with running_worker(beat=True):
            _work(sessions[0], 3)
            assert shipper.flush(20)
            console.stop()  # the console goes away while the agents keep deciding
            for session in sessions:
                _work(session, 40)
            time.sleep(1.5)  # several failed sends, backing off
            assert spool.pending() == 123 and shipper.failures >= 2
            console.start()  # back on the same port
            assert shipper.flush(30)
            expected = 4 + 3 * 41

            def all_matched() -> bool:
                events = Event.objects.filter(organisation=organisation, source="runtime")
                return (
                    events.count() == expected
                    and not events.filter(match_state=MatchState.PENDING).exists()
                )

            _wait(all_matched, 60, "every record matched")
    finally:
        shipper.stop()
        console.stop()
    events = Event.objects.filter(organisation=organisation, source="runtime")
    assert events.count() == expected  # exactly once
    assert len(set(events.values_list("record_id", flat=True))) == expected
    for session in sessions:
        mine = events.filter(session=session.history.session).order_by("id")
        sequence = [e.detail["record"]["sequence"] for e in mine]
        assert sequence == list(range(1, len(sequence) + 1))  # in order per session
    alerts = Event.objects.filter(organisation=organisation, is_alert=True)
    # one chain in the first session before the outage, one in each session during it
    assert alerts.count() == 4
    assert {a.session for a in alerts} == {s.history.session for s in sessions}


def test_a_batch_the_console_stored_but_whose_answer_was_lost_is_stored_once(
    key, organisation, tmp_path
):
    console = Console().start()
    try:
        spool = Spool(tmp_path / "spool.sqlite3")
        session = runtime.open_session("assistant", catalogue=lab_catalogue(), key=KEY, sink=spool)
        _work(session, 5)
        shipper = Shipper(spool, url=console.url, api_key=key)
        bodies = [body for _, body in spool.peek(100)]
        shipper._post(bodies)  # the console stores it; the runtime never hears back
        assert shipper.ship_once() == 6  # so it sends the same batch again
        assert shipper.duplicates == 6 and spool.pending() == 0
    finally:
        console.stop()
    assert Event.objects.filter(organisation=organisation, source="runtime").count() == 6
