"""Signing keys: one secret the server or runtime holds, split into a key per purpose.

The history and the confirmation tokens are signed with different keys derived from the one secret
(HMAC-SHA256 of the purpose under the secret), so a signature made for one purpose is never valid
for another. The agent never holds the secret.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from .errors import KeyTooShort

MIN_KEY_BYTES = 16


@dataclass(frozen=True)
class Keys:
    """The derived keys: `history` signs entries, `token` signs confirmation and plan tokens."""

    history: bytes
    token: bytes

    @classmethod
    def from_secret(cls, secret: bytes | str) -> Keys:
        if isinstance(secret, str):
            secret = secret.encode("utf-8")
        if not isinstance(secret, bytes) or len(secret) < MIN_KEY_BYTES:
            raise KeyTooShort(f"a signing key needs at least {MIN_KEY_BYTES} bytes")
        return cls(history=derive(secret, "history"), token=derive(secret, "token"))

    def __repr__(self) -> str:
        return "Keys(...)"


def derive(secret: bytes, purpose: str) -> bytes:
    """The key for one purpose, derived from the secret."""
    return hmac.new(secret, f"stalwart/{purpose}/1".encode(), hashlib.sha256).digest()
