"""Traces of decisions: with the `otel` extra and `OTEL_EXPORTER_OTLP_ENDPOINT` set, one span per decision.

The same wrapper times every decision for `/metrics` (`stalwart_decision_seconds`, console/metrics.py).

`decision_span(source)` wraps a service that decides a call (the tool check's `session_check`, the
firewall's `firewall_evaluate`) in a span named `stalwart.<source>`, and sets the answer on it:
`stalwart.decision`, `stalwart.verdict`, `stalwart.rule`, `stalwart.reasons`, with the
organisation and the tool. Values go through `console.redaction.redact` first; arguments are never
put on a span. Without the extra or the endpoint nothing is traced and the wrapper costs one check.
The exporter is OTLP over HTTP, configured by OpenTelemetry's own `OTEL_*` variables.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from console.redaction import redact

_lock = threading.Lock()
_tracer: Any = None
_configured = False


def use(provider: Any) -> None:
    """Trace with `provider` (a `TracerProvider`), or stop tracing with None: the tests' way in."""
    global _tracer, _configured
    with _lock:
        _tracer = provider.get_tracer("stalwart") if provider is not None else None
        _configured = True


def _from_environment() -> Any:
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        import logging

        logging.getLogger(__name__).warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not installed: "
            "pip install 'stalwart[otel]'"
        )
        return None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "stalwart")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider.get_tracer("stalwart")


def tracer() -> Any:
    global _tracer, _configured
    if not _configured:
        with _lock:
            if not _configured:
                _tracer = _from_environment()
                _configured = True
    return _tracer


def _attributes(actor: Any, call: Any, result: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    organisation = getattr(getattr(actor, "organisation", None), "slug", None)
    if organisation:
        attributes["stalwart.organisation"] = organisation
    if isinstance(call, dict) and isinstance(call.get("tool"), str):
        attributes["stalwart.tool"] = call["tool"]
    if isinstance(result, dict):
        for key in ("decision", "verdict", "rule"):
            if isinstance(result.get(key), str):
                attributes[f"stalwart.{key}"] = result[key]
        reasons = result.get("reasons")
        if isinstance(reasons, list):
            attributes["stalwart.reasons"] = [str(r) for r in reasons]
    return redact(attributes)


def decision_span(source: str) -> Callable:
    """Wrap a deciding service (keyword arguments `actor` and `call` or `data`) in a span."""

    def wrap(service: Callable) -> Callable:
        @functools.wraps(service)
        def traced(*args: Any, **kwargs: Any) -> Any:
            from console.metrics import observe_decision

            started = time.perf_counter()
            organisation = getattr(getattr(kwargs.get("actor"), "organisation", None), "slug", "")
            current = tracer()
            try:
                if current is None:
                    return service(*args, **kwargs)
                with current.start_as_current_span(f"stalwart.{source}") as span:
                    result = service(*args, **kwargs)
                    call = kwargs.get("call", kwargs.get("data"))
                    span.set_attributes(
                        {
                            "stalwart.source": source,
                            **_attributes(kwargs.get("actor"), call, result),
                        }
                    )
                    return result
            finally:
                observe_decision(organisation, source, started)

        return traced

    return wrap
