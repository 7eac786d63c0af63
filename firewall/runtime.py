"""Compiled policies: each published version compiled once per process, keyed by its `key`.

A version never changes, so its key names one content forever and a cached copy is exact; a
publish points the policy at a new version, whose key is a miss, compiled on the first request
that reads it. The draft is compiled only when asked (a try, a replay), never cached.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import OrderedDict
from typing import Any

from firewall import engine
from firewall.models import Policy, PolicyVersion

_CACHE_SIZE = 64
_cache: OrderedDict[str, engine.CompiledPolicy] = OrderedDict()
_lock = threading.Lock()


def draft_rules(policy: Policy) -> list[dict[str, Any]]:
    """The draft's rules in evaluation order, each with its row's id."""
    return [rule.as_json() for rule in policy.rules.order_by("priority", "id")]


def policy_json(policy: Policy) -> dict:
    """The draft in the policy format."""
    return {
        "name": policy.name,
        "default_verdict": policy.default_verdict,
        "rules": draft_rules(policy),
    }


def version_json(version: PolicyVersion, name: str) -> dict:
    """A published version in the policy format (the file export writes and import reads)."""
    return {"name": name, "default_verdict": version.default_verdict, "rules": version.rules}


def content_digest(default_verdict: str, rules: list[dict[str, Any]]) -> str:
    """What decides, without the rules' ids: two contents with one digest decide every call alike."""
    kept = [{k: v for k, v in rule.items() if k != "id"} for rule in rules]
    text = json.dumps(
        {"default_verdict": default_verdict, "rules": kept}, sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(text.encode()).hexdigest()


def published_of(policy: Policy, *, fresh: bool = False) -> tuple[uuid.UUID, int] | None:
    """The key and number of the version that decides for the policy, or None if none is published.

    `fresh` says the row was read with the version's key and number (`published_key`,
    `published_number`, as the steady statement reads them); otherwise they are read again, since a
    caller may hold the policy from before a publish.
    """
    if fresh and hasattr(policy, "published_key"):
        key, number = policy.published_key, policy.published_number
    else:
        row = (
            Policy.objects.filter(pk=policy.pk)
            .values_list("published__key", "published__number")
            .first()
        )
        key, number = row if row else (None, None)
    if key is None:
        return None
    return (key if isinstance(key, uuid.UUID) else uuid.UUID(str(key))), int(number)


def compiled_version(key: uuid.UUID, name: str = "policy") -> engine.CompiledPolicy:
    """The compiled form of the published version with this key.

    Every stored rule passed the validator, so compiling cannot fail on content the console wrote;
    if it ever does (a version edited behind the ORM's back), the error propagates and nothing
    decides.
    """
    cache_key = str(key)
    with _lock:
        hit = _cache.get(cache_key)
        if hit is not None:
            _cache.move_to_end(cache_key)
            return hit
    version = PolicyVersion.objects.get(key=key)
    compiled = engine.compile_policy(version_json(version, name))
    with _lock:
        _cache[cache_key] = compiled
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


def compiled_draft(policy: Policy) -> engine.CompiledPolicy:
    """The draft compiled now (uncached: drafts change with every edit)."""
    return engine.compile_policy(policy_json(policy))


_drafts: OrderedDict[str, engine.CompiledPolicy] = OrderedDict()


def compiled_draft_for(policy: Policy) -> engine.CompiledPolicy | None:
    """The draft compiled, cached by the policy's `draft_key` as read with the row; None when
    there is no draft to run in shadow, or when the draft changed while it was being read.

    Every change to the draft replaces the key in the transaction that changes it, so a key read
    again after the rules, and still the same, means the rules read are exactly that key's.
    """
    key = getattr(policy, "draft_key", None)
    if key is None:
        return None
    cache_key = str(key)
    with _lock:
        hit = _drafts.get(cache_key)
        if hit is not None:
            _drafts.move_to_end(cache_key)
            return hit
    compiled = compiled_draft(policy)
    if Policy.objects.filter(pk=policy.pk).values_list("draft_key", flat=True).first() != key:
        return None
    with _lock:
        _drafts[cache_key] = compiled
        while len(_drafts) > _CACHE_SIZE:
            _drafts.popitem(last=False)
    return compiled
