"""MCP gateways as they report themselves: their servers, pinned tools, withdrawn tools, events.

A gateway connected to the console (`STALWART_URL` and an API key) reports at start, on every
change and every minute with nothing new (`POST /v1/gateways/<name>/report`), and once more as it
stops (`state: stopped`): each server's state and tools, and the events of the change -- a tool,
prompt, resource or resource template withdrawn because it changed since the approval (with the
diff) or was added since, a call the gateway's own firewall file decided. The report is validated and bounded here (`read_report`);
every problem is named by its field path. The tool check's decisions need no report: the
gateway's session is the console's, and the sessions API records them as it does for every door.

A gateway is known by its name (its `agent:`) and its instance (`instance`, the id it keeps beside
its pins file, with `host`, the machine it runs on): two gateways of one name are two rows, each
reported, shown and forgotten on its own.

Every role may read the Gateways page and `GET /v1/gateways`; only an admin may forget a gateway
instance.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console import services
from console.access import actor_for_request, get_object_for_actor, require
from console.models import Gateway

NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
TOOL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,199}$")
REASON = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_REASONS = 10
INSTANCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
MAX_HOST = 255
MAX_SERVERS = 64  # as many as gateway.yaml may name
MAX_TOOLS = 500
MAX_EVENTS = 100
MAX_DIFF_LINES = 200
MAX_LINE = 500
MAX_TEXT = 500
STATES = ("connected", "down")
STATUSES = ("pinned", "withdrawn")
WHY = ("changed", "not_approved", "schema_unusable", "approve_again")
#: What a gateway withdraws (its events' kinds): a tool, or a prompt, resource or resource
#: template its server changed or added since the approval.
WITHDRAWN = {
    "tool_withdrawn": "tool",
    "prompt_withdrawn": "prompt",
    "resource_withdrawn": "resource",
    "resource_template_withdrawn": "resource_template",
}
#: Where the gateway found it withdrawn: at its start, or on the client's request.
FOUND_AT = (
    "start",
    "tools/list",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
)
KINDS = ("read", "write", "unknown")
FIREWALL_DECISIONS = ("allow", "confirm", "refuse")
#: What a report says of the gateway itself: it runs, or this is its last report as it stops.
RUN_STATES = ("running", "stopped")
#: A running gateway reports at least every minute (`stalwart_agents.gateway.core.HEARTBEAT`);
#: one silent for three of those is shown as not reporting (gone without saying so, or cut off).
SILENT_AFTER = timedelta(seconds=180)


class ReportInvalid(Exception):
    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in errors.items()))
        self.errors = errors


def _text(value: Any, path: str, errors: dict, *, limit: int = MAX_TEXT) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors[path] = ["must be text"]
        return ""
    if len(value) > limit:
        errors[path] = [f"at most {limit} characters"]
        return ""
    return value


def _diff(value: Any, path: str, errors: dict) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_DIFF_LINES:
        errors[path] = [f"must be a list of at most {MAX_DIFF_LINES} lines"]
        return []
    lines = []
    for index, line in enumerate(value):
        lines.append(_text(line, f"{path}[{index}]", errors, limit=MAX_LINE))
    return lines


def _only(data: dict, allowed: set[str], path: str, errors: dict) -> None:
    for key in sorted(set(data) - allowed):
        errors[f"{path}.{key}" if path else key] = ["unknown field"]


def _tool(data: Any, path: str, errors: dict) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        errors[path] = ["must be an object"]
        return None
    _only(data, {"name", "digest", "kind", "status", "why", "diff"}, path, errors)
    name = data.get("name")
    if not isinstance(name, str) or not TOOL.match(name):
        errors[f"{path}.name"] = ["a tool's name (letters, digits, _ . : / -, at most 200)"]
    digest = data.get("digest")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        errors[f"{path}.digest"] = ["the SHA-256 of the tool's definition, in hex"]
    kind = data.get("kind", "unknown")
    if kind not in KINDS:
        errors[f"{path}.kind"] = [f"one of {', '.join(KINDS)}"]
    status = data.get("status")
    if status not in STATUSES:
        errors[f"{path}.status"] = [f"one of {', '.join(STATUSES)}"]
    why = data.get("why") or ""
    if status == "withdrawn" and why not in WHY:
        errors[f"{path}.why"] = [f"one of {', '.join(WHY)}"]
    return {
        "name": name,
        "digest": digest,
        "kind": kind,
        "status": status,
        "why": why if status == "withdrawn" else "",
        "diff": _diff(data.get("diff"), f"{path}.diff", errors),
    }


def _server(data: Any, path: str, errors: dict) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        errors[path] = ["must be an object"]
        return None
    _only(data, {"state", "error", "tools"}, path, errors)
    state = data.get("state")
    if state not in STATES:
        errors[f"{path}.state"] = [f"one of {', '.join(STATES)}"]
    tools = data.get("tools", [])
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        errors[f"{path}.tools"] = [f"must be a list of at most {MAX_TOOLS} tools"]
        tools = []
    read = [_tool(tool, f"{path}.tools[{i}]", errors) for i, tool in enumerate(tools)]
    return {
        "state": state,
        "error": _text(data.get("error"), f"{path}.error", errors),
        "tools": [tool for tool in read if tool is not None],
    }


def _event(data: Any, path: str, errors: dict) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        errors[path] = ["must be an object"]
        return None
    kind = data.get("kind")
    if kind in WITHDRAWN:
        _only(data, {"kind", "server", "tool", "why", "diff", "at"}, path, errors)
        if data.get("why") not in WHY:
            errors[f"{path}.why"] = [f"one of {', '.join(WHY)}"]
        if data.get("at", "start") not in FOUND_AT:
            errors[f"{path}.at"] = [f"one of {', '.join(FOUND_AT)}"]
        event = {"diff": _diff(data.get("diff"), f"{path}.diff", errors), "why": data.get("why")}
        event["at"] = data.get("at", "start")
    elif kind == "firewall":
        _only(
            data, {"kind", "server", "tool", "decision", "verdict", "rule", "session"}, path, errors
        )
        if data.get("decision") not in FIREWALL_DECISIONS:
            errors[f"{path}.decision"] = [f"one of {', '.join(FIREWALL_DECISIONS)}"]
        event = {
            "decision": data.get("decision"),
            "verdict": _text(data.get("verdict"), f"{path}.verdict", errors, limit=32),
            "rule": _text(data.get("rule"), f"{path}.rule", errors, limit=200),
            "session": _text(data.get("session"), f"{path}.session", errors, limit=128),
        }
    elif kind == "call_refused":
        _only(data, {"kind", "server", "tool", "reasons", "why", "session"}, path, errors)
        reasons = data.get("reasons")
        if (
            not isinstance(reasons, list)
            or not 0 < len(reasons) <= MAX_REASONS
            or not all(isinstance(r, str) and REASON.match(r) for r in reasons)
        ):
            errors[f"{path}.reasons"] = [f"a list of at most {MAX_REASONS} reason codes"]
            reasons = []
        event = {
            "reasons": reasons,
            "why": _text(data.get("why"), f"{path}.why", errors),
            "session": _text(data.get("session"), f"{path}.session", errors, limit=128),
        }
    else:
        errors[f"{path}.kind"] = [f"{', '.join(WITHDRAWN)}, firewall or call_refused"]
        return None
    tool = data.get("tool")
    if not isinstance(tool, str) or not TOOL.match(tool):
        errors[f"{path}.tool"] = ["a tool's name (letters, digits, _ . : / -, at most 200)"]
    server = data.get("server")
    if not isinstance(server, str) or not NAME.match(server):
        errors[f"{path}.server"] = ["a server's name"]
    return {"kind": kind, "tool": tool, "server": server, **event}


def _instance(data: dict, errors: dict) -> tuple[str, str]:
    """The report's instance id and host (both `""` from a gateway before instances)."""
    instance = data.get("instance", "")
    if instance != "" and (not isinstance(instance, str) or not INSTANCE.match(instance)):
        errors["instance"] = ["an instance id (letters, digits, _ . : -, at most 64)"]
        instance = ""
    host = data.get("host", "")
    if not isinstance(host, str) or len(host) > MAX_HOST or not host.isprintable():
        errors["host"] = [f"a host name: printable text of at most {MAX_HOST} characters"]
        host = ""
    return instance, host.strip()


def read_report(
    data: Any,
) -> tuple[dict[str, Any], list[dict[str, Any]], tuple[str, str], str]:
    """The servers, events, (instance, host) and run state (`running`, `stopped`) of a report,
    or `ReportInvalid` naming every problem's path."""
    errors: dict[str, list[str]] = {}
    if not isinstance(data, dict):
        raise ReportInvalid({"non_field_errors": ["the body must be a JSON object"]})
    _only(data, {"servers", "events", "instance", "host", "state"}, "", errors)
    identity = _instance(data, errors)
    state = data.get("state", "running")
    if state not in RUN_STATES:
        errors["state"] = [" or ".join(RUN_STATES)]
        state = "running"
    servers = data.get("servers")
    if not isinstance(servers, dict) or len(servers) > MAX_SERVERS:
        errors["servers"] = [f"must map at most {MAX_SERVERS} server names to their state"]
        servers = {}
    read: dict[str, Any] = {}
    for name, server in servers.items():
        if not NAME.match(str(name)):
            errors[f"servers.{str(name)[:100]}"] = ["a server's name (letters, digits, _ . -)"]
            continue
        held = _server(server, f"servers.{name}", errors)
        if held is not None:
            read[name] = held
    events = data.get("events", [])
    if not isinstance(events, list) or len(events) > MAX_EVENTS:
        errors["events"] = [f"must be a list of at most {MAX_EVENTS} events"]
        events = []
    found = [_event(event, f"events[{i}]", errors) for i, event in enumerate(events)]
    if errors:
        raise ReportInvalid(errors)
    return read, [event for event in found if event is not None], identity, state


@transaction.atomic
def gateway_report(*, actor, name: str, data: Any) -> Gateway:  # noqa: ANN001
    """Record what a gateway instance reports: its servers and tools as they are now, and its
    events (one row per organisation, name and instance)."""
    if not NAME.match(name):
        raise ReportInvalid({"name": ["a gateway's name (letters, digits, _ . -, at most 100)"]})
    servers, events, (instance, host), state = read_report(data)
    now = timezone.now()
    stopped_at = now if state == "stopped" else None
    gateway, created = Gateway.objects.select_for_update().get_or_create(
        organisation=actor.organisation,
        name=name,
        instance=instance,
        defaults={
            "servers": servers,
            "host": host,
            "reported_by": actor.label[:200],
            "reported_at": now,
            "stopped_at": stopped_at,
        },
    )
    if not created:
        gateway.servers = servers
        gateway.host = host
        gateway.reported_by = actor.label[:200]
        gateway.reported_at = now
        gateway.stopped_at = stopped_at
        gateway.save(update_fields=["servers", "host", "reported_by", "reported_at", "stopped_at"])
    for event in events:
        if event["kind"] in WITHDRAWN:
            # A tool's event keeps the stage it always had; a prompt's or a resource's is where
            # the gateway found it (`prompts/list`, `resources/read`, ...).
            what = WITHDRAWN[event["kind"]]
            services.event_record(
                organisation=actor.organisation,
                source="gateway",
                decision="refuse",
                agent=name,
                tool=event["tool"],
                stage="tools/list" if what == "tool" else event["at"],
                verdict="withdrawn",
                reasons=["withdrawn", event["why"]],
                detail={
                    "gateway": name,
                    "instance": instance,
                    "server": event["server"],
                    "what": what,
                    "why": event["why"],
                    "at": event["at"],
                    "diff": event["diff"],
                },
            )
        elif event["kind"] == "call_refused":
            # A call the gateway refused before any check (the person's turns it sent could not
            # be read): no server saw it, and the feed shows it like every refusal.
            services.event_record(
                organisation=actor.organisation,
                source="gateway",
                decision="refuse",
                session=event["session"],
                agent=name,
                tool=event["tool"],
                stage="tool_call",
                verdict=event["reasons"][0][:32],
                reasons=event["reasons"],
                detail={
                    "gateway": name,
                    "instance": instance,
                    "server": event["server"],
                    "why": event["why"],
                },
            )
        else:
            services.event_record(
                organisation=actor.organisation,
                source="gateway",
                decision=event["decision"],
                session=event["session"],
                agent=name,
                tool=event["tool"],
                stage="tool_call",
                verdict=event["verdict"],
                reasons=[f"firewall: {event['rule']}"] if event["rule"] else [],
                rule=event["rule"],
                detail={"gateway": name, "instance": instance, "server": event["server"]},
            )
    return gateway


@transaction.atomic
def gateway_forget(*, actor, gateway: Gateway) -> None:  # noqa: ANN001
    require(actor, "gateways.manage")
    services.audit_record(
        actor=actor,
        action="gateway.delete",
        object_type="gateway",
        object_id=gateway.pk,
        changes={
            "name": {"old": gateway.name, "new": None},
            "instance": {"old": gateway.instance, "new": None},
            "host": {"old": gateway.host, "new": None},
        },
    )
    gateway.delete()


def status(gateway: Gateway, now: Any = None) -> str:
    """`stopped` (it said so as it stopped), `silent` (no report for `SILENT_AFTER`: gone without
    saying so, or cut off from the console), else `running`."""
    if gateway.stopped_at is not None:
        return "stopped"
    if (now or timezone.now()) - gateway.reported_at > SILENT_AFTER:
        return "silent"
    return "running"


def as_dict(gateway: Gateway) -> dict[str, Any]:
    return {
        "id": gateway.pk,
        "name": gateway.name,
        "instance": gateway.instance,
        "host": gateway.host,
        "status": status(gateway),
        "servers": gateway.servers,
        "reported_by": gateway.reported_by,
        "first_reported_at": gateway.first_reported_at.isoformat(),
        "reported_at": gateway.reported_at.isoformat(),
        "stopped_at": gateway.stopped_at.isoformat() if gateway.stopped_at else None,
    }


# -- API ----------------------------------------------------------------------------------------


class GatewayListView(APIView):
    @extend_schema(operation_id="gateways", responses=OpenApiTypes.OBJECT)
    def get(self, request):  # noqa: ANN001, ANN201
        """Every gateway of the organisation with its servers and their tools, as last reported."""
        actor = actor_for_request(request)
        require(actor, "gateways.read")
        found = Gateway.objects.filter(organisation=actor.organisation)
        return Response({"gateways": [as_dict(g) for g in found]})


class GatewayReportView(APIView):
    @extend_schema(
        operation_id="gateway_report", request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request, name: str):  # noqa: ANN001, ANN201
        """What a gateway is now: `{"servers": {...}, "events": [...]}` (see `console.gateways`)."""
        actor = actor_for_request(request)
        require(actor, "gateways.report")
        try:
            gateway = gateway_report(actor=actor, name=name, data=request.data)
        except ReportInvalid as exc:
            raise ValidationError(exc.errors) from exc
        return Response(as_dict(gateway))


# -- the page -----------------------------------------------------------------------------------


def _rows(gateway: Gateway) -> list[dict[str, Any]]:
    servers = []
    for name, server in sorted((gateway.servers or {}).items()):
        tools = server.get("tools") or []
        servers.append(
            {
                "name": name,
                "state": server.get("state"),
                "error": server.get("error"),
                "pinned": [t for t in tools if t.get("status") == "pinned"],
                "withdrawn": [t for t in tools if t.get("status") == "withdrawn"],
            }
        )
    return servers


#: Gateways drawn at once, the latest reported: one started in a new folder each time (a CI job's
#: checkout) is a new instance, and each may list 64 servers of 500 tools; the rest are counted.
GATEWAYS_SHOWN = 100


@require_GET
def gateways_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "gateways.read")
    now = timezone.now()
    found = Gateway.objects.filter(organisation=actor.organisation)
    latest = sorted(
        found.order_by("-reported_at", "-pk")[:GATEWAYS_SHOWN],
        key=lambda g: (g.name, g.instance),
    )
    gateways = [{"gateway": g, "servers": _rows(g), "status": status(g, now)} for g in latest]
    more = found.count() - len(latest) if len(latest) == GATEWAYS_SHOWN else 0
    return render(
        request, "console/gateways.html", {"gateways": gateways, "more": more, "actor": actor}
    )


@require_POST
def gateway_forget_view(request: HttpRequest, gateway_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "gateways.manage")
    gateway = get_object_for_actor(Gateway, actor, pk=gateway_id)
    name = gateway.name + (f" ({gateway.instance})" if gateway.instance else "")
    gateway_forget(actor=actor, gateway=gateway)
    messages.success(request, f"Gateway `{name}` forgotten until it reports again.")
    return redirect("gateways")
