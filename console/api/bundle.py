"""`GET /v1/bundle`: the organisation's signed bundle, for runtimes that decide in the agent's process.

Conditional and long-polled: with `If-None-Match: "<version>"` the answer is 304 (with a signed
`Stalwart-Bundle-Stamp`) while the version is the same; with `?wait=N` (seconds, at most 30) the
request waits for the version to change and answers as soon as it does (a hold or a switch raised
by a sequence alert, a publish, a setting). `?agent=` keeps only that agent's holds and switches.
`GET /v1/bundle/key` gives the organisation's public keys, which runtimes are configured with: the
current one, the next one (it signs after the next rotation: `POST /v1/bundle/key/rotate`, admins
only) and the previous one during the grace period after a rotation. Every bundle and stamp names the `kid` that signed it.

A request that sends `Stalwart-Bundle-Nonce` (`stalwart_agents.bundle.NONCE_PATTERN`) is answered,
200 or 304, with `Stalwart-Bundle-Fresh`: the nonce and the version answered with, signed, so that
a runtime can tell this answer from one captured from another request and replayed.

A process lets at most `STALWART_BUNDLE_MAX_POLLS` long-polls wait at once (each holds a web
thread); beyond that a long-poll is answered at once, 304 with its stamp (or the new bundle), with
`Retry-After` saying when to ask again.
"""

from __future__ import annotations

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from console import bundle_changes, bundles
from console.access import actor_for_request, require
from console.api.views import ORG_PARAM
from firewall.engine.names import MalformedName, normal_name
from stalwart_agents.bundle import NONCE_PATTERN

AGENT_PARAM = OpenApiParameter(
    "agent", location=OpenApiParameter.QUERY, required=False, description="one agent's controls"
)
WAIT_PARAM = OpenApiParameter(
    "wait",
    location=OpenApiParameter.QUERY,
    required=False,
    type=float,
    description="seconds to wait for a new version (0 to 30) when If-None-Match names this one",
)


def _agent(raw: str | None) -> str:
    if raw is None or raw == "":
        return ""
    if len(raw) > 128:
        raise ValidationError({"agent": ["at most 128 characters"]})
    try:
        return normal_name(raw, "agent")
    except MalformedName as exc:
        raise ValidationError({"agent": [str(exc)]}) from exc


def _wait(raw: str | None) -> float:
    if raw is None or raw == "":
        return 0.0
    try:
        wait = float(raw)
    except ValueError:
        raise ValidationError({"wait": ["seconds, a number from 0 to 30"]}) from None
    if not 0 <= wait <= bundles.MAX_WAIT:
        raise ValidationError({"wait": ["seconds, a number from 0 to 30"]})
    return wait


def _nonce(header: str | None) -> str | None:
    """The runtime's nonce for this request (`Stalwart-Bundle-Nonce`), or None without one."""
    if header is None or header == "":
        return None
    if not re.fullmatch(NONCE_PATTERN, header):
        raise ValidationError({"Stalwart-Bundle-Nonce": ["16 to 64 letters, digits, `-` or `_`"]})
    return header


def _held(header: str | None) -> str | None:
    """The version an `If-None-Match` names (one entity tag, weak or strong), or None."""
    if not header:
        return None
    tag = header.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    tag = tag.strip('"')
    return tag if tag.startswith("sha256:") and len(tag) <= 80 else None


class BundleView(APIView):
    @extend_schema(
        operation_id="bundle",
        parameters=[ORG_PARAM, AGENT_PARAM, WAIT_PARAM],
        responses={200: OpenApiTypes.OBJECT, 304: None},
    )
    def get(self, request):  # noqa: ANN001, ANN201
        """The signed bundle; 304 with a signed stamp while the version named is current."""
        actor = actor_for_request(request)
        require(actor, "guard.check")
        agent = _agent(request.query_params.get("agent"))
        wait = _wait(request.query_params.get("wait"))
        held = _held(request.headers.get("If-None-Match"))
        nonce = _nonce(request.headers.get("Stalwart-Bundle-Nonce"))
        organisation = actor.organisation
        with bundle_changes.poll_slot() as free:
            busy = bool(wait) and held is not None and not free
            content = bundles.bundle_wait(
                organisation=organisation, agent=agent, held=held, wait=0.0 if busy else wait
            )
        if content is None:
            version = str(held)
            response = Response(status=304)
            response["ETag"] = f'"{held}"'
            response["Stalwart-Bundle-Stamp"] = bundles.bundle_stamp(
                organisation=organisation, agent=agent, version=version
            )
        else:
            signed = bundles.bundle_signed(organisation=organisation, agent=agent, content=content)
            version = signed["version"]
            response = Response(signed)
            response["ETag"] = f'"{version}"'
        if nonce is not None:
            response["Stalwart-Bundle-Fresh"] = bundles.bundle_fresh(
                organisation=organisation, agent=agent, version=version, nonce=nonce
            )
        if busy:
            # Too many long-polls wait in this process: answered now, asked again a little later.
            response["Retry-After"] = str(max(1, round(bundle_changes.recheck_every())))
        response["Cache-Control"] = "no-store"
        return response


def _keys_answer(organisation) -> dict:  # noqa: ANN001
    keys = bundles.keys_listed(organisation.pk)
    current = keys[0]
    return {
        "organisation": organisation.slug,
        "public_key": current["public_key"],
        "kid": current["kid"],
        "keys": keys,
    }


class BundleKeyView(APIView):
    @extend_schema(operation_id="bundle_key", parameters=[ORG_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request):  # noqa: ANN001, ANN201
        """The organisation's bundle public keys (`ed25519:<base64>`): configure runtimes with
        them. `public_key` is the key that signs now; `keys` lists it, the `next` one (trust it
        too before a rotation) and the `previous` one while the grace period after a rotation
        lasts."""
        actor = actor_for_request(request)
        require(actor, "guard.check")
        return Response(_keys_answer(actor.organisation))


class BundleKeyRotateView(APIView):
    @extend_schema(
        operation_id="bundle_key_rotate",
        parameters=[ORG_PARAM],
        request=None,
        responses=OpenApiTypes.OBJECT,
    )
    def post(self, request):  # noqa: ANN001, ANN201
        """A new bundle key for the organisation (admins only, audited): it signs every bundle,
        stamp and approval grant from now on; the previous key stays listed for the grace period."""
        actor = actor_for_request(request)
        require(actor, "bundle_keys.rotate")
        bundles.bundle_key_rotate(actor=actor)
        return Response(_keys_answer(actor.organisation))
