"""API keys: `Authorization: Bearer stw_...` (or `X-Api-Key`) names one organisation and one role."""

from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from console.models import ApiKey
from console.services import API_KEY_PREFIX, api_key_authenticate


@dataclass(frozen=True)
class ApiKeyPrincipal:
    """Stands in for a person on requests made with a key."""

    key: ApiKey
    is_authenticated: bool = True
    is_anonymous: bool = False
    pk: None = None

    def get_username(self) -> str:
        return f"api-key:{self.key.name}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):  # noqa: ANN001, ANN201
        header = request.META.get("HTTP_AUTHORIZATION", "")
        plain = ""
        if header.lower().startswith("bearer "):
            plain = header[7:].strip()
        plain = plain or request.META.get("HTTP_X_API_KEY", "").strip()
        if not plain:
            return None
        if not plain.startswith(API_KEY_PREFIX):
            raise exceptions.AuthenticationFailed("the API key is not a Stalwart key")
        key = api_key_authenticate(plain)
        if key is None:
            raise exceptions.AuthenticationFailed("the API key is unknown or revoked")
        return ApiKeyPrincipal(key=key), key

    def authenticate_header(self, request) -> str:  # noqa: ANN001
        return 'Bearer realm="stalwart"'


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes API keys."""

    target_class = ApiKeyAuthentication
    name = "apiKey"

    def get_security_definition(self, auto_schema):  # noqa: ANN001, ANN201
        return {"type": "http", "scheme": "bearer", "bearerFormat": "stw_<prefix>_<secret>"}
