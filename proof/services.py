"""Graph-proof jobs: submitted with an audit row, proved on a worker under a lease, swept.

The row drives the work (DESIGN.md, "Nothing lost"): a job is written with its audit row in one
transaction and its task is sent once that commits; a job whose task was never sent (the broker
was down) is found by the sweeper and sent again. A worker claims a job under a lease that it
renews while it proves; a worker killed mid-run stops renewing, the lease lapses, and the sweeper
queues the job again for another attempt. Only the attempt that holds the claim may write a
result, so a late worker cannot overwrite a newer one. A job that ran out of attempts ends
`error`, never `passed`; a proof that raises ends `error` at once (the engine is deterministic:
another attempt would raise again).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from console.access import Actor, require
from console.services import audit_record
from proof import jobspec
from proof.models import ProofJob
from rulebooks.budget import compile_within_budget

log = logging.getLogger(__name__)

TASK = "proof.run_job"
#: A queued job whose task was sent this long ago and not taken is sent again by the sweeper.
RESEND_AFTER = dt.timedelta(seconds=30)
#: Where the progress bar stands before the engine answers its first question, and after its last.
LOADED, PROVED = 5, 95


def lease_seconds() -> float:
    return float(getattr(settings, "STALWART_PROOF_LEASE_SECONDS", 60.0))


def max_attempts() -> int:
    return max(1, int(getattr(settings, "STALWART_PROOF_MAX_ATTEMPTS", 3)))


def send(job_id: int) -> None:
    """Ask a worker to prove the job; when the broker cannot be reached, the sweeper will."""
    from console.celery import app

    try:
        app.send_task(TASK, args=[job_id])
    except Exception:  # noqa: BLE001 - the broker is down: the sweeper sends it again
        log.warning("could not enqueue proof job %s; the sweeper will", job_id)


def spec_of_job(job: ProofJob) -> jobspec.JobSpec:
    return jobspec.JobSpec(
        graph=job.graph,
        catalogue=job.catalogue,
        rulebook=job.rulebook,
        session_steps=job.session_steps,
        turns=job.turns,
        name=job.name,
    )


@transaction.atomic
def proof_job_submit(*, actor: Actor, body: Any) -> ProofJob:
    """Validate a job (every error by field path) and queue it; nothing is kept when invalid."""
    require(actor, "proofs.run")
    try:
        spec = jobspec.read_job(body)
        doc = jobspec.job_document(spec, compile_rulebook=compile_within_budget)
    except jobspec.JobInvalid as exc:
        raise ValidationError(exc.errors) from None
    from proof.engine import graph_digest

    now = timezone.now()
    job = ProofJob.objects.create(
        organisation=actor.organisation,
        name=spec.name,
        submitted_by=actor.label,
        submitted_by_id=actor.user_id,
        graph=spec.graph,
        catalogue=spec.catalogue,
        rulebook=spec.rulebook,
        session_steps=spec.session_steps,
        turns=spec.turns,
        digest=graph_digest(doc),
        nodes=len(doc.get("nodes") or []),
        edges=len(doc.get("edges") or []),
        sent_at=now,
    )
    audit_record(
        actor=actor,
        action="proof.submit",
        object_type="proof_job",
        object_id=job.public_id,
        changes={
            "name": {"old": None, "new": job.name},
            "digest": {"old": None, "new": job.digest},
            "session_steps": {"old": None, "new": job.session_steps},
            "turns": {"old": None, "new": job.turns},
            "graph": {"redacted": True},
            "catalogue": {"redacted": True},
            "rulebook": {"redacted": True},
        },
    )
    transaction.on_commit(lambda: send(job.pk))
    return job


def _claim(job_id: int) -> ProofJob | None:
    """Take the job for a new attempt, or None: it is finished, another worker holds a live
    lease on it, or it has no attempt left (then it ends `error` here)."""
    with transaction.atomic():
        job = ProofJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.finished:
            return None
        now = timezone.now()
        if job.status == ProofJob.Status.RUNNING and job.lease_until and job.lease_until > now:
            return None
        if job.attempts >= max_attempts():
            _give_up(job, now)
            return None
        job.status = ProofJob.Status.RUNNING
        job.attempts += 1
        job.progress = 0
        job.lease_until = now + dt.timedelta(seconds=lease_seconds())
        job.started_at = now
        job.save(update_fields=["status", "attempts", "progress", "lease_until", "started_at"])
        return job


def _give_up(job: ProofJob, now: dt.datetime) -> None:
    job.status = ProofJob.Status.ERROR
    job.error = (
        f"no result after {job.attempts} attempt(s): each worker stopped before the proof "
        "finished, so nothing is reported clean"
    )
    job.lease_until = None
    job.finished_at = now
    job.save(update_fields=["status", "error", "lease_until", "finished_at"])


class _Lease:
    """Keeps renewing the claim of one attempt while it proves (a thread of its own)."""

    def __init__(self, job_id: int, attempt: int) -> None:
        self.job_id, self.attempt = job_id, attempt
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def owned(self):  # noqa: ANN201
        return ProofJob.objects.filter(
            pk=self.job_id, status=ProofJob.Status.RUNNING, attempts=self.attempt
        )

    def renew(self, **fields: Any) -> int:
        until = timezone.now() + dt.timedelta(seconds=lease_seconds())
        return self.owned().update(lease_until=until, **fields)

    def _run(self) -> None:
        try:
            while not self.stopped.wait(lease_seconds() / 3):
                try:
                    if not self.renew():
                        return  # the job was taken from this attempt: nothing to keep
                except OperationalError:
                    log.warning("could not renew the lease of proof job %s", self.job_id)
        finally:
            connection.close()

    def __enter__(self) -> _Lease:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)


#: The least time between two writes of a job's progress (the engines tell it far more often).
PROGRESS_WRITE_SECONDS = 0.25


def _progress(lease: _Lease) -> Callable[[int, int], None]:
    """The engines' progress written to the job's row: each new percent, at most one write per
    `PROGRESS_WRITE_SECONDS` (the first and the last always)."""
    written = {"percent": LOADED, "at": 0.0}  # written once the job was loaded

    def told(answered: int, total: int) -> None:
        share = answered / total if total else 1.0
        percent = LOADED + int((PROVED - LOADED) * share)
        now = time.monotonic()
        if percent <= written["percent"]:
            return
        milestone = answered in (0, total) or 2 * answered == total
        if not milestone and now - written["at"] < PROGRESS_WRITE_SECONDS:
            return
        written.update(percent=percent, at=now)
        lease.renew(progress=percent)

    return told


def _finish(lease: _Lease, **fields: Any) -> bool:
    with transaction.atomic():
        return bool(
            lease.owned().update(
                lease_until=None, finished_at=timezone.now(), progress=100, **fields
            )
        )


def _result_fields(report: Any) -> dict[str, Any]:
    from proof.engine import render_text, report_dict, sarif_dict

    data = report_dict(report)
    return {
        "status": ProofJob.Status.PASSED if report.passed else ProofJob.Status.FAILED,
        "report": data,
        "report_text": render_text(report),
        "report_sarif": sarif_dict(report),
        "findings_count": len(report.findings),
        "failing_count": len(report.failing),
        "gate_passed": report.passed,
        "stops_agent": report.stops_agent,
        "error": "",
    }


def proof_job_run(*, job_id: int) -> str:
    """One attempt at a job (the task's body): claim, prove, write the result if still ours.

    Idempotent: a finished job, or one another worker is proving, is left as it is.
    """
    job = _claim(job_id)
    if job is None:
        return "nothing to do"
    from proof.engine import ProofError, verify_graph

    with _Lease(job.pk, job.attempts) as lease:
        try:
            doc = jobspec.job_document(spec_of_job(job), compile_rulebook=compile_within_budget)
            lease.renew(progress=LOADED)
            report = verify_graph(
                doc,
                depth=job.session_steps,
                turns=job.turns,
                file=job.name,
                progress=_progress(lease),
            )
            fields = _result_fields(report)
        except OperationalError:
            raise  # the database: the lease lapses and the job is tried again
        except (jobspec.JobInvalid, ProofError) as exc:
            fields = {"status": ProofJob.Status.ERROR, "error": f"the proof could not run: {exc}"}
        except Exception:  # noqa: BLE001 - never a clean result from a proof that failed
            log.exception("proof job %s failed", job.pk)
            fields = {
                "status": ProofJob.Status.ERROR,
                "error": "internal error: the proof could not run, so nothing is reported clean",
            }
        written = _finish(lease, **fields)
    return str(fields["status"]) if written else "superseded"


def proof_jobs_sweep(*, now: dt.datetime | None = None) -> dict[str, list[int]]:
    """Queue again the jobs whose worker was lost, end those out of attempts, and send again the
    queued jobs no worker took. Returns the ids it touched, by what it did."""
    now = now or timezone.now()
    out: dict[str, list[int]] = {"retried": [], "gave_up": [], "resent": []}
    with transaction.atomic():
        lapsed = ProofJob.objects.select_for_update().filter(
            status=ProofJob.Status.RUNNING, lease_until__lt=now
        )
        for job in lapsed:
            if job.attempts >= max_attempts():
                _give_up(job, now)
                out["gave_up"].append(job.pk)
                continue
            job.status = ProofJob.Status.QUEUED
            job.lease_until = None
            job.sent_at = now
            job.error = (
                f"attempt {job.attempts} stopped without a result (its worker was lost): "
                "tried again"
            )
            job.save(update_fields=["status", "lease_until", "sent_at", "error"])
            out["retried"].append(job.pk)
        stale = ProofJob.objects.select_for_update().filter(
            Q(sent_at__lt=now - RESEND_AFTER) | Q(sent_at__isnull=True),
            status=ProofJob.Status.QUEUED,
        )
        for job in stale:
            ProofJob.objects.filter(pk=job.pk).update(sent_at=now)
            out["resent"].append(job.pk)
        for pk in [*out["retried"], *out["resent"]]:
            transaction.on_commit(lambda pk=pk: send(pk))
    return out


def report_body(job: ProofJob, fmt: str) -> tuple[str, str]:
    """(content, content type) of a finished job's report in `txt`, `json` or `sarif`."""
    import json

    if fmt == "txt":
        return job.report_text, "text/plain; charset=utf-8"
    data: Mapping[str, Any] | None = job.report if fmt == "json" else job.report_sarif
    content_type = "application/json" if fmt == "json" else "application/sarif+json"
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n", content_type
