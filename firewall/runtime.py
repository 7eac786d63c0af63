"""Compiled policies, kept per process and rebuilt when a policy's revision changes."""

from __future__ import annotations

import threading
from collections import OrderedDict

from firewall import engine
from firewall.models import Policy

_CACHE_SIZE = 64
_cache: OrderedDict[str, engine.CompiledPolicy] = OrderedDict()
_lock = threading.Lock()


def policy_json(policy: Policy) -> dict:
    return {
        "name": policy.name,
        "default_verdict": policy.default_verdict,
        "rules": [rule.as_json() for rule in policy.rules.order_by("priority", "id")],
    }


def compiled_for(policy: Policy, *, fresh: bool = False) -> engine.CompiledPolicy:
    """The compiled form of the policy at its current version.

    The cache is keyed by the policy's `version`, which every change to it or its rules replaces,
    so a change is compiled once, on the first request that reads the new version. `fresh` says
    the row was read in this transaction (its version is current); otherwise the version is read
    again, since a caller may hold the policy from before a change.

    Every stored rule passed the validator, so compiling cannot fail on content the console wrote;
    if it ever does (a rule edited behind the ORM's back), the error propagates and nothing decides.
    """
    if fresh:
        version = policy.version
    else:
        version = Policy.objects.filter(pk=policy.pk).values_list("version", flat=True).first()
    key = str(version)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    compiled = engine.compile_policy(policy_json(policy))
    with _lock:
        _cache[key] = compiled
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled
