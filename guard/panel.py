"""The executor's panel: counters per tool, the write switches, the ledger and the outbox.

The same counters are served to Prometheus at `/metrics` (text exposition format, written by
`prometheus_client`), for the organisation of the API key or the signed-in person.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from drf_spectacular.utils import OpenApiTypes, extend_schema
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import actor_for_request, require
from console.api.views import ORG_PARAM
from console.metrics import ConsoleCollector
from console.models import Organisation
from guard.counters import counters
from guard.engine.execution import COUNTERS
from guard.executor import write_switch_set
from guard.models import Effect, PendingStep, WriteSwitch

HELP = {
    "schema_valid": "Calls whose arguments passed the tool's schema.",
    "schema_rejected": "Calls refused by the tool's schema; nothing ran.",
    "blocked_actions": "Calls blocked: writes switched off, another tenant, or the domain said no.",
    "duplicates_suppressed": "Retries recognised by their key: no new effect.",
    "confirmation_denied": "Calls a person denied; nothing ran.",
    "partial_results": "Writes whose main effect ran while a secondary step is pending.",
    "effects": "Effects the tools really recorded.",
}


#: The counters' headings on the page (Prometheus keeps the names).
LABELS = {
    "schema_valid": "Valid calls",
    "schema_rejected": "Refused by schema",
    "blocked_actions": "Blocked",
    "duplicates_suppressed": "Retries answered from the ledger",
    "confirmation_denied": "Denied by a person",
    "partial_results": "Partial",
    "effects": "Effects",
}


def _panel(organisation: Organisation) -> dict[str, Any]:
    table = counters(organisation)
    switches = {s.tool: s for s in WriteSwitch.objects.filter(organisation=organisation)}
    tools = sorted(set(table) | {name for name in switches if name})
    everything = switches.get("")
    return {
        "names": COUNTERS,
        "headings": [
            {"name": n, "label": LABELS.get(n, n), "help": HELP.get(n, "")} for n in COUNTERS
        ],
        "rows": [
            {
                "tool": tool,
                "values": [table.get(tool, {}).get(name, 0) for name in COUNTERS],
                "switch": switches.get(tool),
                "writes_enabled": switches[tool].writes_enabled if tool in switches else True,
            }
            for tool in tools
        ],
        "all_writes_enabled": everything.writes_enabled if everything else True,
        "switched_off": [
            s for name, s in sorted(switches.items()) if name and not s.writes_enabled
        ],
        "all_switch": everything,
        "pending": PendingStep.objects.filter(organisation=organisation)
        .exclude(status=PendingStep.Status.DONE)
        .select_related("effect")
        .order_by("next_attempt_at")[:50],
        "ledger": Effect.objects.filter(organisation=organisation).order_by("-updated_at")[:30],
    }


@require_GET
def tools_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "tools.read")
    context = {"actor": actor, **_panel(actor.organisation)}
    if request.htmx:
        return render(request, "guard/tools.html#panel", context)
    return render(request, "guard/tools.html", context)


@require_POST
def writes_switch(request: HttpRequest) -> HttpResponse:
    """Switch writes of one tool (or of every tool) off or back on: the rollback to read-only."""
    actor = actor_for_request(request)
    require(actor, "controls.write")
    tool = request.POST.get("tool", "").strip()
    enabled = request.POST.get("enabled", "")
    try:
        if enabled not in ("on", "off"):
            raise ValidationError({"enabled": ["must be on or off"]})
        write_switch_set(actor=actor, tool=tool, enabled=enabled == "on")
    except ValidationError as exc:
        # Refused inline, beside the field, with what was typed kept (the page answers 400).
        context = {
            "actor": actor,
            **_panel(actor.organisation),
            "switch_errors": exc.message_dict,
            "typed_tool": tool,
        }
        return render(request, "guard/tools.html", context, status=400)
    what = f"`{tool}`" if tool else "every tool"
    messages.success(request, f"Writes of {what} switched {enabled}.")
    return redirect("tools")


class _Collector:
    """The organisation's counters, read from the database when Prometheus scrapes."""

    def __init__(self, organisation: Organisation) -> None:
        self.organisation = organisation

    def collect(self):  # noqa: ANN201
        table = counters(self.organisation)
        slug = self.organisation.slug
        for name in COUNTERS:
            family = CounterMetricFamily(
                f"stalwart_tool_{name}", HELP[name], labels=["organisation", "tool"]
            )
            for tool, values in table.items():
                family.add_metric([slug, tool], values[name])
            yield family
        pending = GaugeMetricFamily(
            "stalwart_pending_steps",
            "Secondary steps of PARTIAL writes waiting for reconciliation.",
            labels=["organisation"],
        )
        pending.add_metric(
            [slug],
            PendingStep.objects.filter(
                organisation=self.organisation, status=PendingStep.Status.PENDING
            ).count(),
        )
        yield pending


class PrometheusRenderer(BaseRenderer):
    media_type = "text/plain"
    format = "prometheus"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):  # noqa: ANN001, ANN201
        if isinstance(data, bytes):
            return data
        return "\n".join(f"# {key}: {value}" for key, value in (data or {}).items()).encode()


class MetricsView(APIView):
    """`GET /metrics`: the executor's counters in Prometheus' text format (API key or session)."""

    renderer_classes = [PrometheusRenderer]

    @extend_schema(
        operation_id="metrics",
        parameters=[ORG_PARAM],
        responses={(200, "text/plain"): OpenApiTypes.STR},
    )
    def get(self, request):  # noqa: ANN001, ANN201
        actor = actor_for_request(request)
        require(actor, "tools.read")
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(actor.organisation))
        registry.register(ConsoleCollector(actor.organisation))
        return Response(
            generate_latest(registry), content_type="text/plain; version=0.0.4; charset=utf-8"
        )
