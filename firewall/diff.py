"""Two contents of a policy compared rule by rule: what was added, removed and changed.

A rule is the same rule in both when it has the same id (its draft row, kept across edits and
renames), else the same name (a rule a rollback or an import brought back under a new row). Each
rule is said in the one line of `firewall.display`; a changed rule names the fields that changed,
since a line leaves some out (notes, mode, priority).
"""

from __future__ import annotations

from typing import Any

from firewall.display import rule_text


def _spec(rule: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rule.items() if k != "id"}


def _pair(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Indexes (old, new) of the rules that are one rule in both: by id first, then by name."""
    pairs: list[tuple[int, int]] = []
    left, right = set(range(len(old))), set(range(len(new)))
    old_ids = {r.get("id"): i for i, r in enumerate(old) if isinstance(r.get("id"), int)}
    for j, rule in enumerate(new):
        i = old_ids.get(rule.get("id")) if isinstance(rule.get("id"), int) else None
        if i is not None and i in left:
            pairs.append((i, j))
            left.discard(i)
            right.discard(j)
    old_names = {old[i].get("name"): i for i in sorted(left)}
    for j in sorted(right):
        i = old_names.get(new[j].get("name"))
        if i is not None and i in left:
            pairs.append((i, j))
            left.discard(i)
    return sorted(pairs, key=lambda p: p[1])


def _entry(rule: dict[str, Any]) -> dict[str, Any]:
    return {"name": rule.get("name", ""), "text": rule_text(rule), "rule": _spec(rule)}


def rules_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, list[dict]]:
    """`added` and `removed` rules, each with its line; `changed` ones with both lines and fields."""
    pairs = _pair(old, new)
    paired_old, paired_new = {i for i, _ in pairs}, {j for _, j in pairs}
    changed = []
    for i, j in pairs:
        before, after = _spec(old[i]), _spec(new[j])
        if before == after:
            continue
        fields = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        changed.append(
            {
                "name": after.get("name", ""),
                "old_name": before.get("name", ""),
                "old_text": rule_text(before),
                "new_text": rule_text(after),
                "fields": fields,
                "old": before,
                "new": after,
            }
        )
    return {
        "added": [_entry(r) for j, r in enumerate(new) if j not in paired_new],
        "removed": [_entry(r) for i, r in enumerate(old) if i not in paired_old],
        "changed": changed,
    }


def policy_diff(
    old_default: str, old: list[dict[str, Any]], new_default: str, new: list[dict[str, Any]]
) -> dict[str, Any]:
    """The rules' diff, and the default verdict's change if any (None when it is the same)."""
    diff: dict[str, Any] = rules_diff(old, new)
    diff["default_verdict"] = (
        None if old_default == new_default else {"old": old_default, "new": new_default}
    )
    diff["same"] = not (
        diff["added"] or diff["removed"] or diff["changed"] or diff["default_verdict"]
    )
    return diff
