"""A job's life on workers, in this process: claims, leases, the sweeper, retries, progress.

The same paths on a real worker process, killed mid-run: test_worker.py.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

import proof.engine
from proof import services
from proof.models import ProofJob

from .conftest import shop_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    out: list[int] = []
    monkeypatch.setattr(services, "send", out.append)
    return out


@pytest.fixture
def job(actors, sent) -> ProofJob:
    return services.proof_job_submit(actor=actors["editor"], body=shop_job())


def _left_running(job: ProofJob, *, attempts: int, lease_ago: float) -> None:
    """What a worker killed mid-run leaves: `running`, and a lease it no longer renews."""
    ProofJob.objects.filter(pk=job.pk).update(
        status=ProofJob.Status.RUNNING,
        attempts=attempts,
        progress=40,
        lease_until=timezone.now() - dt.timedelta(seconds=lease_ago),
    )


def test_a_run_claims_proves_and_writes_the_report(job):
    assert services.proof_job_run(job_id=job.pk) == "passed"
    job.refresh_from_db()
    assert (job.status, job.progress, job.attempts, job.lease_until) == ("passed", 100, 1, None)
    assert job.gate_passed is True and job.findings_count == 2 and job.failing_count == 0
    assert "Gate: passed" in job.report_text
    assert job.report_sarif["version"] == "2.1.0"
    assert job.finished_at is not None


def test_running_a_finished_job_again_changes_nothing(job):
    services.proof_job_run(job_id=job.pk)
    job.refresh_from_db()
    before = (job.status, job.attempts, job.finished_at, job.report)
    assert services.proof_job_run(job_id=job.pk) == "nothing to do"
    job.refresh_from_db()
    assert (job.status, job.attempts, job.finished_at, job.report) == before


def test_a_job_under_a_live_lease_is_left_to_its_worker(job):
    ProofJob.objects.filter(pk=job.pk).update(
        status="running", attempts=1, lease_until=timezone.now() + dt.timedelta(seconds=60)
    )
    assert services.proof_job_run(job_id=job.pk) == "nothing to do"
    assert ProofJob.objects.get(pk=job.pk).attempts == 1


def test_a_job_left_running_past_its_lease_is_retried_and_finishes(job, sent):
    _left_running(job, attempts=1, lease_ago=5)
    swept = services.proof_jobs_sweep()
    assert swept["retried"] == [job.pk]
    job.refresh_from_db()
    assert job.status == "queued" and job.report is None
    assert "attempt 1 stopped without a result" in job.error
    assert services.proof_job_run(job_id=job.pk) == "passed"
    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == ("passed", 2, "")


def test_a_redelivered_task_takes_a_lapsed_job_as_a_new_attempt(job):
    _left_running(job, attempts=1, lease_ago=5)
    assert services.proof_job_run(job_id=job.pk) == "passed"
    assert ProofJob.objects.get(pk=job.pk).attempts == 2


@pytest.mark.parametrize("by", ["sweeper", "claim"])
def test_a_job_out_of_attempts_ends_error_never_passed(job, settings, by):
    settings.STALWART_PROOF_MAX_ATTEMPTS = 3
    _left_running(job, attempts=3, lease_ago=5)
    if by == "sweeper":
        assert services.proof_jobs_sweep()["gave_up"] == [job.pk]
    else:
        assert services.proof_job_run(job_id=job.pk) == "nothing to do"
    job.refresh_from_db()
    assert job.status == "error" and job.gate_passed is None and job.report is None
    assert "no result after 3 attempt(s)" in job.error
    # and it stays so: a late task or sweep does not prove it
    assert services.proof_job_run(job_id=job.pk) == "nothing to do"
    assert services.proof_jobs_sweep() == {"retried": [], "gave_up": [], "resent": []}
    assert ProofJob.objects.get(pk=job.pk).status == "error"


def test_an_attempt_whose_job_was_taken_from_it_writes_nothing(job, monkeypatch):
    real = proof.engine.verify_graph

    def slow_then_taken(*args, **kwargs):
        report = real(*args, **kwargs)
        # meanwhile the lease lapsed and another attempt claimed the job
        ProofJob.objects.filter(pk=job.pk).update(attempts=2)
        return report

    monkeypatch.setattr(proof.engine, "verify_graph", slow_then_taken)
    assert services.proof_job_run(job_id=job.pk) == "superseded"
    job.refresh_from_db()
    assert job.status == "running" and job.report is None


def test_a_proof_that_raises_ends_error_at_once(job, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(proof.engine, "verify_graph", broken)
    assert services.proof_job_run(job_id=job.pk) == "error"
    job.refresh_from_db()
    assert job.status == "error" and job.report is None and job.gate_passed is None
    assert job.error.startswith("internal error")


def test_progress_is_written_as_the_engines_answer(job, monkeypatch):
    real = proof.engine.verify_graph
    seen: list[tuple[int, str]] = []

    def watching(*args, progress, **kwargs):
        def told(answered: int, total: int) -> None:
            progress(answered, total)
            row = ProofJob.objects.get(pk=job.pk)
            seen.append((row.progress, row.status))

        return real(*args, progress=told, **kwargs)

    monkeypatch.setattr(proof.engine, "verify_graph", watching)
    proof.engine.DEFAULT_CACHE.clear()  # proved afresh, not answered from an earlier test's proof
    services.proof_job_run(job_id=job.pk)
    written = [p for p, _ in seen]
    assert written == sorted(written) and written[0] == 5 and 50 in written and written[-1] == 95
    assert {s for _, s in seen} == {"running"}
    assert ProofJob.objects.get(pk=job.pk).progress == 100


def test_the_sweeper_sends_again_a_queued_job_no_worker_took(
    job, sent, django_capture_on_commit_callbacks
):
    assert services.proof_jobs_sweep()["resent"] == []  # just sent: give it time
    ProofJob.objects.filter(pk=job.pk).update(
        sent_at=timezone.now() - services.RESEND_AFTER - dt.timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        swept = services.proof_jobs_sweep()
    assert swept["resent"] == [job.pk] and sent == [job.pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert services.proof_jobs_sweep()["resent"] == []  # sent again just now
    assert sent == [job.pk]


def test_the_sweeper_is_on_the_beat_schedule(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-proofs"]
    assert entry["task"] == "proof.sweep"
    from console.celery import app

    app.loader.import_default_modules()
    assert {"proof.sweep", "proof.run_job"} <= set(app.tasks)
    assert app.tasks["proof.run_job"].acks_late is True


def test_the_bar_moves_inside_each_engines_half_not_from_0_to_100(job, monkeypatch):
    from proof.engine import fixpoint as fixpoint_module
    from proof.engine import search as search_module

    # Every state ticks and every percent is written: the shop's small graph then shows what a
    # large graph's proof writes over its seconds.
    monkeypatch.setattr(search_module, "TICK_EVERY", 1)
    monkeypatch.setattr(fixpoint_module, "TICK_EVERY", 1)
    monkeypatch.setattr(services, "PROGRESS_WRITE_SECONDS", 0.0)
    real = services._Lease.renew
    written: list[int] = []

    def renew(self, **fields):  # noqa: ANN001, ANN202
        if "progress" in fields:
            written.append(fields["progress"])
        return real(self, **fields)

    monkeypatch.setattr(services._Lease, "renew", renew)
    proof.engine.DEFAULT_CACHE.clear()
    services.proof_job_run(job_id=job.pk)
    assert any(5 < p < 50 for p in written), written
    assert any(50 < p < 95 for p in written), written
    assert written == sorted(set(written))
