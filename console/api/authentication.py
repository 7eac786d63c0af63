"""API keys: `Authorization: Bearer stw_...` (or `X-Api-Key`) names one organisation and one role."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from console.models import ApiKey
from console.services import API_KEY_PREFIX, api_key_authenticate, api_key_cache_keys


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """Stands in for a person on requests made with a key."""

    key: ApiKey
    is_authenticated: bool = True
    is_anonymous: bool = False
    pk: None = None

    def get_username(self) -> str:
        return f"api-key:{self.key.name}"


def _failures_key(address: str) -> str:
    return f"stalwart:api-key-failures:{address}"


def api_key_failures_reset(address: str) -> None:
    """Forget an address's failed key authentications (an admin's unlock, and the tests)."""
    cache.delete(_failures_key(address))


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """A key's organisation and role; an address that keeps sending bad keys is throttled.

    Past `STALWART_API_KEY_FAILURE_LIMIT` failures within `STALWART_API_KEY_FAILURE_WINDOW`
    seconds (counted in the cache, Redis in production, from the first failure), every key from
    that address answers 429 before it is looked up, so guessing keys costs a window per batch.
    """

    def authenticate(self, request):  # noqa: ANN001, ANN201
        header = request.META.get("HTTP_AUTHORIZATION", "")
        plain = ""
        if header.lower().startswith("bearer "):
            plain = header[7:].strip()
        plain = plain or request.META.get("HTTP_X_API_KEY", "").strip()
        if not plain:
            return None
        counter = _failures_key(request.META.get("REMOTE_ADDR", ""))
        window = int(settings.STALWART_API_KEY_FAILURE_WINDOW)
        # The address's failures and the key's cache entries in one round trip.
        entries = api_key_cache_keys(plain)
        found = cache.get_many([counter, *entries])
        if (found.get(counter) or 0) >= int(settings.STALWART_API_KEY_FAILURE_LIMIT):
            raise exceptions.Throttled(
                wait=window, detail="too many failed API-key authentications from this address"
            )
        if not plain.startswith(API_KEY_PREFIX):
            self._failed(counter, window)
            raise exceptions.AuthenticationFailed("the API key is not a Stalwart key")
        key = api_key_authenticate(plain, cached=found if entries else None)
        if key is None:
            self._failed(counter, window)
            raise exceptions.AuthenticationFailed("the API key is unknown or revoked")
        return ApiKeyPrincipal(key=key), key

    @staticmethod
    def _failed(counter: str, window: int) -> None:
        # add() starts the window at the first failure; incr() never extends it.
        if not cache.add(counter, 1, timeout=window):
            try:
                cache.incr(counter)
            except ValueError:
                cache.add(counter, 1, timeout=window)

    def authenticate_header(self, request) -> str:  # noqa: ANN001
        return 'Bearer realm="stalwart"'


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes API keys."""

    target_class = ApiKeyAuthentication
    name = "apiKey"

    def get_security_definition(self, auto_schema):  # noqa: ANN001, ANN201
        return {"type": "http", "scheme": "bearer", "bearerFormat": "stw_<prefix>_<secret>"}
