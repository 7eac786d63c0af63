"""The approvals page: a live queue of confirm prompts, each answered with one click and a check."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from console.access import actor_for_request, get_object_for_actor, require
from console.models import OrganisationSettings
from guard import approvals
from guard.models import ApprovalRequest

ORIGINS = {
    "typed": "typed by the person",
    "tool": "returned by a tool",
    "outside": "copied from outside content",
    "model": "written by the model",
}


def _source(item: object) -> str:
    """Where the runtime found a value, in words: `turn 0` is the person's first turn."""
    if not isinstance(item, dict):
        return ""
    if item.get("free_text"):
        return "free text the model writes (marked `free_text`: not asked about)"
    where = str(item.get("from") or "")
    if where.startswith("turn "):
        number = where.removeprefix("turn ")
        return f"said in turn {int(number) + 1}" if number.isdigit() else ""
    if where.startswith("history "):
        return f"in the result of step {where.removeprefix('history ')}"
    if where == "claim":
        return "as the agent's program said"
    return ""


def _card(request: ApprovalRequest, language: str) -> dict:
    arguments = approvals.shown_arguments(request)
    found = (request.detail or {}).get("origins") or {}
    return {
        "request": request,
        "arguments": [
            {
                "name": name,
                "value": value,
                "origin": request.origins.get(name, ""),
                "origin_text": ORIGINS.get(request.origins.get(name, ""), "origin not given"),
                "source": _source(found.get(name)),
            }
            for name, value in sorted(arguments.items())
        ],
        "history": approvals.shown_history(request),
        "question": approvals.shown_question(request, language),
        "language": language,
        "summary": ", ".join(
            f"{k} = {json.dumps(v, ensure_ascii=False, default=str)}"
            for k, v in sorted(arguments.items())
        ),
    }


#: Cards drawn at once, oldest first: a runtime in a loop can file requests faster than people
#: answer them, and the page is polled every 3 s; the rest are counted.
QUEUE_SHOWN = 50


def _context(actor) -> dict:  # noqa: ANN001
    waiting = approvals.open_requests(organisation=actor.organisation)
    queue = list(waiting[:QUEUE_SHOWN])
    more = waiting.count() - QUEUE_SHOWN if len(queue) == QUEUE_SHOWN else 0
    answered = (
        ApprovalRequest.objects.filter(organisation=actor.organisation)
        .exclude(status="pending")
        .order_by("-answered_at", "-created_at")[:20]
    )
    language = (
        OrganisationSettings.objects.filter(organisation=actor.organisation)
        .values_list("language", flat=True)
        .first()
    ) or "en"
    cards = []
    for r in queue:
        chosen = (r.session.settings or {}).get("language") if r.session_id else None
        card = _card(r, chosen if chosen in ("en", "pt-BR") else language)
        cards.append({**card, "own": approvals.asked_by(actor, r)})
    return {
        "cards": cards,
        "more": more,
        "answered": answered,
        "can_answer": actor.can("approvals.answer"),
    }


@require_GET
def approvals_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "approvals.read")
    if request.htmx:
        return render(request, "guard/approvals.html#queue", _context(actor))
    return render(request, "guard/approvals.html", _context(actor))


def _answer(request: HttpRequest, approval_id, action) -> HttpResponse:  # noqa: ANN001
    actor = actor_for_request(request)
    require(actor, "approvals.answer")
    item = get_object_for_actor(ApprovalRequest, actor, public_id=approval_id)
    try:
        action(actor=actor, request=item)
    except approvals.AlreadyAnswered as exc:
        messages.warning(request, "; ".join(exc.messages))
    except PermissionDenied as exc:
        messages.error(request, str(exc))
        return render(request, "guard/approvals.html", _context(actor), status=403)
    else:
        verb = "approved" if action is approvals.approval_grant else "denied"
        messages.success(request, f"{item.tool} {verb}")
    return redirect("approvals")


@require_POST
def approve(request: HttpRequest, approval_id) -> HttpResponse:  # noqa: ANN001
    return _answer(request, approval_id, approvals.approval_grant)


@require_POST
def deny(request: HttpRequest, approval_id) -> HttpResponse:  # noqa: ANN001
    return _answer(request, approval_id, approvals.approval_deny)
