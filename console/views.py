"""Pages of the console's own app. Each view: resolve the actor, check the role, call one service, render."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console import selectors, services
from console.access import (
    ORG_SESSION_KEY,
    actor_for_request,
    get_object_for_actor,
    memberships_of,
    require,
)
from console.charts import stacked_bars
from console.forms import ApiKeyForm, PersonForm, RoleForm, SettingsForm
from console.health import health_report, worker_status
from console.models import ApiKey, Decision, Event, Membership, SessionHold, ToolSwitch

PAGE_SIZE = 25


def _add_errors(form, exc: ValidationError) -> None:  # noqa: ANN001
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    since = timezone.now() - dt.timedelta(hours=24)
    counts = {d: 0 for d in Decision.values}
    if actor.can("events.read"):
        rows = (
            Event.objects.filter(organisation=actor.organisation, at__gte=since)
            .values("decision")
            .annotate(n=Count("id"))
        )
        counts.update({row["decision"]: row["n"] for row in rows})
    settings_obj = services.settings_get(organisation=actor.organisation)
    holds = SessionHold.objects.filter(organisation=actor.organisation, released_at=None)
    switches = ToolSwitch.objects.filter(organisation=actor.organisation, enabled_at=None)
    return render(
        request,
        "console/dashboard.html",
        {
            "actor": actor,
            "counts": counts,
            "settings": settings_obj,
            "licence_lapsed": settings_obj.licence_lapsed(),
            "holds": holds.order_by("-created_at")[:50],
            "switches": switches.order_by("-created_at")[:50],
            "workers": worker_status(organisation=actor.organisation),
        },
    )


@require_POST
def organisation_switch(request: HttpRequest) -> HttpResponse:
    wanted = request.POST.get("organisation", "")
    if not any(str(m.organisation_id) == wanted for m in memberships_of(request.user)):
        raise Http404("no such organisation")
    request.session[ORG_SESSION_KEY] = wanted
    return redirect("dashboard")


@require_http_methods(["GET", "POST"])
def settings_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "settings.read")
    obj = services.settings_get(organisation=actor.organisation)
    saved = False
    if request.method == "POST":
        require(actor, "settings.write")
        form = SettingsForm(
            request.POST, instance=services.settings_get(organisation=actor.organisation)
        )
        if form.is_valid():
            try:
                obj = services.settings_update(
                    actor=actor,
                    data={name: form.cleaned_data[name] for name in form.changed_data},
                )
            except ValidationError as exc:
                _add_errors(form, exc)
            except PermissionDenied as exc:
                form.add_error(None, str(exc))
            else:
                saved = True
                form = SettingsForm(instance=obj)
        if not saved:
            obj.refresh_from_db()
    else:
        form = SettingsForm(instance=obj)
    context = {"form": form, "saved": saved, "actor": actor, "settings": obj}
    status = 400 if request.method == "POST" and not saved else 200
    if request.htmx:
        return render(request, "console/settings.html#settings-form", context, status=status)
    return render(request, "console/settings.html", context, status=status)


@require_POST
def settings_validate(request: HttpRequest) -> HttpResponse:
    """Inline validation: the form as it would be saved, with its errors; nothing is written."""
    actor = actor_for_request(request)
    require(actor, "settings.write")
    obj = services.settings_get(organisation=actor.organisation)
    form = SettingsForm(request.POST, instance=obj)
    form.is_valid()
    admin_only = sorted(set(form.changed_data) & services.ADMIN_FIELDS)
    if admin_only and not actor.can("licence.write"):
        form.add_error(
            None,
            "only an admin can change the licence and the alert webhook: " + ", ".join(admin_only),
        )
    # Only the error slots are sent (out of band), so inputs the person is editing are never replaced.
    return render(request, "console/settings.html#validation", {"form": form, "validated": True})


def _page(request: HttpRequest, qs):  # noqa: ANN001, ANN202
    return Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))


def _query_without_page(request: HttpRequest) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


@require_GET
def audit_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "audit.read")
    error = None
    try:
        filters = selectors.AuditFilters.from_params(request.GET)
    except selectors.FilterError as exc:
        error, filters = str(exc), selectors.AuditFilters()
    page = _page(request, selectors.audit_list(organisation=actor.organisation, filters=filters))
    context = {
        "page": page,
        "error": error,
        "params": request.GET,
        "query": _query_without_page(request),
    }
    if request.htmx and request.htmx.target == "audit-rows":
        return render(request, "console/audit.html#audit-rows", context)
    return render(request, "console/audit.html", context)


def _event_filters(request: HttpRequest):  # noqa: ANN202
    try:
        return selectors.EventFilters.from_params(request.GET), None
    except selectors.FilterError as exc:
        return selectors.EventFilters(), str(exc)


def _query_without(request: HttpRequest, *names: str) -> str:
    params = request.GET.copy()
    for name in names:
        params.pop(name, None)
    return params.urlencode()


@require_GET
def events_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "events.read")
    filters, error = _event_filters(request)
    events = selectors.event_list(organisation=actor.organisation, filters=filters)
    poll_query = _query_without(request, "after", "page")
    if request.htmx and request.htmx.target == "event-tbody":
        # The live poll: rows newer than the newest shown, and a poller that remembers them.
        fresh = list(events.order_by("-id")[:200])
        newest = fresh[0].pk if fresh else (filters.after or 0)
        return render(
            request,
            "console/events.html#event-new",
            {"events": fresh, "newest": newest, "poll_query": poll_query},
        )
    page = _page(request, events)
    newest = events.order_by("-id").values_list("id", flat=True).first() or filters.after or 0
    context = {
        "page": page,
        "error": error,
        "params": request.GET,
        "decisions": Decision.values,
        "query": _query_without_page(request),
        "newest": newest,
        "poll_query": poll_query,
        "live": page.number == 1,
        "chart": stacked_bars(
            selectors.decisions_per_hour(organisation=actor.organisation, filters=filters)
        ),
    }
    if request.htmx and request.htmx.target == "event-rows":
        return render(request, "console/events.html#event-rows", context)
    return render(request, "console/events.html", context)


EXPORT_LIMIT = 100_000
EXPORT_FIELDS = (
    "id",
    "at",
    "source",
    "organisation",
    "session",
    "agent",
    "tool",
    "stage",
    "decision",
    "verdict",
    "reasons",
    "rule",
    "is_alert",
    "detail",
)


def _export_rows(actor, filters):  # noqa: ANN001, ANN202
    events = selectors.event_list(organisation=actor.organisation, filters=filters)
    for event in events[:EXPORT_LIMIT].iterator():
        yield {
            "id": event.pk,
            "at": event.at.isoformat(),
            "source": event.source,
            "organisation": actor.organisation.slug,
            "session": event.session,
            "agent": event.agent,
            "tool": event.tool,
            "stage": event.stage,
            "decision": event.decision,
            "verdict": event.verdict,
            "reasons": event.reasons,
            "rule": event.rule,
            "is_alert": event.is_alert,
            "detail": event.detail,
        }


@require_GET
def events_export(request: HttpRequest, fmt: str) -> HttpResponse:
    """The filtered feed as CSV or JSON (redacted as stored), newest first."""
    actor = actor_for_request(request)
    require(actor, "events.read")
    filters, error = _event_filters(request)
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    if fmt == "json":
        rows = [json.dumps(row, sort_keys=True) for row in _export_rows(actor, filters)]
        response = HttpResponse("[\n" + ",\n".join(rows) + "\n]\n", content_type="application/json")
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=EXPORT_FIELDS)
        writer.writeheader()
        for row in _export_rows(actor, filters):
            row["reasons"] = "; ".join(row["reasons"])
            row["detail"] = json.dumps(row["detail"], sort_keys=True)
            writer.writerow(row)
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="events-{stamp}.{fmt}"'
    return response


@require_GET
def event_detail(request: HttpRequest, event_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "events.read")
    event = get_object_for_actor(Event, actor, pk=event_id)
    chain = []
    if event.is_alert:
        ids = [item["id"] for step in event.detail.get("chain", []) for item in step]
        found = {e.pk: e for e in Event.objects.filter(organisation=actor.organisation, pk__in=ids)}
        chain = [
            [{"id": item["id"], "event": found.get(item["id"])} for item in step]
            for step in event.detail.get("chain", [])
        ]
    return render(
        request,
        "console/event_detail.html",
        {
            "event": event,
            "chain": chain,
            "holds": SessionHold.objects.filter(alert=event),
            "switches": ToolSwitch.objects.filter(alert=event),
            "notifications": event.notifications.all(),
        },
    )


def _back(request: HttpRequest) -> HttpResponse:
    """Back to the page that asked, when it is one of ours; else the dashboard."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect(target)
    return redirect("dashboard")


@require_POST
def hold_release(request: HttpRequest, hold_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "controls.write")
    services.hold_release(actor=actor, hold=get_object_for_actor(SessionHold, actor, pk=hold_id))
    return _back(request)


@require_POST
def tool_enable(request: HttpRequest, switch_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "controls.write")
    services.tool_enable(actor=actor, switch=get_object_for_actor(ToolSwitch, actor, pk=switch_id))
    return _back(request)


@require_GET
def members_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "members.read")
    return _members(request, actor, PersonForm())


def _members(request, actor, form, *, created=None, status=200):  # noqa: ANN001, ANN202
    memberships = (
        Membership.objects.filter(organisation=actor.organisation)
        .select_related("user")
        .order_by("user__username")
    )
    return render(
        request,
        "console/members.html",
        {
            "memberships": memberships,
            "form": form,
            "created": created,
            "role_choices": RoleForm.base_fields["role"].choices,
        },
        status=status,
    )


@require_POST
def member_add(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "members.manage")
    form = PersonForm(request.POST)
    if form.is_valid():
        try:
            user, password = services.person_add(actor=actor, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            created = {"username": user.get_username(), "password": password}
            return _members(request, actor, PersonForm(), created=created)
    return _members(request, actor, form, status=400)


@require_POST
def member_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "members.manage")
    membership = get_object_for_actor(Membership, actor, pk=membership_id)
    form = RoleForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError({"role": "choose a role"})
        services.membership_set_role(
            actor=actor, membership=membership, role=form.cleaned_data["role"]
        )
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect("members")


@require_POST
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "members.manage")
    membership = get_object_for_actor(Membership, actor, pk=membership_id)
    try:
        services.membership_remove(actor=actor, membership=membership)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect("members")


def _api_keys(request, actor, form, *, created=None, status=200):  # noqa: ANN001, ANN202
    keys = ApiKey.objects.filter(organisation=actor.organisation).order_by("-created_at")
    return render(
        request,
        "console/api_keys.html",
        {"keys": keys, "form": form, "created": created},
        status=status,
    )


@require_GET
def api_keys_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "api_keys.manage")
    return _api_keys(request, actor, ApiKeyForm())


@require_POST
def api_key_create(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "api_keys.manage")
    form = ApiKeyForm(request.POST)
    if form.is_valid():
        try:
            key, plain = services.api_key_create(actor=actor, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            return _api_keys(request, actor, ApiKeyForm(), created={"key": key, "plain": plain})
    return _api_keys(request, actor, form, status=400)


@require_POST
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "api_keys.manage")
    key = get_object_for_actor(ApiKey, actor, pk=key_id)
    services.api_key_revoke(actor=actor, key=key)
    return redirect("api-keys")


@require_GET
def health_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "health.read")
    if request.htmx:
        report = health_report()
        # htmx swaps only 2xx answers; the fragment itself says what does not answer.
        return render(
            request,
            "console/health.html#health-report",
            {"report": report, "workers": worker_status(organisation=actor.organisation)},
        )
    return render(request, "console/health.html", {})
