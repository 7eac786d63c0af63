"""The Proofs pages: submit a graph, watch the jobs prove, read a job's findings over its graph.

The list polls (htmx) only while a job is queued or running; a job's page polls its status the
same way and, once the job is finished, shows the gate, every finding with its witness drawn over
the agents' graph as inline SVG (`proof.drawing`), and the report to download; each finding links
its rule's page (`/proofs/rules/QG011`), which shows the registry's entry, as `stalwart verify
--explain` prints it.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from console.access import Actor, actor_for_request, require
from console.api.parsers import first_problem, strict_loads
from proof import drawing, selectors, services
from proof.models import ProofJob

MAX_FILE_BYTES = 5_000_000
LIST_LIMIT = 50
FORMATS = ("txt", "json", "sarif")


def _read_file(request: HttpRequest, field: str, errors: dict[str, list[str]]) -> bytes | None:
    upload = request.FILES.get(field)
    if upload is None:
        return None
    data = upload.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        errors[field] = [f"the file is larger than {MAX_FILE_BYTES:,} bytes"]
        return None
    return data


def _json(data: bytes, field: str, errors: dict[str, list[str]]) -> Any:
    """A file's JSON, read as the API reads a body: no `NaN`, no number past what Python converts,
    nested at most `STALWART_API_MAX_JSON_DEPTH` deep, no NUL or lone surrogate in a key or string
    (PostgreSQL keeps neither); what is wrong is named by its path inside the file."""
    try:
        value = strict_loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        errors[field] = ["is not UTF-8 text"]
    except json.JSONDecodeError as exc:
        message = exc.msg[:1].lower() + exc.msg[1:]
        errors[field] = [f"is not valid JSON: {message} at line {exc.lineno} column {exc.colno}"]
    except RecursionError:
        errors[field] = ["is not usable JSON: it nests too deeply"]
    except ValueError as exc:  # `NaN`, or an integer of more digits than Python converts
        errors[field] = [f"is not usable JSON: {str(exc).splitlines()[0][:200]}"]
    else:
        problem = first_problem(value, max_depth=int(settings.STALWART_API_MAX_JSON_DEPTH))
        if problem is None:
            return value
        where, message = problem
        errors[field if where == "body" else f"{field}.{where}"] = [message]
    return None


def _whole(value: str, field: str, errors: dict[str, list[str]]) -> int | None:
    value = (value or "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        errors[field] = [f"`{value}` is not a whole number"]
        return None


def form_body(request: HttpRequest) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The job the form describes (the API's body), and what could not be read from it."""
    errors: dict[str, list[str]] = {}
    body: dict[str, Any] = {}
    graph = _read_file(request, "graph", errors)
    if graph is None and "graph" not in errors:
        errors["graph"] = ["choose the agents' graph: a qls-graph/1 JSON file (`agent.export()`)"]
    elif graph is not None:
        body["graph"] = _json(graph, "graph", errors)
    catalogue = _read_file(request, "catalogue", errors)
    if catalogue is not None:
        body["catalogue"] = _json(catalogue, "catalogue", errors)
    upload = request.FILES.get("rulebook")
    rulebook = _read_file(request, "rulebook", errors)
    if rulebook is not None and upload is not None:
        if upload.name.lower().endswith(".json"):
            body["rulebook"] = _json(rulebook, "rulebook", errors)
        else:
            try:
                body["rulebook"] = rulebook.decode("utf-8")
            except UnicodeDecodeError:
                errors["rulebook"] = ["is not UTF-8 text"]
    for field in ("session_steps", "turns"):
        value = _whole(request.POST.get(field, ""), field, errors)
        if value is not None:
            body[field] = value
    name = request.POST.get("name", "").strip()
    if "\x00" in name:
        errors["name"] = ["a NUL character is not allowed"]
    elif name:
        body["name"] = name
    return body, errors


def _list_context(actor: Actor, **extra: Any) -> dict[str, Any]:
    jobs = list(selectors.job_list(organisation=actor.organisation)[:LIST_LIMIT])
    for job in jobs:
        job.waiting = _waiting(job)
    return {"jobs": jobs, "live": any(j.live for j in jobs), "untaken": _untaken(jobs), **extra}


@require_http_methods(["GET", "POST"])
def proofs_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "proofs.read")
    if request.method == "GET":
        if request.htmx and request.htmx.target == "proof-jobs":
            return render(request, "proof/list.html#proof-jobs", _list_context(actor))
        return render(request, "proof/list.html", _list_context(actor))
    require(actor, "proofs.run")
    body, errors = form_body(request)
    job = None
    if not errors:
        try:
            job = services.proof_job_submit(actor=actor, body=body)
        except ValidationError as exc:
            errors = exc.message_dict
    template = "proof/list.html#proofs-main" if request.htmx else "proof/list.html"
    if errors:
        context = _list_context(actor, form_errors=errors, posted=request.POST)
        return render(request, template, context, status=400)
    assert job is not None
    if not request.htmx:
        return redirect("proof", job_id=job.public_id)
    return render(request, template, _list_context(actor, submitted=job))


def finding_views(job: ProofJob) -> list[dict[str, Any]]:
    """The report's findings, each with its witness drawn over the job's graph."""
    report = job.report or {}
    out = []
    for finding in report.get("findings") or []:
        witness = finding.get("witness") or []
        out.append(
            {
                **finding,
                "drawing": drawing.draw(job.graph, witness) if witness else None,
                "path": " → ".join(str(s.get("node")) for s in witness),
            }
        )
    return out


#: A job queued longer than this with no worker taking it says so, and why that may be.
UNTAKEN_AFTER_SECONDS = 10


def _waiting(job: ProofJob) -> int:
    """Seconds a queued job has waited for a worker to take it (0 once one has)."""
    if job.status != ProofJob.Status.QUEUED:
        return 0
    return max(0, int((timezone.now() - job.created_at).total_seconds()))


def why_untaken() -> str:
    """Why a queued job waits, from the health ping (console/health.py): no worker answered it,
    the broker does not answer, or a worker answers and is busy."""
    from console.health import worker_answer

    answer = worker_answer()
    if answer.ok:
        return (
            f"a worker answers the health ping ({answer.detail}) but has not taken this job yet: "
            "it may be busy with another"
        )
    if "broker" in answer.detail:
        return f"{answer.detail}, so no worker can be asked"
    return (
        f"no worker answered the health ping ({answer.detail}): start one "
        "(`stalwart console worker`; `make run` starts one)"
    )


def _untaken(jobs: list[ProofJob]) -> str:
    """The reason the list gives once one of its jobs has waited `UNTAKEN_AFTER_SECONDS`."""
    if any(_waiting(j) >= UNTAKEN_AFTER_SECONDS for j in jobs):
        return why_untaken()
    return ""


def _job_context(job: ProofJob) -> dict[str, Any]:
    report = job.report or {}
    waiting = _waiting(job)
    return {
        "job": job,
        "waiting": waiting if waiting >= UNTAKEN_AFTER_SECONDS else 0,
        "why_untaken": why_untaken() if waiting >= UNTAKEN_AFTER_SECONDS else "",
        "findings": finding_views(job) if job.report else [],
        "gate": report.get("gate"),
        "proof": report.get("proof"),
        "lints": report.get("lints") or [],
        "nothing_to_read": report.get("nothing_to_read") or [],
        "formats": FORMATS,
    }


@require_GET
def proof_page(request: HttpRequest, job_id) -> HttpResponse:  # noqa: ANN001
    actor = actor_for_request(request)
    require(actor, "proofs.read")
    job = selectors.job_get(actor=actor, job_id=job_id)
    context = _job_context(job)
    if request.htmx and request.htmx.target == "job-status":
        return render(request, "proof/detail.html#job-status", context)
    return render(request, "proof/detail.html", context)


@require_GET
def rules_page(request: HttpRequest) -> HttpResponse:
    from proof.engine import REGISTRY

    require(actor_for_request(request), "proofs.read")
    return render(request, "proof/rules.html", {"rules": REGISTRY})


@require_GET
def rule_page(request: HttpRequest, rule_id: str) -> HttpResponse:
    from proof.engine import BY_ID, rule_page_fields

    require(actor_for_request(request), "proofs.read")
    info = BY_ID.get(rule_id)
    if info is None:
        raise Http404("no such rule")
    return render(request, "proof/rule.html", {"rule": info, "fields": rule_page_fields(info)})


@require_GET
def report_download(request: HttpRequest, job_id, fmt: str) -> HttpResponse:  # noqa: ANN001
    actor = actor_for_request(request)
    require(actor, "proofs.read")
    if fmt not in FORMATS:
        raise Http404("no such report format")
    job = selectors.job_get(actor=actor, job_id=job_id)
    if job.report is None or job.status not in (ProofJob.Status.PASSED, ProofJob.Status.FAILED):
        return HttpResponse(
            f"the job is {job.status}: it has no report\n",
            status=409,
            content_type="text/plain; charset=utf-8",
        )
    content, content_type = services.report_body(job, fmt)
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="proof-{job.public_id}.{fmt}"'
    return response
