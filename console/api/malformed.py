"""The views that decide calls record a body refused at the edge as a refused call (an event)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from rest_framework.exceptions import APIException

from console.api.parsers import MalformedBody


class RecordsMalformedCalls:
    """Mixin for a decision endpoint's APIView: a malformed body still leaves an event.

    The body is parsed before authentication (a session's CSRF check would parse it anyway), the
    refusal is held until the caller is known, then recorded by `record_malformed` and raised:
    an unauthenticated or unauthorised caller gets its 401/403 and leaves nothing.
    """

    def initial(self, request, *args: Any, **kwargs: Any) -> None:  # noqa: ANN001
        refused: Exception | None = None
        try:
            request.data  # noqa: B018
        except (APIException, RequestDataTooBig) as exc:
            refused = exc
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        if refused is None:
            return
        if isinstance(refused, MalformedBody):
            self.record_malformed(request, refused, **kwargs)
        else:
            self.record_malformed(
                request, MalformedBody("body", str(getattr(refused, "detail", refused))), **kwargs
            )
        raise refused

    def record_malformed(self, request, refused: MalformedBody, **kwargs: Any) -> None:  # noqa: ANN001
        raise NotImplementedError
