"""Writes of the firewall app: policies, rules, order, presets, import, and evaluating a call.

Every rule passes the engine's validator (the one gate for the editor, the API, import and the CLI)
before it is stored; every change writes its audit row in the same transaction, naming the fields
changed but never writing rule blobs (clauses, patterns, egress lists, sequences, notes). A policy
holds at most `MAX_RULES_PER_POLICY` rules, whichever way they come; an imported policy's rules
are written in one bulk insert with one audit row for the import, so saving 10,000 rules costs a
handful of queries rather than several per rule.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from console import audit, controls
from console.access import Actor, require
from console.bundle_changes import bundle_changed
from console.models import Organisation
from console.services import audit_record, event_record
from console.statements import fetch_one
from console.tracing import decision_span
from firewall import engine
from firewall.active import POLICY_ROW, Active, active
from firewall.engine.names import name_key
from firewall.engine.vocabulary import PRIORITY_MAX, PRIORITY_MIN
from firewall.matching import sequence_rules, sequence_rules_of
from firewall.models import Policy, PolicyVersion, Rule, RuleMatchCount
from firewall.runtime import (
    compiled_draft,
    compiled_draft_for,
    compiled_version,
    content_digest,
    draft_rules,
    policy_json,
    published_of,
    version_json,
)

# Parts of a rule that are blobs: their change is named in the audit row, never written.
BLOB_FIELDS = frozenset({"args_match", "sanitize", "egress", "sequence", "notes"})
PRIORITY_STEP = 10
#: Rows per INSERT when a policy's rules are written in bulk.
IMPORT_BATCH = 500


def _issues_error(issues, prefix: str = "") -> ValidationError:  # noqa: ANN001
    errors: dict[str, list[str]] = {}
    for issue in issues:
        path = issue.path or "rule"
        if prefix and path.startswith(prefix):
            path = path[len(prefix) :].lstrip(".") or "rule"
        errors.setdefault(path, []).append(issue.message)
    return ValidationError(errors)


def _bump(policy: Policy) -> None:
    """Count a change of the draft; what decides (the published version) is untouched, but the
    draft decides in shadow beside it (`firewall.active` keeps the row: announced)."""
    Policy.objects.filter(pk=policy.pk).update(
        revision=F("revision") + 1, draft_key=uuid.uuid4(), updated_at=timezone.now()
    )
    bundle_changed(policy.organisation_id)


def _clean_spec(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "id"}


@transaction.atomic
def policy_create(*, actor: Actor, name: str, default_verdict: str = "allow") -> Policy:
    require(actor, "firewall.write")
    issues = engine.validate_policy({"name": name, "default_verdict": default_verdict, "rules": []})
    if issues:
        raise _issues_error(issues)
    if Policy.objects.filter(organisation=actor.organisation, name=name).exists():
        raise ValidationError({"name": [f"a policy named `{name}` exists already"]})
    active = not Policy.objects.filter(organisation=actor.organisation, active=True).exists()
    policy = Policy.objects.create(
        organisation=actor.organisation, name=name, default_verdict=default_verdict, active=active
    )
    audit_record(
        actor=actor,
        action="firewall.policy.create",
        object_type="firewall_policy",
        object_id=policy.pk,
        changes=audit.field_changes(
            {}, {"name": name, "default_verdict": default_verdict, "active": active}
        ),
    )
    return policy


@transaction.atomic
def policy_update(*, actor: Actor, policy: Policy, data: dict[str, Any]) -> Policy:
    require(actor, "firewall.write")
    unknown = sorted(set(data) - {"name", "default_verdict", "active"})
    if unknown:
        raise ValidationError({name: ["not a field of a policy"] for name in unknown})
    before = {
        "name": policy.name,
        "default_verdict": policy.default_verdict,
        "active": policy.active,
    }
    after = {**before, **data}
    issues = engine.validate_policy(
        {"name": after["name"], "default_verdict": after["default_verdict"], "rules": []}
    )
    if issues:
        raise _issues_error(issues)
    if not isinstance(after["active"], bool):
        raise ValidationError({"active": ["must be true or false"]})
    if (
        after["name"] != policy.name
        and Policy.objects.filter(organisation=actor.organisation, name=after["name"]).exists()
    ):
        raise ValidationError({"name": [f"a policy named `{after['name']}` exists already"]})
    changes = audit.field_changes(before, after)
    if not changes:
        return policy
    if after["active"] and not policy.active:
        Policy.objects.filter(organisation=actor.organisation, active=True).update(active=False)
    # Only the fields changed, and the revision counted in the database: the caller's row may be
    # older than a publish, which a whole-row save would undo.
    fields: dict[str, Any] = {
        "name": after["name"],
        "default_verdict": after["default_verdict"],
        "active": after["active"],
        "revision": F("revision") + 1,
        "updated_at": timezone.now(),
    }
    if after["default_verdict"] != before["default_verdict"]:
        fields["draft_key"] = uuid.uuid4()  # the draft decides otherwise; a name decides nothing
    Policy.objects.filter(pk=policy.pk).update(**fields)
    # Which policy is active decides what the bundle carries, and its name and draft what an
    # evaluated call's answer and shadow say (`firewall.active`); `update` sends no signal.
    bundle_changed(actor.organisation.pk)
    policy.refresh_from_db()
    audit_record(
        actor=actor,
        action="firewall.policy.update",
        object_type="firewall_policy",
        object_id=policy.pk,
        changes=changes,
    )
    return policy


@transaction.atomic
def policy_delete(*, actor: Actor, policy: Policy) -> None:
    require(actor, "firewall.write")
    pk, name, count = policy.pk, policy.name, policy.rules.count()
    policy.delete()
    audit_record(
        actor=actor,
        action="firewall.policy.delete",
        object_type="firewall_policy",
        object_id=pk,
        changes={"name": {"old": name, "new": None}, "rules": {"old": count, "new": None}},
    )


def _validate_rule(policy: Policy, data: Any, *, exclude: Rule | None = None) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValidationError({"rule": ["a rule is a JSON object"]})
    spec = _clean_spec(data)
    issues = engine.validate_rule(spec)
    if issues:
        raise _issues_error(issues)
    others = policy.rules.exclude(pk=exclude.pk) if exclude else policy.rules.all()
    if others.filter(name=spec["name"]).exists():
        raise ValidationError({"name": [f"a rule named `{spec['name']}` exists in this policy"]})
    return spec


def _rule_row(actor: Actor, policy: Policy, spec: dict[str, Any]) -> Rule:
    """A rule of `policy` from its validated spec, not yet saved."""
    return Rule(
        organisation=actor.organisation,
        policy=policy,
        priority=spec["priority"],
        name=spec["name"],
        spec=spec,
    )


def _next_priority(policy: Policy) -> int:
    top = policy.rules.aggregate(top=Max("priority"))["top"]
    return PRIORITY_STEP if top is None else top + PRIORITY_STEP


@transaction.atomic
def rule_create(*, actor: Actor, policy: Policy, data: Any) -> Rule:
    require(actor, "firewall.write")
    if isinstance(data, dict) and "priority" not in data:
        data = {**data, "priority": _next_priority(policy)}
    spec = _validate_rule(policy, data)
    count = policy.rules.count()
    if count >= engine.MAX_RULES_PER_POLICY:
        raise ValidationError({"rules": [engine.too_many_rules(count + 1)]})
    rule = _rule_row(actor, policy, spec)
    rule.save()
    _bump(policy)
    audit_record(
        actor=actor,
        action="firewall.rule.create",
        object_type="firewall_rule",
        object_id=rule.pk,
        changes=audit.field_changes({}, spec, hidden=BLOB_FIELDS),
    )
    return rule


@transaction.atomic
def rule_update(*, actor: Actor, rule: Rule, data: Any) -> Rule:
    require(actor, "firewall.write")
    if isinstance(data, dict) and "priority" not in data:
        data = {**data, "priority": rule.priority}
    spec = _validate_rule(rule.policy, data, exclude=rule)
    changes = audit.field_changes(rule.spec, spec, hidden=BLOB_FIELDS)
    if not changes:
        return rule
    rule.spec, rule.priority, rule.name = spec, spec["priority"], spec["name"]
    rule.save()
    _bump(rule.policy)
    audit_record(
        actor=actor,
        action="firewall.rule.update",
        object_type="firewall_rule",
        object_id=rule.pk,
        changes=changes,
    )
    return rule


@transaction.atomic
def rule_delete(*, actor: Actor, rule: Rule) -> None:
    require(actor, "firewall.write")
    pk, name, policy = rule.pk, rule.name, rule.policy
    rule.delete()
    _bump(policy)
    audit_record(
        actor=actor,
        action="firewall.rule.delete",
        object_type="firewall_rule",
        object_id=pk,
        changes={"name": {"old": name, "new": None}},
    )


def _set_priority(rule: Rule, priority: int) -> None:
    """A rule's priority, in its row and in its spec, saved where it changed."""
    if rule.priority != priority:
        rule.priority = priority
        rule.spec = {**rule.spec, "priority": priority}
        rule.save(update_fields=["priority", "spec", "updated_at"])


@transaction.atomic
def rules_reorder(*, actor: Actor, policy: Policy, rule_ids: Any) -> list[Rule]:
    """Put the policy's rules in the given order, keeping the priorities they already have.

    The policy's priorities, sorted, are handed out again in the new order, so only the rules that
    moved get a new number (a swap exchanges two); a tie is first made strict, by one, so that the
    order never rests on ids.
    """
    require(actor, "firewall.write")
    rules = list(policy.rules.select_for_update().order_by("priority", "id"))
    if not isinstance(rule_ids, list) or not all(isinstance(i, int) for i in rule_ids):
        raise ValidationError({"rules": ["a list of the policy's rule ids"]})
    if sorted(rule_ids) != sorted(r.pk for r in rules):
        raise ValidationError({"rules": ["name every rule of the policy exactly once"]})
    by_id = {r.pk: r for r in rules}
    before = [r.name for r in rules]
    ordered = [by_id[i] for i in rule_ids]
    priorities: list[int] = []
    for rule in rules:
        priorities.append(max(rule.priority, priorities[-1] + 1) if priorities else rule.priority)
    for rule, priority in zip(ordered, priorities, strict=True):
        _set_priority(rule, priority)
    after = [r.name for r in ordered]
    if before != after:
        _bump(policy)
        audit_record(
            actor=actor,
            action="firewall.policy.reorder",
            object_type="firewall_policy",
            object_id=policy.pk,
            changes={"order": {"old": before, "new": after}},
        )
    return ordered


def _room_for(prev: int | None, after: int | None) -> int | None:
    """A priority strictly between two neighbours' (either may be missing), or None: no gap."""
    if prev is None and after is None:
        return None
    if prev is None:
        return max(PRIORITY_MIN, after - PRIORITY_STEP) if after > PRIORITY_MIN else None
    if after is None:
        return min(PRIORITY_MAX, prev + PRIORITY_STEP) if prev < PRIORITY_MAX else None
    return prev + (after - prev) // 2 if after - prev >= 2 else None


@transaction.atomic
def rule_place(*, actor: Actor, rule: Rule, index: Any) -> dict[str, tuple[int, int]]:
    """Put one rule at `index` (0 first) of its policy's evaluation order, changing only its own
    priority where its new neighbours leave a gap (the midpoint; a step beyond the first or the
    last). Only where they leave none are the rules after it moved down by one each, as few as
    make room. Returns every priority that changed, `{name: (old, new)}`, for the page to say."""
    require(actor, "firewall.write")
    policy = rule.policy
    rules = list(policy.rules.select_for_update().order_by("priority", "id"))
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(rules):
        raise ValidationError({"to": [f"a place from 0 to {len(rules) - 1}"]})
    before = [r.name for r in rules]
    current = next(r for r in rules if r.pk == rule.pk)
    order = [r for r in rules if r.pk != rule.pk]
    order.insert(index, current)
    if [r.pk for r in order] == [r.pk for r in rules]:
        return {}
    prev = order[index - 1].priority if index > 0 else None
    after = order[index + 1].priority if index + 1 < len(order) else None
    wanted: dict[int, int] = {}
    room = _room_for(prev, after)
    if room is not None:
        wanted[current.pk] = room
    else:
        # No gap: this rule takes the place just after its new upper neighbour, and the rules
        # below it are moved down by one where (and only where) they would tie or come before.
        last = (prev + 1) if prev is not None else after - 1
        wanted[current.pk] = last
        for other in order[index + 1 :]:
            if other.priority > last:
                break
            last += 1
            wanted[other.pk] = last
    if any(not PRIORITY_MIN <= p <= PRIORITY_MAX for p in wanted.values()):
        raise ValidationError({"to": ["no priority is left there: renumber the rules first"]})
    changed: dict[str, tuple[int, int]] = {}
    for r in order:
        new = wanted.get(r.pk, r.priority)
        if new != r.priority:
            changed[r.name] = (r.priority, new)
            _set_priority(r, new)
    _bump(policy)
    audit_record(
        actor=actor,
        action="firewall.policy.reorder",
        object_type="firewall_policy",
        object_id=policy.pk,
        changes={
            "order": {"old": before, "new": [r.name for r in order]},
            "priorities": {
                "old": {n: o for n, (o, _) in changed.items()},
                "new": {n: v for n, (_, v) in changed.items()},
            },
        },
    )
    return changed


def rule_move(*, actor: Actor, rule: Rule, direction: str) -> dict[str, tuple[int, int]]:
    """Move a rule one place up or down in evaluation order (see `rule_place`)."""
    if direction not in ("up", "down"):
        raise ValidationError({"direction": ["`up` or `down`"]})
    ids = list(rule.policy.rules.order_by("priority", "id").values_list("pk", flat=True))
    index = ids.index(rule.pk) + (-1 if direction == "up" else 1)
    if not 0 <= index < len(ids):
        return {}
    return rule_place(actor=actor, rule=rule, index=index)


@transaction.atomic
def policy_import(*, actor: Actor, data: Any, name: str | None = None) -> Policy:
    """Store a whole policy from its JSON, or nothing: every error at once, each with its path."""
    require(actor, "firewall.write")
    if isinstance(data, dict) and name:
        data = {**data, "name": name}
    issues = engine.validate_policy(data)
    if issues:
        raise _issues_error(issues)
    policy = policy_create(
        actor=actor, name=data["name"], default_verdict=data.get("default_verdict", "allow")
    )
    specs = []
    for position, raw in enumerate(data.get("rules", [])):
        spec = _clean_spec(raw)
        spec.setdefault("priority", (position + 1) * PRIORITY_STEP)
        specs.append(spec)
    if not specs:
        return policy
    # The validator has seen the whole policy (names unique within it) and the policy is new, so
    # nothing is left to check per rule: one bulk insert, one revision, one audit row.
    Rule.objects.bulk_create(
        [_rule_row(actor, policy, spec) for spec in specs], batch_size=IMPORT_BATCH
    )
    _bump(policy)
    audit_record(
        actor=actor,
        action="firewall.policy.import",
        object_type="firewall_policy",
        object_id=policy.pk,
        changes={
            "rules": {"old": 0, "new": len(specs)},
            "rule_names": {"old": None, "new": [spec["name"] for spec in specs]},
        },
    )
    return policy


def policy_export(*, policy: Policy, number: int | None = None) -> dict[str, Any]:
    """A published version in the policy format: the one that decides, unless `number` names one.

    A policy with nothing published has nothing to export (its draft is not a version yet).
    """
    if number is None:
        version = policy.published
        if version is None:
            raise ValidationError(
                {"version": ["nothing is published yet: publish the draft first"]}
            )
    else:
        version = policy.versions.filter(number=number).first()
        if version is None:
            raise ValidationError({"version": [f"the policy has no version {number}"]})
    return version_json(version, policy.name)


def policy_draft_export(*, policy: Policy) -> dict[str, Any]:
    return policy_json(policy)


def draft_changed(*, policy: Policy) -> bool:
    """Whether the draft would decide any call differently from the published version."""
    published = policy.published
    if published is None:
        return True
    return content_digest(policy.default_verdict, draft_rules(policy)) != published.digest


def _audit_names(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule names a change adds, removes and changes: names only, never a rule's blob."""
    from firewall.diff import rules_diff

    diff = rules_diff(before, after)
    return {
        "added": [r["name"] for r in diff["added"]],
        "removed": [r["name"] for r in diff["removed"]],
        "changed": [r["name"] for r in diff["changed"]],
    }


@transaction.atomic
def policy_publish(*, actor: Actor, policy: Policy, note: str = "") -> PolicyVersion:
    """Make the draft the policy's next numbered version, the one that decides from now on.

    The policy's row is locked, so two publishes of one policy get consecutive numbers. The draft
    is checked whole (as an import is); publishing a draft that decides every call as the
    published version does is refused, so every version is a change.
    """
    require(actor, "firewall.publish")
    return _publish(actor, policy, note=note, copied_from=None)


def _note(note: Any) -> str:
    if not isinstance(note, str):
        raise ValidationError({"note": ["a note is text"]})
    note = note.strip()
    if len(note) > 300:
        raise ValidationError({"note": ["at most 300 characters"]})
    if "\x00" in note:
        raise ValidationError({"note": ["a NUL character is not allowed"]})
    return note


def _publish(actor: Actor, policy: Policy, *, note: Any, copied_from: int | None) -> PolicyVersion:
    note = _note(note)
    policy = Policy.objects.select_for_update().get(pk=policy.pk)
    rules = draft_rules(policy)
    issues = engine.validate_policy(
        {"name": policy.name, "default_verdict": policy.default_verdict, "rules": rules}
    )
    if issues:
        raise _issues_error(issues)
    digest = content_digest(policy.default_verdict, rules)
    before = policy.published
    if before is not None and before.digest == digest:
        raise ValidationError(
            {"draft": [f"the draft decides as version {before.number} does: nothing to publish"]}
        )
    top = policy.versions.aggregate(top=Max("number"))["top"] or 0
    version = PolicyVersion.objects.create(
        organisation=policy.organisation,
        policy=policy,
        number=top + 1,
        default_verdict=policy.default_verdict,
        rules=rules,
        digest=digest,
        note=note,
        copied_from=copied_from,
        published_by=actor.label,
    )
    policy.published, policy.draft_key = version, None
    policy.save(update_fields=["published", "draft_key", "updated_at"])
    names = _audit_names(before.rules if before else [], rules)
    changes: dict[str, Any] = {
        "version": {"old": before.number if before else None, "new": version.number},
        **{k: {"old": None, "new": v} for k, v in names.items() if v},
    }
    if before is None or before.default_verdict != version.default_verdict:
        changes["default_verdict"] = {
            "old": before.default_verdict if before else None,
            "new": version.default_verdict,
        }
    if copied_from is not None:
        changes["copied_from"] = {"old": None, "new": copied_from}
    audit_record(
        actor=actor,
        action="firewall.policy.rollback" if copied_from is not None else "firewall.policy.publish",
        object_type="firewall_policy",
        object_id=policy.pk,
        changes=changes,
    )
    return version


def _draft_replace(
    actor: Actor, policy: Policy, *, default_verdict: str, rules: list[dict[str, Any]]
) -> None:
    """Make the draft hold exactly `rules` (validated already) and `default_verdict`.

    A rule keeps its draft row, and so its identity and its counts, when its id is still a row of
    this policy, else when a row has its name; other rules get new rows and rows no rule takes are
    deleted. Names are unique per policy, so rows kept are first renamed out of the way.
    """
    rows = {r.pk: r for r in policy.rules.select_for_update()}
    by_name = {r.name: r for r in rows.values()}
    taken: dict[int, dict[str, Any]] = {}
    new: list[dict[str, Any]] = []
    for raw in rules:
        spec = _clean_spec(raw)
        row = rows.get(raw.get("id")) if isinstance(raw.get("id"), int) else None
        if row is None or row.pk in taken:
            row = by_name.get(spec["name"])
        if row is None or row.pk in taken:
            new.append(spec)
        else:
            taken[row.pk] = spec
    Rule.objects.filter(pk__in=set(rows) - set(taken)).delete()
    kept = [rows[pk] for pk in taken]
    for row in kept:
        row.name = f"~{row.pk}~{uuid.uuid4().hex}"
    Rule.objects.bulk_update(kept, ["name"])
    now = timezone.now()
    for row in kept:
        spec = taken[row.pk]
        row.spec, row.priority, row.name = spec, spec["priority"], spec["name"]
        row.updated_at = now
    Rule.objects.bulk_update(kept, ["spec", "priority", "name", "updated_at"])
    Rule.objects.bulk_create(
        [_rule_row(actor, policy, spec) for spec in new], batch_size=IMPORT_BATCH
    )
    Policy.objects.filter(pk=policy.pk).update(
        default_verdict=default_verdict,
        revision=F("revision") + 1,
        draft_key=uuid.uuid4(),
        updated_at=timezone.now(),
    )
    bundle_changed(policy.organisation_id)
    policy.default_verdict = default_verdict


@transaction.atomic
def policy_rollback(
    *, actor: Actor, policy: Policy, number: Any, note: str = "", discard_draft: bool = False
) -> PolicyVersion:
    """Publish a copy of version `number` as the policy's next version; history is never rewritten.

    The draft becomes that copy too, so the next publish starts from what decides. A draft with
    unpublished changes is not thrown away unless `discard_draft` says so.
    """
    require(actor, "firewall.publish")
    if not isinstance(number, int) or isinstance(number, bool):
        raise ValidationError({"version": ["the number of a published version"]})
    policy = Policy.objects.select_for_update().get(pk=policy.pk)
    target = policy.versions.filter(number=number).first()
    if target is None:
        raise ValidationError({"version": [f"the policy has no version {number}"]})
    if policy.published is not None and policy.published.digest == target.digest:
        raise ValidationError(
            {
                "version": [
                    f"version {number} decides as the published one does: nothing to roll back"
                ]
            }
        )
    if not discard_draft and draft_changed(policy=policy) and policy.published is not None:
        raise ValidationError(
            {
                "draft": [
                    "the draft has changes that are not published: publish them, or roll back "
                    "with discard_draft to throw them away"
                ]
            }
        )
    _draft_replace(actor, policy, default_verdict=target.default_verdict, rules=target.rules)
    return _publish(actor, policy, note=note or f"rollback to version {number}", copied_from=number)


@transaction.atomic
def policy_draft_import(*, actor: Actor, policy: Policy, data: Any) -> Policy:
    """Make a whole policy's JSON (an export, edited) this policy's draft; nothing is published.

    The file is checked whole first: every error at once, and nothing changes unless it is valid.
    Its `name` is not read (the policy keeps its own).
    """
    require(actor, "firewall.write")
    if isinstance(data, dict):
        data = {**data, "name": policy.name}
    issues = engine.validate_policy(data)
    if issues:
        raise _issues_error(issues)
    rules = []
    for position, raw in enumerate(data.get("rules", [])):
        spec = dict(raw)
        spec.setdefault("priority", (position + 1) * PRIORITY_STEP)
        rules.append(spec)
    before = draft_rules(policy)
    _draft_replace(actor, policy, default_verdict=data["default_verdict"], rules=rules)
    names = _audit_names(before, draft_rules(policy))
    audit_record(
        actor=actor,
        action="firewall.policy.draft_import",
        object_type="firewall_policy",
        object_id=policy.pk,
        changes={k: {"old": None, "new": v} for k, v in names.items() if v}
        or {"rules": {"old": len(before), "new": len(rules)}},
    )
    return policy


def _same_rule_key(spec: dict[str, Any]) -> str:
    """What a rule does, without its name, id or place: two rules with one key are one rule twice."""
    kept = {k: v for k, v in spec.items() if k not in ("id", "name", "priority")}
    return json.dumps(kept, sort_keys=True, default=str)


def preset_preview(*, policy: Policy, preset: str) -> list[dict[str, Any]]:
    """The rules a preset would add, each marked `present` when the policy already has it."""
    try:
        rules = engine.preset_rules(preset)
    except engine.FirewallError as exc:
        raise ValidationError({"preset": [str(exc)]}) from exc
    held = {_same_rule_key(_clean_spec(r.spec)) for r in policy.rules.all()}
    return [
        {"spec": spec, "present": _same_rule_key(spec) in held}
        for spec in (_clean_spec(raw) for raw in rules)
    ]


@transaction.atomic
def preset_apply(*, actor: Actor, policy: Policy, preset: str) -> list[Rule]:
    """Add a preset's rules (or an autonomy level's) after the policy's own rules.

    Idempotent: a rule the policy already has (the same conditions and verdict, whatever its name
    or place) is not added again, so applying a preset twice adds nothing the second time.
    """
    require(actor, "firewall.write")
    created = []
    for item in preset_preview(policy=policy, preset=preset):
        if item["present"]:
            continue
        spec = dict(item["spec"])
        spec["priority"] = _next_priority(policy)
        base, n = spec["name"], 2
        while policy.rules.filter(name=spec["name"]).exists():
            spec["name"], n = f"{base} ({n})", n + 1
        created.append(rule_create(actor=actor, policy=policy, data=spec))
    return created


def _hour(now: dt.datetime) -> dt.datetime:
    return now.replace(minute=0, second=0, microsecond=0)


def count_matches(matches: list[tuple[int, str]]) -> None:
    hour = _hour(timezone.now())
    for rule_id, mode in matches:
        updated = RuleMatchCount.objects.filter(rule_id=rule_id, hour=hour, mode=mode).update(
            count=F("count") + 1
        )
        # The first match of an hour creates the row, if the rule is still a row: a published
        # version may hold a rule its draft has deleted since.
        if not updated and Rule.objects.filter(pk=rule_id).exists():
            try:
                with transaction.atomic():
                    RuleMatchCount.objects.create(rule_id=rule_id, hour=hour, mode=mode, count=1)
            except IntegrityError:
                RuleMatchCount.objects.filter(rule_id=rule_id, hour=hour, mode=mode).update(
                    count=F("count") + 1
                )


def _refusal(call: dict[str, Any], reason: str) -> dict[str, Any]:
    return {
        "verdict": "deny",
        "decision": "refuse",
        "rule": None,
        "rule_id": None,
        "arguments": call.get("arguments", {}),
        "reasons": [reason],
        "shadow": [],
        "cap_cost_cents": None,
        "errors": [],
    }


def active_policy(*, organisation) -> Policy | None:  # noqa: ANN001
    return Policy.objects.filter(organisation=organisation, active=True).first()


def _call_controls(actor: Actor, call: dict[str, Any], rows: Any) -> Any:
    """`rows`, each with the tool switch and the session hold that apply to the call."""
    return controls.call_flags(
        rows,
        organisation_id=actor.organisation.pk,
        agent=str(call.get("agent", "")),
        tool=str(call.get("tool", "")),
        session=str(call.get("session", "")),
    )


@functools.cache
def _active_sql(vendor: str) -> str:
    """The steady path's one statement, written out: the ORM took longer to build it than the
    database took to answer it. The controls are `console.controls`'s rule."""
    from django.db import connection

    version = PolicyVersion._meta.db_table
    return (
        f"SELECT {POLICY_ROW.columns(connection, 'p')}, v.key, v.number, "
        f"{controls.switched_sql('s')}, {controls.held_sql('h')} "
        f"FROM {Policy._meta.db_table} p LEFT JOIN {version} v ON v.id = p.published_id "
        f"WHERE p.organisation_id = %s AND p.active LIMIT 1"
    )


def _active_with_controls(actor: Actor, call: dict[str, Any]) -> Policy | None:
    """The active policy, with its published version's key and number and the call's
    `tool_switched` and `session_held`, in one statement."""
    from django.db import connection

    organisation_id, agent = actor.organisation.pk, str(call.get("agent", ""))
    params = [
        *controls.switched_params(organisation_id, agent, str(call.get("tool", ""))),
        *controls.held_params(
            organisation_id, controls.held_agents(agent), str(call.get("session", ""))
        ),
        organisation_id,
    ]
    row = fetch_one(_active_sql(connection.vendor), params)
    if row is None:
        return None
    policy = POLICY_ROW.instance(row[: len(POLICY_ROW)], connection)
    key, number, switched, held = row[len(POLICY_ROW) :]
    policy.published_key, policy.published_number = key, number
    policy.tool_switched, policy.session_held = bool(switched), bool(held)
    return policy


def _policy_and_controls(
    actor: Actor, call: dict[str, Any], policy: Policy | None, kept: Active | None
) -> tuple[Policy | None, tuple[bool, bool]]:
    """The deciding policy (the active one unless given) and the call's switch and hold.

    On the steady path (the active policy) these come from `kept`, what this process keeps
    while nothing changed (`firewall.active`), or else from one statement: the policy row, its
    published version's key (which keys the compiled copy) and number, and both controls.
    """
    if policy is None:
        flags = kept.flags(call) if kept is not None else None
        if flags is not None:
            return kept.policy, flags  # no active policy (None) is kept too
        found = _active_with_controls(actor, call)
        if found is not None:
            return found, (bool(found.tool_switched), bool(found.session_held))
    flags = (
        _call_controls(actor, call, Organisation.objects.filter(pk=actor.organisation.pk))
        .values_list("tool_switched", "session_held")
        .get()
    )
    return policy, flags


def _kind(actor: Actor, call: dict[str, Any]) -> str:
    """The kind of the called tool, never what the call declares.

    It comes from the catalogue of the organisation's tool-check session the call names (its tool
    kinds applied); a tool no catalogue of this organisation describes counts as a write.
    """
    from guard.models import GuardSession
    from guard.services import _tool_check

    try:
        public_id = uuid.UUID(str(call.get("session", "")))
    except ValueError:
        return "write"
    session = GuardSession.objects.filter(
        organisation=actor.organisation, public_id=public_id
    ).first()
    if session is None:
        return "write"
    known = _tool_check(session).catalogue.tools.get(str(call.get("tool", "")))
    return "write" if known is None else known.kind


def _controls(
    actor: Actor, call: dict[str, Any], result: dict[str, Any], flags: tuple[bool, bool]
) -> dict[str, Any]:
    """Apply what sequence alerts switched on: a tool off for the agent, a session on hold.

    Both only make the answer stricter. Agent and tool names are compared in their normal form
    (`Desk` is `desk`). A held session sends every call that is not a read to a person; whether a
    tool reads is the catalogue's word (`_kind`), never the call's `kind`. `flags` are the switch
    and the hold as read with the policy (`_policy_and_controls`).
    """
    switched, held = flags
    if switched:
        return {**_refusal(call, "tool_disabled"), "policy": result.get("policy")}
    if held and result["decision"] == "allow" and _kind(actor, call) != "read":
        return {
            **result,
            "verdict": "require_approval",
            "decision": "confirm",
            "reasons": [*result["reasons"], "session_held"],
        }
    return result


def _approved(
    actor: Actor, call: dict[str, Any], token: str | None, result: dict[str, Any], *, spend: bool
) -> dict[str, Any]:
    """A call held for a person runs with the token their approval signed: only that call, once.

    The token must cover the whole call as evaluated (a different destination or stage is a
    mismatch, with the parts that differ); it is spent in this call's transaction, so a second
    call with it is refused (`token_spent`). A dry run (`spend=False`) reads it without spending.
    """
    if token is None:
        return result
    from firewall import approvals

    problem, differing = approvals.token_problem(actor.organisation.pk, call, token)
    if problem:
        refusal = {**_refusal(call, problem), "policy": result.get("policy")}
        if differing:
            refusal["detail"] = {"differing": differing}
        return refusal
    if result["verdict"] != "require_approval":
        return result
    if spend and not approvals.spend(actor.organisation.pk, token):
        return {**_refusal(call, "token_spent"), "policy": result.get("policy")}
    return {
        **result,
        "verdict": "allow",
        "decision": "allow",
        "reasons": [*result["reasons"], "confirmed"],
    }


def _decide(compiled: Any, call: dict[str, Any]) -> dict[str, Any]:
    try:
        return compiled().evaluate(call).to_dict()
    except engine.FirewallError:
        # A stored policy that no longer compiles cannot answer: fail closed.
        return _refusal(call, "policy_invalid")


def _draft_shadow(policy: Policy, call: dict[str, Any], live: dict[str, Any]) -> dict | None:
    """The draft's answer to a live call when it differs from the published version's, for the
    call's event: recorded, never enforced. Only the rules are compared (before switches, holds
    and tokens), and a draft that cannot answer is left out."""
    try:
        compiled = compiled_draft_for(policy)
        if compiled is None:
            return None
        decided = compiled.evaluate(call).to_dict()
    except engine.FirewallError:
        return None
    if (decided["verdict"], decided["rule"]) == (live["verdict"], live["rule"]):
        return None
    return {
        "key": str(policy.draft_key),
        "verdict": decided["verdict"],
        "decision": decided["decision"],
        "rule": decided["rule"],
    }


def _sequence_rules(actor: Actor, published: tuple[uuid.UUID, int] | None, *, given: bool) -> Any:
    """The sequence rules that read this call: the active policy's, whichever policy decided."""
    if given:
        return sequence_rules(actor.organisation.pk)
    return sequence_rules_of(published)


@decision_span("firewall")
def firewall_evaluate(
    *,
    actor: Actor,
    call: dict[str, Any],
    policy: Policy | None = None,
    record: bool = True,
    token: str | None = None,
    draft: bool = False,
) -> dict[str, Any]:
    """Decide a call with the policy's published version (the organisation's active policy's by
    default); `policy_version` in the answer and in the event names the version that decided.

    `draft` (a dry run only) decides with the policy's draft instead, as a try does.

    With `record`, every match (enforcing or shadow) is counted for its rule, and every verdict
    other than a plain allow becomes an event, in the same transaction; plain allows become
    events too when the policy has sequence rules, since those rules read every call. Without
    an active policy nothing can decide, so the call is refused (`no_active_policy`), and so it is
    when the policy has no published version (`policy_not_published`).

    Recorded outside a transaction on PostgreSQL (a served request), the call is decided in
    autocommit and its event, with its rules' match counts, is written by the process's event
    writer together with the concurrent decisions' (`console.eventwriter`, group commit); the
    answer is returned only once that transaction has committed. Everywhere else (a token to
    spend, inside a caller's transaction, SQLite, the setting off), the decision and its writes
    are one transaction of their own, as is an approval request's.
    """
    from console import eventwriter

    # What this process keeps of the active policy, taken before the decision's own transaction
    # (inside a caller's, nothing is kept: it may hold writes of its own).
    kept = active(actor.organisation.pk) if policy is None else None
    group = eventwriter.writer() if record and token is None else None
    if group is None:
        with transaction.atomic():
            return _firewall_evaluate(
                actor=actor,
                call=call,
                policy=policy,
                record=record,
                token=token,
                draft=draft,
                kept=kept,
            )
    return _firewall_evaluate(
        actor=actor,
        call=call,
        policy=policy,
        record=record,
        token=None,
        draft=draft,
        group=True,
        kept=kept,
    )


def _firewall_evaluate(
    *,
    actor: Actor,
    call: dict[str, Any],
    policy: Policy | None,
    record: bool,
    token: str | None,
    draft: bool,
    group: bool = False,
    kept: Active | None = None,
) -> dict[str, Any]:

    if draft and record:
        raise ValueError("a draft never decides a recorded call")
    require(actor, "firewall.evaluate" if record else "firewall.read")
    given = policy is not None
    policy, flags = _policy_and_controls(actor, call, policy, kept)
    published = published_of(policy, fresh=not given) if policy is not None else None
    if policy is None:
        result = _refusal(call, "no_active_policy")
    elif draft:
        result = _decide(lambda: compiled_draft(policy), call)
    elif published is None:
        # A policy with no published version has nothing that may decide: fail closed.
        result = _refusal(call, "policy_not_published")
    else:
        result = _decide(lambda: compiled_version(published[0], policy.name), call)
    result["policy"] = policy.name if policy else None
    in_shadow = (
        _draft_shadow(policy, call, result)
        if record and published is not None and policy is not None
        else None
    )
    decided_by = "draft" if draft and policy else (published[1] if published else None)
    result["policy_version"] = decided_by
    result = _controls(actor, call, result, flags)
    result = _approved(actor, call, token, result, spend=record)
    result["policy_version"] = decided_by
    if not record:
        return result
    matches = [(result["rule_id"], "enforce")] if isinstance(result["rule_id"], int) else []
    matches += [
        (s["rule_id"], "shadow") for s in result["shadow"] if isinstance(s.get("rule_id"), int)
    ]
    plain_allow = result["verdict"] == "allow" and not result["shadow"] and in_shadow is None
    event = None
    if not plain_allow or (policy is not None and _sequence_rules(actor, published, given=given)):
        event = _evaluated_event(call, result, in_shadow)
    if group and result["verdict"] != "require_approval":
        from console import eventwriter

        if event is not None or matches:
            also = (lambda: count_matches(matches)) if matches else None
            eventwriter.record(actor.organisation, event, also=also)
        return result
    # Grouped, an approval request is written with its event in a transaction of its own here;
    # otherwise this is already inside the decision's transaction.
    with transaction.atomic() if group else contextlib.nullcontext():
        if result["verdict"] == "require_approval":
            from guard.approvals import firewall_request_create

            result["approval"] = str(
                firewall_request_create(actor=actor, call=call, decision=result).public_id
            )
        count_matches(matches)
        if event is not None:
            event_record(organisation=actor.organisation, **event)
    return result


def _evaluated_event(
    call: dict[str, Any], result: dict[str, Any], in_shadow: Any
) -> dict[str, Any]:
    """The event's fields for an evaluated call (`console.services._event_row`'s)."""
    return dict(
        source="firewall",
        decision=result["decision"],
        verdict=result["verdict"],
        session=str(call.get("session", "")),
        # the normal form: a chain, a hold and a switch are one for `Desk` and `desk`
        agent=name_key(call.get("agent", "")),
        tool=str(call.get("tool", "")),
        stage=str(call.get("stage", "") or ("egress" if call.get("destination") else "tool_call")),
        reasons=result["reasons"],
        rule=result["rule"] or "",
        detail={
            "policy": result["policy"],
            "policy_version": result["policy_version"],
            "call": call,
            "arguments_after": result["arguments"],
            "shadow": result["shadow"],
            "cap_cost_cents": result["cap_cost_cents"],
            "errors": result["errors"],
            **({"draft": in_shadow} if in_shadow else {}),
        },
    )
