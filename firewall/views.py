"""The rule editor's pages: policies, their rules in evaluation order, the rule form, try a call."""

from __future__ import annotations

import json
import re

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access import actor_for_request, get_object_for_actor, require
from console.api.parsers import MalformedBody, first_problem, max_body_bytes, parse_json_object
from firewall import display, engine, selectors, services
from firewall.forms import CHOICES, RuleForm
from firewall.models import Policy, Rule

#: Versions listed on the policy's page, newest first (the API lists them all).
VERSIONS_SHOWN = 20

EXAMPLE_CALL = {
    "tool": "shell.exec",
    "skill": "community.tools",
    "stage": "tool_call",
    "arguments": {"command": "rm -rf /"},
}


def _errors(exc: ValidationError) -> dict[str, list[str]]:
    if hasattr(exc, "error_dict"):
        return {k: [str(m) for m in v] for k, v in exc.message_dict.items()}
    return {"rule": list(exc.messages)}


@require_http_methods(["GET", "POST"])
def policy_list_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.read")
    errors: dict[str, list[str]] = {}
    status = 200
    if request.method == "POST":
        require(actor, "firewall.write")
        try:
            policy = services.policy_create(
                actor=actor,
                name=request.POST.get("name", "").strip(),
                default_verdict=request.POST.get("default_verdict", "allow"),
            )
        except ValidationError as exc:
            errors, status = _errors(exc), 400
        else:
            return redirect("firewall-policy", policy_id=policy.pk)
    return render(
        request,
        "firewall/policies.html",
        {
            "policies": selectors.policy_list(organisation=actor.organisation),
            "errors": errors,
            "default_verdicts": engine.DEFAULT_VERDICTS,
            "import_errors": {},
            "posted": request.POST,
        },
        status=status,
    )


def _problem(exc: MalformedBody) -> str:
    """A refusal of the API's edge as a page shows it: the field path, unless it is the whole body."""
    return (
        exc.problem if exc.field in ("body", "non_field_errors") else f"{exc.field}: {exc.problem}"
    )


def _policy_bytes(request: HttpRequest) -> bytes:
    """The uploaded policy file (else the pasted JSON), read no further than the API's body bound:
    a larger one is refused as the API refuses it, never read into memory whole."""
    upload = request.FILES.get("file")
    if upload is None:
        return request.POST.get("json", "").encode("utf-8", "replace")
    limit = max_body_bytes()
    raw = upload.read(limit + 1)
    if len(raw) > limit:
        raise MalformedBody("body", f"the file is larger than {limit} bytes")
    return raw


@require_POST
def policy_import_page(request: HttpRequest) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    upload = request.FILES.get("file")
    source = upload.name if upload else "the pasted JSON"
    import_errors: dict[str, list[str]] = {}
    name = request.POST.get("name", "").strip()
    try:
        # The API's edge check: bounded size and depth, an object, no NUL or lone surrogate.
        data = parse_json_object(_policy_bytes(request))
        if "\x00" in name:
            raise MalformedBody("name", "a NUL character is not allowed")
    except MalformedBody as exc:
        where = "name" if exc.field == "name" else "file"
        import_errors = {where: [f"{source}: {_problem(exc)}"]}
    else:
        try:
            policy = services.policy_import(actor=actor, data=data, name=name or None)
        except ValidationError as exc:
            import_errors = _errors(exc)
        else:
            return redirect("firewall-policy", policy_id=policy.pk)
    return render(
        request,
        "firewall/policies.html",
        {
            "policies": selectors.policy_list(organisation=actor.organisation),
            "errors": {},
            "default_verdicts": engine.DEFAULT_VERDICTS,
            "import_errors": import_errors,
            # the control that held what was refused: the name, else the file or the pasted text
            "import_invalid": [
                "name" if where == "name" else ("file" if upload else "json")
                for where in import_errors
            ][:1],
            "posted": request.POST,
        },
        status=400,
    )


def _policy_context(actor, policy: Policy, **extra) -> dict:  # noqa: ANN001
    rules = list(policy.rules.order_by("priority", "id"))
    counts = selectors.match_counts(policy=policy)
    for rule in rules:
        rule.counts = counts.get(rule.pk, {})
        rule.summary = display.rule_text(rule.spec)
    published = policy.published
    return {
        "policy": policy,
        "published": published,
        "draft_changed": services.draft_changed(policy=policy),
        "versions": selectors.version_list(policy=policy)[:VERSIONS_SHOWN],
        "try_with": "draft",
        "rules": rules,
        "actor": actor,
        "presets": sorted(engine.PRESETS),
        "levels": sorted(engine.AUTONOMY_LEVELS),
        "default_verdicts": engine.DEFAULT_VERDICTS,
        "call_text": json.dumps(EXAMPLE_CALL, indent=2),
        "policy_errors": {},
        **extra,
    }


def _policy_refused(request, actor, policy: Policy, exc: ValidationError) -> HttpResponse:  # noqa: ANN001
    """The policy's page again, with what was refused and why; nothing was saved."""
    return render(
        request,
        "firewall/policy.html",
        _policy_context(actor, policy, policy_errors=_errors(exc)),
        status=400,
    )


@require_GET
def policy_page(request: HttpRequest, policy_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.read")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    return render(request, "firewall/policy.html", _policy_context(actor, policy))


@require_POST
def policy_settings(request: HttpRequest, policy_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    data = {
        "name": request.POST.get("name", "").strip(),
        "default_verdict": request.POST.get("default_verdict", ""),
        "active": request.POST.get("active") == "on" or policy.active,
    }
    try:
        services.policy_update(actor=actor, policy=policy, data=data)
    except ValidationError as exc:
        policy.refresh_from_db()
        return _policy_refused(request, actor, policy, exc)
    return redirect("firewall-policy", policy_id=policy.pk)


@require_GET
def policy_export_page(request: HttpRequest, policy_id: int) -> HttpResponse:
    """The policy as the JSON file that import reads back, downloaded from the page."""
    from firewall.api.views import export_filename

    actor = actor_for_request(request)
    require(actor, "firewall.read")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    number = request.GET.get("version") or None
    try:
        number = int(selectors.read_ref(number)) if number else None
        body = services.policy_export(policy=policy, number=number)
    except (ValueError, ValidationError) as exc:
        text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
        return JsonResponse({"version": [text]}, status=400)
    shown = number or policy.published.number
    response = JsonResponse(body, json_dumps_params={"indent": 2, "ensure_ascii": False})
    response["Content-Disposition"] = (
        f'attachment; filename="{export_filename(policy, version=shown)}"'
    )
    response["X-Policy-Version"] = str(shown)
    return response


@require_POST
def policy_delete(request: HttpRequest, policy_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    services.policy_delete(actor=actor, policy=get_object_for_actor(Policy, actor, pk=policy_id))
    return redirect("firewall")


@require_POST
def rule_move(request: HttpRequest, rule_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    rule = get_object_for_actor(Rule, actor, pk=rule_id)
    policy = rule.policy
    to = request.POST.get("to", "")
    try:
        if to.strip():
            # ASCII digits: '²'.isdigit() is True, and int() refuses it
            if not re.fullmatch(r"-?[0-9]+", to.strip()) or len(to) > 9:
                raise ValidationError({"to": ["a place in the order: a whole number"]})
            changed = services.rule_place(actor=actor, rule=rule, index=int(to))
        else:
            changed = services.rule_move(
                actor=actor, rule=rule, direction=request.POST.get("direction", "")
            )
    except ValidationError as exc:
        if request.htmx:
            context = _policy_context(actor, policy, move_errors=_errors(exc))
            return render(request, "firewall/policy.html#rule-table", context, status=400)
        return _policy_refused(request, actor, policy, exc)
    moved = _moved_text(rule.name, changed)
    if request.htmx:
        context = _policy_context(actor, policy, moved=moved, moved_rule=rule.pk)
        return render(request, "firewall/policy.html#rule-table", context)
    if moved:
        messages.success(request, moved)
    return redirect("firewall-policy", policy_id=policy.pk)


def _moved_text(name: str, changed: dict[str, tuple[int, int]]) -> str:
    """What a move changed, in words: the moved rule's priority, and any other rule's."""
    if not changed:
        return f"{name} stays where it is: nothing changed."
    own = changed.get(name)
    text = f"Moved {name}" + (f": its priority went from {own[0]} to {own[1]}" if own else "")
    others = [f"{n} from {old} to {new}" for n, (old, new) in changed.items() if n != name]
    if others:
        return text + "; to make room, " + ", ".join(others) + "."
    return text + "; no other rule changed."


@require_POST
def rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    rule = get_object_for_actor(Rule, actor, pk=rule_id)
    policy = rule.policy
    services.rule_delete(actor=actor, rule=rule)
    return redirect("firewall-policy", policy_id=policy.pk)


@require_POST
def preset_apply(request: HttpRequest, policy_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    preset = request.POST.get("preset", "")
    try:
        added = services.preset_apply(actor=actor, policy=policy, preset=preset)
    except ValidationError as exc:
        return _policy_refused(request, actor, policy, exc)
    if added:
        messages.success(request, f"{preset}: {len(added)} rule(s) added after the others")
    else:
        messages.info(request, f"{preset}: every rule is already in this policy; nothing added")
    return redirect("firewall-policy", policy_id=policy.pk)


@require_GET
def preset_preview_page(request: HttpRequest, policy_id: int) -> HttpResponse:
    """The rules a preset would add, said in one line each; nothing is written."""
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    preset = request.GET.get("preset", "")
    try:
        items = services.preset_preview(policy=policy, preset=preset)
    except ValidationError as exc:
        return _policy_refused(request, actor, policy, exc)
    preview = {
        "preset": preset,
        "rules": [
            {"name": i["spec"].get("name", ""), "text": display.rule_text(i["spec"]), **i}
            for i in items
        ],
        "adds": sum(1 for i in items if not i["present"]),
    }
    context = _policy_context(actor, policy, preview=preview)
    if request.htmx:
        return render(request, "firewall/policy.html#preset-preview", context)
    return render(request, "firewall/policy.html", context)


@require_POST
def try_call(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Decide a pasted call with this policy's draft (or its published version), as a dry run:
    nothing is recorded or counted."""
    actor = actor_for_request(request)
    require(actor, "firewall.read")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    text = request.POST.get("call", "")
    with_draft = request.POST.get("with", "draft") != "published"
    result, error = None, None
    try:
        call = parse_json_object(text.encode("utf-8", "replace"))
    except MalformedBody as exc:
        error = "call: a call is a JSON object" if exc.field == "non_field_errors" else None
        error = error or f"call: {_problem(exc)}"
    else:
        # The same reading of a call as `POST /v1/firewall/evaluate`: a misspelled field is an
        # error, never a default silently answered.
        call, error = _read_tried_call(call)
        if error is None:
            result = services.firewall_evaluate(
                actor=actor, call=call, policy=policy, record=False, draft=with_draft
            )
    context = _policy_context(actor, policy, call_text=text, result=result, call_error=error)
    context["try_with"] = "draft" if with_draft else "published"
    if request.htmx:
        return render(request, "firewall/policy.html#try-result", context)
    return render(request, "firewall/policy.html", context)


def _read_tried_call(call: dict) -> tuple[dict, str | None]:
    from firewall.api.views import CallSerializer

    serializer = CallSerializer(
        data={k: v for k, v in call.items() if k not in ("policy", "token")}
    )
    if serializer.is_valid():
        return dict(serializer.validated_data), None
    problems = "; ".join(
        f"{field}: {' '.join(str(m) for m in messages)}"
        for field, messages in sorted(serializer.errors.items())
    )
    return call, f"call: {problems}"


def _rule_page(request, actor, policy, form: RuleForm, rule: Rule | None, status=200):  # noqa: ANN001, ANN202
    field_errors = form.field_errors()
    clauses = [
        {**c, "errors": field_errors.get(f"args_match[{i}]", [])}
        for i, c in enumerate(form.clauses)
    ]
    steps = [
        {**s, "errors": field_errors.get(f"sequence.steps[{i}]", [])}
        for i, s in enumerate(form.steps)
    ]
    context = {
        "policy": policy,
        "rule": rule,
        "summary": display.rule_text(rule.spec) if rule else "",
        "clause_texts": [display.clause_text(c) for c in (rule.spec.get("args_match") or [])]
        if rule
        else [],
        "form": form,
        "values": form.values,
        "clauses": clauses,
        "steps": steps,
        "errors": form.errors,
        "field_errors": field_errors,
        "invalid": form.invalid_names(),
        "choices": CHOICES,
        "action_url": reverse("firewall-rule", args=[rule.pk])
        if rule
        else reverse("firewall-rule-new", args=[policy.pk]),
    }
    if request.htmx:
        return render(request, "firewall/rule.html#rule-form", context, status=status)
    return render(request, "firewall/rule.html", context, status=status)


def _rule_form_post(request, actor, policy, rule: Rule | None) -> HttpResponse:  # noqa: ANN001
    form = RuleForm.from_post(request.POST)
    if RuleForm.is_edit_only(request.POST):
        return _rule_page(request, actor, policy, form, rule)
    try:
        spec = form.to_spec()
        # The API's edge check on what the form made: no NUL or lone surrogate (a clause value's
        # JSON may write one as `\u0000`, which PostgreSQL cannot keep), nested within the bound.
        problem = first_problem(spec, max_depth=int(settings.STALWART_API_MAX_JSON_DEPTH))
        if problem is not None:
            raise ValidationError({problem[0]: [problem[1]]})
        if rule is None:
            rule = services.rule_create(actor=actor, policy=policy, data=spec)
        else:
            rule = services.rule_update(actor=actor, rule=rule, data=spec)
    except ValidationError as exc:
        form.errors = _errors(exc)
        return _rule_page(request, actor, policy, form, rule, status=400)
    url = reverse("firewall-policy", args=[policy.pk])
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


@require_http_methods(["GET", "POST"])
def rule_new(request: HttpRequest, policy_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.read")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    require(actor, "firewall.write")
    if request.method == "POST":
        return _rule_form_post(request, actor, policy, None)
    form = RuleForm.from_spec({"verdict": "deny", "tool_name_glob": "", "enabled": True})
    return _rule_page(request, actor, policy, form, None)


@require_http_methods(["GET", "POST"])
def rule_edit(request: HttpRequest, rule_id: int) -> HttpResponse:
    actor = actor_for_request(request)
    require(actor, "firewall.read")
    rule = get_object_for_actor(Rule, actor, pk=rule_id)
    if request.method == "POST":
        require(actor, "firewall.write")
        return _rule_form_post(request, actor, rule.policy, rule)
    return _rule_page(request, actor, rule.policy, RuleForm.from_spec(rule.spec), rule)


@require_POST
def policy_publish(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Publish the draft as the next version (admin or editor); it decides from now on."""
    actor = actor_for_request(request)
    require(actor, "firewall.publish")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    try:
        version = services.policy_publish(
            actor=actor, policy=policy, note=request.POST.get("note", "")
        )
    except ValidationError as exc:
        policy.refresh_from_db()
        return _policy_refused(request, actor, policy, exc)
    messages.success(request, f"Version {version.number} published: it decides from now on.")
    return redirect("firewall-policy", policy_id=policy.pk)


@require_POST
def policy_rollback(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Publish a copy of an older version as the next one; the draft becomes that copy."""
    actor = actor_for_request(request)
    require(actor, "firewall.publish")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    try:
        number = int(selectors.read_ref(request.POST.get("version", "")))
    except ValueError:
        return _policy_refused(
            request, actor, policy, ValidationError({"version": ["a version's number"]})
        )
    try:
        version = services.policy_rollback(
            actor=actor,
            policy=policy,
            number=number,
            note=request.POST.get("note", ""),
            discard_draft=request.POST.get("discard_draft") == "on",
        )
    except ValidationError as exc:
        policy.refresh_from_db()
        return _policy_refused(request, actor, policy, exc)
    messages.success(
        request, f"Version {version.number} published, a copy of version {number}: it decides now."
    )
    return redirect("firewall-policy", policy_id=policy.pk)


@require_POST
def policy_draft_import_page(request: HttpRequest, policy_id: int) -> HttpResponse:
    """A policy's JSON file (an export) becomes this policy's draft; nothing is published."""
    actor = actor_for_request(request)
    require(actor, "firewall.write")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    upload = request.FILES.get("file")
    source = upload.name if upload else "the pasted JSON"
    try:
        data = parse_json_object(_policy_bytes(request))
    except MalformedBody as exc:
        return _policy_refused(
            request, actor, policy, ValidationError({"file": [f"{source}: {_problem(exc)}"]})
        )
    try:
        services.policy_draft_import(actor=actor, policy=policy, data=data)
    except ValidationError as exc:
        policy.refresh_from_db()
        return _policy_refused(request, actor, policy, exc)
    messages.success(request, f"{source} is the draft now: see what changes, then publish.")
    return redirect(f"{reverse('firewall-diff', args=[policy.pk])}")


def _ref_choices(policy: Policy, versions: list) -> list[tuple[str, str]]:  # noqa: ANN001
    choices = [("draft", "the draft")]
    for v in versions:
        label = f"version {v.number}"
        if policy.published_id == v.pk:
            label += " (published)"
        choices.append((str(v.number), label))
    return choices


@require_GET
def policy_diff_page(request: HttpRequest, policy_id: int) -> HttpResponse:
    """Two versions (or a version and the draft) compared rule by rule; with the published one
    and the draft, also what the draft would have decided on the last day's recorded calls."""
    actor = actor_for_request(request)
    require(actor, "firewall.read")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    published = policy.published
    versions = selectors.version_list(policy=policy)
    errors: dict[str, list[str]] = {}
    refs: dict[str, str | int] = {}
    for field, default in (("old", published.number if published else "draft"), ("new", "draft")):
        try:
            refs[field] = selectors.read_ref(request.GET.get(field) or str(default))
        except ValueError as exc:
            errors[field] = [str(exc)]
            refs[field] = default
    diff, status = None, 400 if errors else 200
    if not errors:
        try:
            diff = selectors.version_diff(policy=policy, old=refs["old"], new=refs["new"])
        except LookupError as exc:
            errors["version"], status = [str(exc)], 404
    replay = None
    if (
        diff is not None
        and published is not None
        and refs["old"] == published.number
        and refs["new"] == "draft"
        and not diff["same"]
    ):
        replay = selectors.draft_replay(policy=policy)
    in_shadow = selectors.draft_in_shadow(policy=policy) if refs["new"] == "draft" else None
    context = {
        "in_shadow": in_shadow,
        "policy": policy,
        "published": published,
        "choices": _ref_choices(policy, versions),
        "old": str(refs["old"]),
        "new": str(refs["new"]),
        "diff": diff,
        "errors": errors,
        "replay": replay,
        "can_publish_draft": refs["new"] == "draft" and diff is not None and not diff["same"],
    }
    if request.htmx:
        return render(request, "firewall/versions.html#diff-body", context, status=status)
    return render(request, "firewall/versions.html", context, status=status)


@require_GET
def version_page(request: HttpRequest, policy_id: int, number: int) -> HttpResponse:
    """One published version, read-only: who, when, why, and its rules as they decide."""
    actor = actor_for_request(request)
    require(actor, "firewall.read")
    policy = get_object_for_actor(Policy, actor, pk=policy_id)
    version = policy.versions.filter(number=number).first()
    if version is None:
        raise Http404("no such version")
    rules = [{"name": r.get("name", ""), "text": display.rule_text(r), **r} for r in version.rules]
    return render(
        request,
        "firewall/versions.html",
        {
            "policy": policy,
            "published": policy.published,
            "version": version,
            "version_rules": rules,
            "draft_changed": services.draft_changed(policy=policy),
        },
    )
