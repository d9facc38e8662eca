"""The logger task code gets as ``ctx.log``: its records name the attempt's trace and
dispatch, so that a log line can be found from its trace and the other way round.

Each record has the attributes ``trace_id`` (32 hex digits, ``""`` while tracing is
off), ``span_id`` (16 hex digits or ``""``), ``dispatch_id`` and ``workflow_id`` (for a
formatter, e.g. ``%(trace_id)s``), and its message is prefixed with
``[trace=<trace id> dispatch=<dispatch id>]`` (``trace=`` left out without a trace), so a
plain formatter shows them too (``log_prefix`` holds the prefix: the worker's capture of
an attempt's lines leaves it out, since the attempt's log names the attempt). The names
follow OpenTelemetry's log data model (``trace_id``, ``span_id``:
https://opentelemetry.io/docs/specs/otel/logs/data-model/).
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from opentelemetry import trace

LOGGER_NAME = "headwater.task"


class TaskLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """``logging.LoggerAdapter`` over the ``headwater.task`` logger for one attempt.

    Args:
        span: the attempt's span (``trace.INVALID_SPAN`` while tracing is off).
        dispatch_id: the attempt's dispatch id.
        workflow_id: its workflow's id.
    """

    def __init__(self, span: trace.Span, dispatch_id: str, workflow_id: str) -> None:
        ctx = span.get_span_context()
        valid = ctx.is_valid
        extra = {"trace_id": trace.format_trace_id(ctx.trace_id) if valid else "",
                 "span_id": trace.format_span_id(ctx.span_id) if valid else "",
                 "dispatch_id": dispatch_id, "workflow_id": workflow_id}
        traced = f"trace={extra['trace_id']} " if valid else ""
        self.prefix = f"[{traced}dispatch={dispatch_id}] "
        extra["log_prefix"] = self.prefix
        super().__init__(logging.getLogger(LOGGER_NAME), extra)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any],
                ) -> tuple[Any, MutableMapping[str, Any]]:
        """Prefix the message and add the attempt's attributes to the record."""
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return f"{self.prefix}{msg}", kwargs
