"""The head of each session's history, kept beside it; histories and ledger keys moved to RFC 8785.

Canonical JSON became RFC 8785 (JCS). The two forms write most data alike; they differ on numbers
written with an exponent or beyond 1e16 (`1e+16` against `10000000000000000`, `1e-07` against
`1e-7`, `1e-06` against `0.000001`) and on keys sorted by code point against UTF-16 code units. So:

- every stored history whose chain verifies under the old form is signed again under the new one
  (same key, same entries); a history that does not verify is left as it is, never re-signed, so it
  is refused as before;
- every session gets its head (`{session, length, mac}`) from the history it now holds;
- a ledger key that the old form derived from the row's own arguments is derived again (a row whose
  arguments were redacted cannot be, and keeps its key).

The old form is frozen here, so this migration means the same whatever the engine later becomes.
"""

import hashlib
import hmac
import json
import math

from django.conf import settings
from django.db import migrations, models

OLD_FORMAT = "stalwart-history/1"


def _old_normalise(value):
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not finite")
        if value.is_integer() and abs(value) <= 2**53:
            return int(value)
        return value
    if isinstance(value, dict):
        return {key: _old_normalise(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_old_normalise(item) for item in value]
    return value


def _old_canonical(value) -> str:
    return json.dumps(
        _old_normalise(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def _history_key(organisation_id: int) -> bytes:
    # guard.services.session_key, then guard.engine.keys.derive(..., "history").
    secret = hmac.new(
        settings.SECRET_KEY.encode(), f"stalwart-guard:{organisation_id}".encode(), hashlib.sha256
    ).digest()
    return hmac.new(secret, b"stalwart/history/1", hashlib.sha256).digest()


def _old_chain_holds(history, key: bytes) -> bool:
    previous = ""
    session = history.get("session")
    for index, entry in enumerate(history.get("entries", [])):
        try:
            message = (
                f'["{OLD_FORMAT}",{json.dumps(session, ensure_ascii=False)},{index},'
                f'{_old_canonical(entry["content"])},"{previous}"]'
            )
        except (KeyError, TypeError, ValueError):
            return False
        mac = hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()
        if entry.get("index") != index or not hmac.compare_digest(mac, str(entry.get("mac"))):
            return False
        previous = mac
    return True


def _own_head(history) -> dict:
    entries = history.get("entries") if isinstance(history, dict) else None
    entries = entries if isinstance(entries, list) else []
    last = entries[-1] if entries and isinstance(entries[-1], dict) else {}
    return {
        "session": history.get("session") if isinstance(history, dict) else None,
        "length": len(entries),
        "mac": last.get("mac", ""),
    }


def forwards(apps, schema_editor):
    from guard.engine import GuardError
    from guard.engine.canonical import canonical_bytes
    from guard.engine.history import History

    GuardSession = apps.get_model("guard", "GuardSession")
    Effect = apps.get_model("guard", "Effect")
    for session in GuardSession.objects.all().iterator():
        history = session.history if isinstance(session.history, dict) else {}
        key = _history_key(session.organisation_id)
        if (
            history.get("session") == str(session.public_id)
            and isinstance(history.get("entries"), list)
            and _old_chain_holds(history, key)
        ):
            try:
                signed = History(str(session.public_id), key)
                for entry in history["entries"]:
                    signed.append(entry["content"])
            except GuardError:
                signed = None  # content with no canonical form any more: it is refused, as it must
            if signed is not None:
                session.history = signed.to_json()
        session.head = _own_head(session.history)
        session.save(update_fields=["history", "head"])
    for effect in Effect.objects.select_related("session").iterator():
        if effect.session is None:
            continue
        material = {
            "v": 1,
            "organisation": str(effect.organisation_id),
            "session": str(effect.session.public_id),
            "tool": effect.tool,
            "arguments": effect.arguments,
            "step": effect.step,
            "compensation_of": effect.compensation_of,
        }
        try:
            old = "ik1-" + hashlib.sha256(_old_canonical(material).encode("utf-8")).hexdigest()
            new = "ik1-" + hashlib.sha256(canonical_bytes(material)).hexdigest()
        except (GuardError, TypeError, ValueError):
            continue
        if old == effect.key and new != old:
            effect.key = new
            effect.save(update_fields=["key"])


class Migration(migrations.Migration):
    dependencies = [
        ("guard", "0003_approval_asker_and_spent_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="guardsession",
            name="head",
            field=models.JSONField(default=dict),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
