"""Bundles: what a runtime needs to decide for one organisation, signed by the console.

A bundle is a JSON envelope (`stalwart-bundle/1`):

    {"format", "organisation", "agent", "version", "issued_at", "content", "signature"}

- `content` holds what decides: the organisation's settings, the published firewall policy
  version, the compiled rulebook records the console holds, the write switches, the sessions on
  hold and the tools switched off. `version` is `sha256:` and the digest of `content`'s canonical
  JSON (RFC 8785), so the same content always has the same version and an ETag can name it.
- `issued_at` is when the console signed it (seconds since the epoch, the console's clock). Every
  answer of the console is signed anew, a 304 too (its *stamp*: the version and a new `issued_at`,
  signed), so a live console keeps vouching for the version it last sent.
- `signature` is Ed25519 over the canonical JSON of the envelope without `signature`, under the
  organisation's bundle key, with `kid`, the id of the key that signed (`key_id`: the start of the
  digest of its public key). The console holds the private key; a runtime is given the public key
  (`ed25519:<base64>`), or several while a rotation rolls out, and refuses whatever does not verify
  under one of them. The `kid` only picks the key: one the runtime does not trust is refused
  without trying the others, and changing it in flight cannot make a signature verify.

A runtime counts a bundle's age from the last signature it verified that was *newer* than every
one before it (by `issued_at`): a bundle or a stamp replayed from the past verifies but refreshes
nothing, so it cannot keep an old bundle alive. No clock is compared across machines.

That ordering says nothing to a runtime that has verified nothing yet (one that starts), so every
answer is also bound to the request it answers: the runtime sends a new random nonce with each
request (`Stalwart-Bundle-Nonce`) and the console signs it with the organisation, the agent and
the version it answers with (`Stalwart-Bundle-Fresh: <kid> <signature>`, `stalwart-bundle-fresh/1`).
A bundle or a stamp captured from another request, however validly signed, comes without the
proof for this request's nonce and is refused.

Approval grants (`stalwart-grant/1`) are signed by the same key: the console's word that a person
approved exactly one call of a session deciding in the agent's process (see `connected.py`).

This module imports nothing of Django: the console and the SDK share it.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guard.engine.canonical import canonical_bytes

FORMAT = "stalwart-bundle/1"
STAMP_FORMAT = "stalwart-bundle-stamp/1"
FRESH_FORMAT = "stalwart-bundle-fresh/1"
#: A request's nonce: 16 to 64 letters, digits, `-` or `_` (the runtime sends 32 hex digits).
NONCE_PATTERN = r"[A-Za-z0-9_-]{16,64}"
GRANT_FORMAT = "stalwart-grant/1"
ALGORITHM = "ed25519"
#: The envelope's fields; a bundle with any other, or without one, is refused.
FIELDS = ("format", "organisation", "agent", "version", "issued_at", "content", "signature")
#: What `content` holds; each is always present (empty when the console holds none).
CONTENT = ("settings", "firewall", "rulebooks", "writes", "holds", "switches")
#: The most holds (and switches) a bundle may carry: the console sends one more where there are
#: more, and such a bundle is refused, so nothing is decided without a hold it left out.
MAX_CONTROLS = 10_000


class BundleRefused(Exception):
    """A bundle, a stamp or a grant that does not verify, or is not well formed; nothing decides from it."""


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:  # pragma: no cover - the extra is installed wherever bundles are
        raise BundleRefused(
            "bundles need the cryptography package: pip install 'stalwart[bundles]'"
        ) from exc
    return ed25519


def version_of(content: Any) -> str:
    """A content's version: `sha256:` and the digest of its canonical JSON."""
    return "sha256:" + hashlib.sha256(canonical_bytes(content)).hexdigest()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def key_id(public: str) -> str:
    """The id of a public key (`kid`): 16 hex digits of the SHA-256 of `ed25519:<base64>`."""
    return hashlib.sha256(public.encode("utf-8")).hexdigest()[:16]


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise BundleRefused(f"{what}: is not base64") from exc


# -- keys ---------------------------------------------------------------------------------------


class SigningKey:
    """The console's side: an Ed25519 private key made from a 32-byte seed."""

    def __init__(self, seed: bytes) -> None:
        if len(seed) != 32:
            raise ValueError("an Ed25519 seed is 32 bytes")
        self._key = _crypto().Ed25519PrivateKey.from_private_bytes(seed)
        from cryptography.hazmat.primitives import serialization

        raw = self._key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.public = f"{ALGORITHM}:{_b64(raw)}"
        self.kid = key_id(self.public)

    def sign(self, message: bytes) -> str:
        return _b64(self._key.sign(message))


#: At most this many public keys are trusted at once (a rotation needs two).
MAX_KEYS = 8


def public_keys(given: Any) -> list[str]:
    """The public keys a runtime trusts: one `ed25519:<base64>`, several separated by commas, or a
    list of them (a host trusting the old key and the new while a rotation rolls out)."""
    if isinstance(given, str):
        keys = [part.strip() for part in given.split(",") if part.strip()]
    elif isinstance(given, (list, tuple)) and all(isinstance(part, str) for part in given):
        keys = [part.strip() for part in given if part.strip()]
    else:
        raise BundleRefused(
            "bundle key: is `ed25519:<base64>`, several separated by commas, or a list"
        )
    if not keys:
        raise BundleRefused("bundle key: is `ed25519:` and the key in base64")
    if len(keys) > MAX_KEYS:
        raise BundleRefused(f"bundle key: at most {MAX_KEYS} keys, not {len(keys)}")
    return keys


class VerifyKey:
    """The runtime's side: the organisation's public keys it trusts (`public_keys`), by key id."""

    def __init__(self, public: Any) -> None:
        self._keys: dict[str, Any] = {}
        for index, text in enumerate(public_keys(public)):
            what = (
                "bundle key"
                if isinstance(public, str) and "," not in public
                else f"bundle key[{index}]"
            )
            if not text.startswith(f"{ALGORITHM}:"):
                raise BundleRefused(f"{what}: is `ed25519:` and the key in base64")
            raw = _unb64(text.split(":", 1)[1].strip(), what)
            if len(raw) != 32:
                raise BundleRefused(f"{what}: an Ed25519 public key is 32 bytes")
            self._keys[key_id(text)] = _crypto().Ed25519PublicKey.from_public_bytes(raw)
        self.public = ",".join(public_keys(public))

    @property
    def kids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def verify(self, message: bytes, signature: Any, what: str, *, kid: Any = None) -> None:
        """Verified under the key `kid` names (refused when this runtime does not trust it), or,
        for a signature that names none, under any key trusted."""
        from cryptography.exceptions import InvalidSignature

        if not isinstance(signature, str):
            raise BundleRefused(f"{what}: has no signature")
        if kid is not None:
            if not isinstance(kid, str) or kid not in self._keys:
                raise BundleRefused(
                    f"{what}: the signature does not verify: it is by the key `{str(kid)[:32]}`, "
                    "which this runtime does not trust (a rotated key: give it the new public "
                    "key, GET /v1/bundle/key)"
                )
            candidates = [self._keys[kid]]
        else:
            candidates = list(self._keys.values())
        raw = _unb64(signature, f"{what}: signature")
        for key in candidates:
            try:
                key.verify(raw, message)
            except InvalidSignature:
                continue
            return
        raise BundleRefused(f"{what}: the signature does not verify")


# -- signing (the console) ----------------------------------------------------------------------


def _signed_part(envelope: Mapping[str, Any]) -> bytes:
    return canonical_bytes({k: v for k, v in envelope.items() if k != "signature"})


def sign_bundle(
    key: SigningKey,
    *,
    organisation: str,
    agent: str,
    content: Mapping[str, Any],
    issued_at: float | None = None,
) -> dict[str, Any]:
    """The signed envelope of `content` (see the module docstring)."""
    envelope: dict[str, Any] = {
        "format": FORMAT,
        "organisation": organisation,
        "agent": agent,
        "version": version_of(content),
        "issued_at": round(time.time() if issued_at is None else issued_at, 6),
        "content": dict(content),
    }
    envelope["signature"] = {
        "alg": ALGORITHM,
        "kid": key.kid,
        "value": key.sign(_signed_part(envelope)),
    }
    return envelope


def _stamp_message(organisation: str, agent: str, version: str, issued_at: float) -> bytes:
    return canonical_bytes(
        {
            "format": STAMP_FORMAT,
            "organisation": organisation,
            "agent": agent,
            "version": version,
            "issued_at": issued_at,
        }
    )


def sign_stamp(
    key: SigningKey, *, organisation: str, agent: str, version: str, issued_at: float | None = None
) -> str:
    """The `Stalwart-Bundle-Stamp` header of a 304: `<version> <issued_at> <kid> <signature>`."""
    at = round(time.time() if issued_at is None else issued_at, 6)
    signature = key.sign(_stamp_message(organisation, agent, version, at))
    return f"{version} {at!r} {key.kid} {signature}"


def _fresh_message(organisation: str, agent: str, version: str, nonce: str) -> bytes:
    return canonical_bytes(
        {
            "format": FRESH_FORMAT,
            "organisation": organisation,
            "agent": agent,
            "version": version,
            "nonce": nonce,
        }
    )


def sign_fresh(key: SigningKey, *, organisation: str, agent: str, version: str, nonce: str) -> str:
    """The `Stalwart-Bundle-Fresh` header of an answer (200 or 304) to a request that sent
    `nonce`: `<kid> <signature>` over the version answered with and the nonce."""
    return f"{key.kid} {key.sign(_fresh_message(organisation, agent, version, nonce))}"


def sign_grant(key: SigningKey, grant: Mapping[str, Any]) -> str:
    """An approval grant: its canonical JSON (naming the `kid` that signs it) in base64, a dot,
    and the signature."""
    body = canonical_bytes({**dict(grant), "format": GRANT_FORMAT, "kid": key.kid})
    return f"{_b64(body)}.{key.sign(body)}"


def call_digest(call: Mapping[str, Any]) -> str:
    """What a grant names of the call: the digest of its tool, agent and arguments."""
    return version_of(
        {
            "tool": call.get("tool"),
            "agent": call.get("agent") or "",
            "arguments": call.get("arguments") or {},
        }
    )


# -- verifying (the runtime) --------------------------------------------------------------------


@dataclass(frozen=True)
class Bundle:
    """A verified bundle, read for deciding."""

    organisation: str
    agent: str
    version: str
    issued_at: float
    content: Mapping[str, Any]
    holds: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    switches: frozenset[tuple[str, str]] = field(default_factory=frozenset)

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.content.get("settings") or {})

    @property
    def firewall(self) -> Mapping[str, Any] | None:
        return self.content.get("firewall")

    @property
    def rulebooks(self) -> Mapping[str, Any]:
        return self.content.get("rulebooks") or {}

    def held(self, agent: str, session: str) -> bool:
        """Whether the console holds this session: every later write waits for a person."""
        from firewall.engine.names import name_key

        return (name_key(agent), session) in self.holds

    def tool_switched(self, agent: str, tool: str) -> bool:
        """Whether a sequence alert switched the tool off for the agent."""
        from firewall.engine.names import name_key

        return (name_key(agent), name_key(tool)) in self.switches

    def writes_enabled(self, tool: str) -> bool:
        """Whether writes of the tool may run: neither the organisation's nor the tool's switch is off."""
        writes = self.content.get("writes") or {}
        return bool(writes.get("", True)) and bool(writes.get(tool, True))


def _well_formed(envelope: Any) -> Mapping[str, Any]:
    if not isinstance(envelope, Mapping):
        raise BundleRefused("bundle: is not a JSON object")
    fields = set(envelope)
    if fields != set(FIELDS):
        missing, extra = sorted(set(FIELDS) - fields), sorted(fields - set(FIELDS))
        raise BundleRefused(f"bundle: missing {missing}, unknown {extra}")
    if envelope["format"] != FORMAT:
        raise BundleRefused(f"bundle.format: is {FORMAT}, not `{envelope['format']}`")
    for name in ("organisation", "agent", "version"):
        if not isinstance(envelope[name], str):
            raise BundleRefused(f"bundle.{name}: is text")
    issued = envelope["issued_at"]
    if isinstance(issued, bool) or not isinstance(issued, (int, float)):
        raise BundleRefused("bundle.issued_at: is a number")
    content = envelope["content"]
    if not isinstance(content, Mapping) or set(content) != set(CONTENT):
        raise BundleRefused(f"bundle.content: holds exactly {list(CONTENT)}")
    signature = envelope["signature"]
    if not isinstance(signature, Mapping) or signature.get("alg") != ALGORITHM:
        raise BundleRefused(f"bundle.signature: is {ALGORITHM}")
    if not isinstance(signature.get("kid", ""), str):
        raise BundleRefused("bundle.signature.kid: is text")
    return envelope


def _pairs(items: Any, first: str, second: str, what: str) -> frozenset[tuple[str, str]]:
    if not isinstance(items, list):
        raise BundleRefused(f"bundle.content.{what}: is a list")
    if len(items) > MAX_CONTROLS:
        raise BundleRefused(
            f"bundle.content.{what}: more than {MAX_CONTROLS:,} in force, more than a runtime "
            "decides from; release some on the console"
        )
    found = set()
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or not all(
            isinstance(item.get(name), str) for name in (first, second)
        ):
            raise BundleRefused(f"bundle.content.{what}[{index}]: names `{first}` and `{second}`")
        found.add((item[first], item[second]))
    return frozenset(found)


def verify_bundle(envelope: Any, key: VerifyKey, *, agent: str | None = None) -> Bundle:
    """The bundle, once its form, its signature and its version verify; `BundleRefused` else.

    `agent`, when given, must be the agent the bundle was made for (or the bundle made for all);
    given as `""`, only the bundle made for all is taken (another agent's leaves out the
    switches and holds of every other agent).
    """
    envelope = _well_formed(envelope)
    signature = envelope["signature"]
    key.verify(_signed_part(envelope), signature.get("value"), "bundle", kid=signature.get("kid"))
    content = envelope["content"]
    if version_of(content) != envelope["version"]:
        raise BundleRefused("bundle.version: is not the digest of its content")
    if agent is not None and envelope["agent"] not in ("", agent):
        raise BundleRefused(f"bundle.agent: is `{envelope['agent']}`, not `{agent}`")
    if not isinstance(content["writes"], Mapping):
        raise BundleRefused("bundle.content.writes: maps tools to true or false")
    return Bundle(
        organisation=envelope["organisation"],
        agent=envelope["agent"],
        version=envelope["version"],
        issued_at=float(envelope["issued_at"]),
        content=content,
        holds=_pairs(content["holds"], "agent", "session", "holds"),
        switches=_pairs(content["switches"], "agent", "tool", "switches"),
    )


def verify_stamp(header: Any, key: VerifyKey, bundle: Bundle) -> float:
    """The `issued_at` of a 304's stamp for the bundle held; `BundleRefused` when it does not
    verify or names another version."""
    if not isinstance(header, str) or header.count(" ") not in (2, 3):
        raise BundleRefused("bundle stamp: is `<version> <issued_at> <kid> <signature>`")
    parts = header.split(" ")
    version, at_text, signature = parts[0], parts[1], parts[-1]
    kid = parts[2] if len(parts) == 4 else None
    if version != bundle.version:
        raise BundleRefused("bundle stamp: names another version than the one held")
    try:
        at = float(at_text)
    except ValueError as exc:
        raise BundleRefused("bundle stamp: issued_at is not a number") from exc
    message = _stamp_message(bundle.organisation, bundle.agent, version, round(at, 6))
    key.verify(message, signature, "bundle stamp", kid=kid)
    return at


def new_nonce() -> str:
    """A request's nonce (`Stalwart-Bundle-Nonce`): 128 random bits in hex."""
    import secrets

    return secrets.token_hex(16)


def verify_fresh(header: Any, key: VerifyKey, bundle: Bundle, nonce: str) -> None:
    """That the console answered the request that sent `nonce` with the version of `bundle`
    (`Stalwart-Bundle-Fresh`); `BundleRefused` else: an answer captured from another request."""
    if not isinstance(header, str) or header.count(" ") != 1:
        raise BundleRefused(
            "bundle: the answer is not bound to this request (no `Stalwart-Bundle-Fresh` "
            "`<kid> <signature>`): replayed, or from a console older than this runtime"
        )
    kid, signature = header.split(" ")
    message = _fresh_message(bundle.organisation, bundle.agent, bundle.version, nonce)
    key.verify(message, signature, "bundle: the proof of this request", kid=kid)


def verify_grant(token: Any, key: VerifyKey) -> dict[str, Any]:
    """The content of an approval grant the console signed; `BundleRefused` else."""
    import json

    if not isinstance(token, str) or token.count(".") != 1:
        raise BundleRefused("approval grant: is `<content>.<signature>`")
    body_text, signature = token.split(".")
    body = _unb64(body_text, "approval grant")
    try:
        grant = json.loads(body)
    except ValueError as exc:
        raise BundleRefused("approval grant: is not JSON") from exc
    # The kid only picks the key; the signature over the whole body (the kid in it) decides.
    kid = grant.get("kid") if isinstance(grant, dict) else None
    key.verify(body, signature, "approval grant", kid=kid)
    if not isinstance(grant, dict) or grant.get("format") != GRANT_FORMAT:
        raise BundleRefused(f"approval grant: is not {GRANT_FORMAT}")
    return grant
