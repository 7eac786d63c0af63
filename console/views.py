"""Pages of the console's own app. Each view: resolve the actor, check the role, call one service, render."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console import bundles, selectors, services
from console.access import (
    ORG_SESSION_KEY,
    actor_for_request,
    get_object_for_actor,
    memberships_of,
    require,
)
from console.charts import stacked_bars
from console.controls import holds_in_force, switches_in_force
from console.forms import ApiKeyForm, InviteForm, RoleForm, SettingsForm
from console.health import health_report, worker_status
from console.models import (
    ApiKey,
    Decision,
    Event,
    Invitation,
    Membership,
    SessionHold,
    ToolSwitch,
)
from console.plain import plain_decision
from console.redaction import redact_string

PAGE_SIZE = 25


def _add_errors(form, exc: ValidationError) -> None:  # noqa: ANN001
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 403 (`handler403`), said in words: a page of the console's own; for an htmx
    submit, the reason above the page while the form stays as it was (a role changed since the
    page was opened); JSON under `/v1/`, as the API's own refusals are."""
    from console.errors_i18n import say

    reason = str(exception or "") or "your role cannot do this"
    if request.path_info.startswith("/v1/"):
        return JsonResponse({"detail": reason}, status=403)
    context = {"reason": say(reason)}
    if getattr(request, "htmx", False):
        response = render(request, "403.html#refused", {**context, "oob": True}, status=403)
        response["HX-Reswap"] = "none"  # only the out-of-band reason is swapped in
        return response
    return render(request, "403.html", context, status=403)


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    if not memberships_of(request.user):
        # A person in no organisation yet has only their invitations to see.
        return redirect("invitations")
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
    holds = holds_in_force(organisation=actor.organisation)
    switches = switches_in_force(organisation=actor.organisation)
    return render(
        request,
        "console/dashboard.html",
        {
            "actor": actor,
            "counts": counts,
            "settings": settings_obj,
            "licence_lapsed": settings_obj.licence_lapsed(),
            "panels": selectors.dashboard_panels(actor=actor),
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
    admin = actor.can("licence.write")
    saved = False
    if request.method == "POST":
        require(actor, "settings.write")
        form = SettingsForm(
            request.POST,
            instance=services.settings_get(organisation=actor.organisation),
            admin=admin,
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
                form = SettingsForm(instance=obj, admin=admin)
        if not saved:
            obj.refresh_from_db()
    else:
        form = SettingsForm(instance=obj, admin=admin)
    context = {
        "form": form,
        "saved": saved,
        "actor": actor,
        "settings": obj,
        "admin_fields": _admin_fields(obj, admin),
        "bundle_keys": bundles.keys_listed(actor.organisation.pk),
    }
    status = 400 if request.method == "POST" and not saved else 200
    if request.htmx:
        return render(request, "console/settings.html#settings-form", context, status=status)
    return render(request, "console/settings.html", context, status=status)


@require_POST
def bundle_key_rotate(request: HttpRequest) -> HttpResponse:
    """A new bundle key for the organisation (admins only; the button asks to confirm first)."""
    actor = actor_for_request(request)
    require(actor, "bundle_keys.rotate")
    rotated = bundles.bundle_key_rotate(actor=actor)
    messages.success(
        request,
        f"the bundle key was rotated to generation {rotated.generation} (kid {rotated.kid}): "
        "give every runtime the new public key",
    )
    return redirect("settings")


def _admin_fields(obj, admin: bool) -> list[dict[str, str]]:  # noqa: ANN001
    """The admin's settings as read-only values, for the roles that see them but may not change them."""
    if admin:
        return []
    labels = SettingsForm.Meta.labels
    return [
        # The webhook's address may carry its token: other roles see it through the credential table.
        {"name": name, "label": labels[name], "value": redact_string(str(getattr(obj, name) or ""))}
        for name in SettingsForm.Meta.fields
        if name in services.ADMIN_FIELDS
    ]


@require_POST
def settings_validate(request: HttpRequest) -> HttpResponse:
    """Inline validation: the form as it would be saved, with its errors; nothing is written."""
    actor = actor_for_request(request)
    require(actor, "settings.write")
    obj = services.settings_get(organisation=actor.organisation)
    form = SettingsForm(request.POST, instance=obj, admin=actor.can("licence.write"))
    form.is_valid()
    # Only the error slots (and the status line, which a new error clears) are sent out of band, so
    # inputs the person is editing are never replaced.
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
        # New rows redraw the chart too (out of band), so it counts what the feed shows: every
        # row of the filters, not only the rows newer than `after` that the poll brings.
        chart = (
            stacked_bars(
                selectors.decisions_per_hour(
                    organisation=actor.organisation,
                    filters=dataclasses.replace(filters, after=None),
                )
            )
            if fresh
            else None
        )
        return render(
            request,
            "console/events.html#event-new",
            {"events": fresh, "newest": newest, "poll_query": poll_query, "chart": chart},
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
    "run_id",
    "thread_id",
)


#: What a spreadsheet reads as the start of a formula (OWASP's list): a cell that begins with one
#: is written with a leading `'`, so the spreadsheet shows the text instead of running it.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def spreadsheet_cell(value: object) -> object:
    """A CSV cell a spreadsheet shows as text: one that would start a formula gets a `'` first."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _export_rows(actor, filters):  # noqa: ANN001, ANN202
    events = selectors.event_list(organisation=actor.organisation, filters=filters)
    for event in events[:EXPORT_LIMIT].iterator(chunk_size=500):
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
            "run_id": event.run_id,
            "thread_id": event.thread_id,
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
    # Streamed a row at a time: up to EXPORT_LIMIT events with their details, built whole, were
    # held in the web worker's memory at once (with the copies joining made).
    if fmt == "json":
        response = StreamingHttpResponse(
            _json_export(actor, filters), content_type="application/json"
        )
    else:
        response = StreamingHttpResponse(
            _csv_export(actor, filters), content_type="text/csv; charset=utf-8"
        )
    response["Content-Disposition"] = f'attachment; filename="events-{stamp}.{fmt}"'
    return response


def _json_export(actor, filters):  # noqa: ANN001, ANN202
    yield "[\n"
    for i, row in enumerate(_export_rows(actor, filters)):
        yield (",\n" if i else "") + json.dumps(row, sort_keys=True)
    yield "\n]\n"


class _Line:
    """What `csv.writer` writes to: each row comes back as its line, to be sent at once."""

    def write(self, line: str) -> str:
        return line


def _csv_export(actor, filters):  # noqa: ANN001, ANN202
    writer = csv.DictWriter(_Line(), fieldnames=EXPORT_FIELDS)
    yield writer.writeheader()
    for row in _export_rows(actor, filters):
        row["reasons"] = "; ".join(row["reasons"])
        row["detail"] = json.dumps(row["detail"], sort_keys=True)
        yield writer.writerow({name: spreadsheet_cell(value) for name, value in row.items()})


@require_GET
def event_detail(request: HttpRequest, event_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "events.read")
    event = get_object_for_actor(Event, actor, pk=event_id)
    chain = _chain_steps(actor, event) if event.is_alert else []
    detail = event.detail if isinstance(event.detail, dict) else {}
    return render(
        request,
        "console/event_detail.html",
        {
            "event": event,
            "chain": chain,
            "plain": plain_decision(event),
            "detail_without_chain": {k: v for k, v in detail.items() if k != "chain"},
            "holds": SessionHold.objects.filter(alert=event),
            "switches": ToolSwitch.objects.filter(alert=event),
            "notifications": event.notifications.all(),
        },
    )


#: At most this many links to a chain step's events are shown; the rest are counted.
CHAIN_LINKS = 5


def _chain_steps(actor, event: Event) -> list[dict]:  # noqa: ANN001
    """An alert's chain as a compact timeline: per step its tool, count, first and last time."""
    steps = event.detail.get("chain", []) if isinstance(event.detail, dict) else []
    ids = [item.get("id") for step in steps for item in step if isinstance(item, dict)]
    found = {e.pk: e for e in Event.objects.filter(organisation=actor.organisation, pk__in=ids)}
    out = []
    for step in steps:
        items = [item for item in step if isinstance(item, dict)]
        events = [found[i["id"]] for i in items if i.get("id") in found]
        times = sorted(e.at for e in events)
        tools = sorted({e.tool for e in events} or {i.get("tool", "") for i in items})
        out.append(
            {
                "tool": ", ".join(t for t in tools if t) or "—",
                "count": len(items),
                "first": times[0].strftime("%H:%M:%S") if times else "",
                "last": times[-1].strftime("%H:%M:%S") if times else "",
                "links": [
                    {"id": i["id"], "event": found.get(i["id"])} for i in items[:CHAIN_LINKS]
                ],
                "more": max(0, len(items) - CHAIN_LINKS),
            }
        )
    return out


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
    return _members(request, actor, InviteForm())


def _members(request, actor, form, *, invited=None, status=200):  # noqa: ANN001, ANN202
    memberships = (
        Membership.objects.filter(organisation=actor.organisation)
        .select_related("user")
        .order_by("user__username")
    )
    invitations = []
    if actor.can("members.manage"):
        invitations = Invitation.objects.filter(
            organisation=actor.organisation,
            status=Invitation.Status.PENDING,
            expires_at__gt=timezone.now(),
        ).order_by("-created_at")
    return render(
        request,
        "console/members.html",
        {
            "memberships": memberships,
            "invitations": invitations,
            "form": form,
            "invited": invited,
            "role_choices": RoleForm.base_fields["role"].choices,
        },
        status=status,
    )


@require_POST
def member_invite(request: HttpRequest) -> HttpResponse:
    """Invite by user name or e-mail; the page answers the same whether or not it names anyone."""
    actor = actor_for_request(request)
    require(actor, "members.manage")
    form = InviteForm(request.POST)
    if form.is_valid():
        try:
            invitation = services.invitation_create(actor=actor, **form.cleaned_data)
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            return _members(request, actor, InviteForm(), invited=invitation)
    return _members(request, actor, form, status=400)


@require_POST
def invitation_cancel(request: HttpRequest, invitation_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "members.manage")
    invitation = get_object_for_actor(Invitation, actor, pk=invitation_id)
    services.invitation_cancel(actor=actor, invitation=invitation)
    return redirect("members")


@require_GET
def invitations_page(request: HttpRequest) -> HttpResponse:
    """The signed-in person's own invitations; they need no organisation to see them."""
    return render(
        request,
        "console/invitations.html",
        {"invitations": services.invitations_for(user=request.user)},
    )


@require_POST
def invitation_answer(request: HttpRequest, invitation_id: str, answer: str) -> HttpResponse:
    """The invited person's own answer; someone else's invitation does not exist (404)."""
    invitation_id = int(invitation_id)
    if answer == "accept":
        membership = services.invitation_accept(user=request.user, invitation_id=invitation_id)
        request.session[ORG_SESSION_KEY] = str(membership.organisation_id)
        messages.success(request, f"you joined {membership.organisation.name}")
        return redirect("dashboard")
    services.invitation_decline(user=request.user, invitation_id=invitation_id)
    messages.success(request, "the invitation was declined")
    return redirect("invitations")


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


def _key_form(actor, data=None) -> ApiKeyForm:  # noqa: ANN001
    people = [
        (m.user_id, f"{m.user.get_username()} ({m.role})")
        for m in Membership.objects.filter(organisation=actor.organisation)
        .select_related("user")
        .order_by("user__username")
    ]
    return ApiKeyForm(data, people=people, owner=actor.person_id)


def _api_keys(request, actor, form, *, created=None, status=200):  # noqa: ANN001, ANN202
    keys = (
        ApiKey.objects.filter(organisation=actor.organisation)
        .select_related("owner")
        .order_by("-created_at")
    )
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
    return _api_keys(request, actor, _key_form(actor))


@require_POST
def api_key_create(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "api_keys.manage")
    form = _key_form(actor, request.POST)
    if form.is_valid():
        data = dict(form.cleaned_data)
        try:
            key, plain = services.api_key_create(
                actor=actor,
                name=data["name"],
                role=data["role"],
                owner_id=data["owner"],
                may_approve=data["may_approve"],
            )
        except ValidationError as exc:
            _add_errors(form, exc)
        else:
            return _api_keys(request, actor, _key_form(actor), created={"key": key, "plain": plain})
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
