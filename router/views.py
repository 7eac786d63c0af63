"""`POST /v1/plan` and the Try a turn page: what a turn becomes, in the organisation's language."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods
from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import actor_for_request, require
from console.api.parsers import MalformedBody, parse_json_object
from console.api.views import ORG_PARAM
from router import services
from rulebooks.models import Rulebook

PLAN_FIELDS = {
    "turn",
    "catalogue",
    "agent",
    "rulebook",
    "language",
    "vocabulary",
    "check",
    # The conversation's state (router/state.py): the earlier plans, the calls that ran, and
    # whether the last turn was asked to be said again.
    "history",
    "results",
    "asked_again",
}


class PlanView(APIView):
    @extend_schema(
        parameters=[ORG_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """Read a turn into a plan: `{"turn", "catalogue", "agent", "rulebook", "language"}`,
        with the conversation's state: `history` (earlier plans), `results`, `asked_again`."""
        actor = actor_for_request(request)
        require(actor, "router.plan")
        data = request.data
        if not isinstance(data, dict):
            raise ApiValidationError({"non_field_errors": ["the body must be a JSON object"]})
        unknown = sorted(set(data) - PLAN_FIELDS)
        if unknown:
            raise ApiValidationError({name: ["not a field here"] for name in unknown})
        if "catalogue" not in data:
            raise ApiValidationError(
                {"catalogue": ["the agents and tools the turn is read against"]}
            )
        return Response(
            services.plan_turn(
                actor=actor,
                turn=data.get("turn"),
                catalogue=data["catalogue"],
                agent=data.get("agent"),
                rulebook=data.get("rulebook"),
                language=data.get("language"),
                vocabulary=data.get("vocabulary"),
                check=bool(data.get("check", True)),
                history=data.get("history"),
                results=data.get("results"),
                asked_again=data.get("asked_again", False),
            )
        )


def _shop_catalogue() -> str:
    from stalwart_agents import Agent

    desk = Agent.from_file(Path(settings.SITE_DIR) / "examples" / "shop" / "agent.yaml")
    return json.dumps(desk.catalogue(), indent=1)


@require_http_methods(["GET", "POST"])
def try_a_turn(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "router.plan")
    rulebooks = Rulebook.objects.filter(organisation=actor.organisation).order_by("name")
    posted = request.POST
    context = {
        "rulebooks": rulebooks,
        "posted": posted,
        "errors": {},
        "result": None,
        "catalogue_text": posted.get("catalogue") or _shop_catalogue(),
    }
    if request.method == "POST":
        record, wanted = None, (posted.get("rulebook") or "").strip()
        chosen = (
            rulebooks.filter(pk=int(wanted)).first()
            if wanted.isdecimal() and len(wanted) < 19
            else None
        )
        if wanted and chosen is None:
            # not a number, or no rulebook of this organisation's: never a plan without it
            context["errors"] = {"rulebook": ["choose one of the organisation's rulebooks"]}
            return render(request, "router/try.html", context, status=400)
        if chosen and chosen.latest:
            record = chosen.latest.record
        try:
            # The API's edge check: bounded depth, an object, no NUL, no number past its limits.
            catalogue = parse_json_object(posted.get("catalogue", "").encode("utf-8", "replace"))
        except MalformedBody as exc:
            whole = exc.field in ("body", "non_field_errors")
            problem = "it must be a JSON object" if exc.field == "non_field_errors" else exc.problem
            context["errors"] = {"catalogue": [problem if whole else f"{exc.field}: {problem}"]}
        else:
            try:
                context["result"] = services.plan_turn(
                    actor=actor,
                    turn=posted.get("turn", ""),
                    catalogue=catalogue,
                    agent=posted.get("agent") or None,
                    rulebook=record,
                    language=posted.get("language") or None,
                    check=True,
                    model=True,
                )
            except ValidationError as exc:
                context["errors"] = exc.message_dict
        if context["result"]:
            context["plan_json"] = json.dumps(
                context["result"]["plan"], indent=2, ensure_ascii=False
            )
    status = 400 if context["errors"] else 200
    return render(request, "router/try.html", context, status=status)
