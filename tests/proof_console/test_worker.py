"""Graph proofs on a real `celery worker` process and the real Redis, with workers killed mid-run.

A killed worker leaves its job `running` under a lease it no longer renews; the sweeper on the
beat queues it again and another attempt proves it. It is never reported clean in between, and
a job whose attempts run out ends `error`.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.db import transaction

from benchmarks.proof.workload import desks
from proof import services
from proof.engine import build_agent_graph
from proof.models import ProofJob
from tests.worker import flush_broker, running_worker

from .conftest import planted_graph, shop_job

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

#: Short leases, so that a lost worker is noticed within seconds (the default is a minute).
FAST = {"STALWART_PROOF_LEASE_SECONDS": "3"}


@pytest.fixture
def editor_actor(actors):  # noqa: ANN001, ANN201
    flush_broker()
    yield actors["editor"]
    flush_broker()


def _submit(actor, body) -> ProofJob:  # noqa: ANN001
    with transaction.atomic():  # the task is sent once this commits
        return services.proof_job_submit(actor=actor, body=body)


def _wait(job: ProofJob, statuses: set[str], timeout: float = 90) -> ProofJob:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in statuses:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job still {job.status} ({job.progress}%) after {timeout} s")


def _big_graph() -> dict:
    """About 1,700 steps: a proof of several seconds, long enough to kill its worker mid-run."""
    text, files, _ = desks(2000)
    return build_agent_graph(text, files=files)


def test_submitted_jobs_reach_their_results_on_a_real_worker(editor_actor):
    shop = _submit(editor_actor, shop_job())
    planted = _submit(editor_actor, {"graph": planted_graph()})
    with running_worker():
        shop = _wait(shop, {"passed", "failed", "error"})
        planted = _wait(planted, {"passed", "failed", "error"})
    assert (shop.status, shop.progress, shop.attempts) == ("passed", 100, 1)
    assert sorted(f["rule"] for f in shop.report["findings"]) == ["QG023", "QG105"]
    assert planted.status == "failed" and planted.stops_agent is True
    assert [f["rule"] for f in planted.report["findings"]] == ["QG011"]
    assert "Gate: failed" in planted.report_text


def _kill_mid_run(job: ProofJob, env: dict[str, str]) -> None:
    with running_worker(env=env) as worker:
        _wait(job, {"running"}, timeout=60)
        time.sleep(1.0)  # well into the proof
        job.refresh_from_db()
        assert job.status == "running", "the proof finished before the worker could be killed"
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    job.refresh_from_db()
    assert (job.status, job.report, job.gate_passed) == ("running", None, None)
    assert job.attempts == 1 and 0 <= job.progress < 100


def test_a_job_whose_worker_is_killed_mid_run_is_retried_and_never_reported_clean(editor_actor):
    job = _submit(editor_actor, {"graph": _big_graph(), "name": "desks"})
    _kill_mid_run(job, FAST)
    with running_worker(beat=True, env=FAST):
        job = _wait(job, {"passed", "failed", "error"}, timeout=120)
    assert job.status in ("passed", "failed") and job.attempts == 2
    assert job.report is not None and job.report["proof"]["nodes"] == job.nodes
    assert job.gate_passed is (job.status == "passed")


def test_a_job_whose_attempts_run_out_ends_error_not_passed(editor_actor):
    env = {**FAST, "STALWART_PROOF_MAX_ATTEMPTS": "1"}
    job = _submit(editor_actor, {"graph": _big_graph(), "name": "desks"})
    _kill_mid_run(job, env)
    with running_worker(beat=True, env=env):
        job = _wait(job, {"passed", "failed", "error"}, timeout=60)
    assert job.status == "error" and job.report is None and job.gate_passed is None
    assert "no result after 1 attempt(s)" in job.error


def test_the_sdk_submits_a_graph_and_waits_for_its_report(
    editor_actor, admin, organisation, actor_for, live_server
):
    from console import services as console_services
    from stalwart_agents import Agent, Client, ProofUnfinished, RequestRefused

    from .conftest import SHOP

    _, key = console_services.api_key_create(
        actor=actor_for(admin, organisation), name="ci", role="editor"
    )
    desk = Agent.from_file(SHOP)
    client = Client(url=live_server.url, api_key=key)
    with pytest.raises(RequestRefused) as refused:
        client.verify_graph(desk.export(), session_steps=0)
    assert refused.value.status == 400 and "session_steps" in refused.value.body
    # No worker yet: the job waits, and waiting for it is never a clean result.
    with pytest.raises(ProofUnfinished) as unfinished:
        client.verify_graph(desk.export(), timeout=1, poll=0.2)
    assert unfinished.value.status == "queued"
    with running_worker():
        report = client.verify_graph(
            desk.export(),
            catalogue=desk.catalogue(),
            rulebook=desk.rules().record,
            session_steps=60,
            timeout=90,
            poll=0.2,
        )
    assert report["gate"]["passed"] is True
    assert sorted(f["rule"] for f in report["findings"]) == ["QG023", "QG105"]
    assert ProofJob.objects.filter(status="passed").count() >= 1
