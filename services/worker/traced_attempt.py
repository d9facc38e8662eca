"""An attempt's trace span, and its reports sent in its context
(``services.common.tracing``).

The attempt is a ``CONSUMER`` span named ``<task> attempt`` (``e2e.sleep attempt``: a
trace of a map of 180 items reads by task, not as 180 ``process <tasks topic>``), with
the attributes of the OpenTelemetry messaging conventions,
https://opentelemetry.io/docs/specs/semconv/messaging/messaging-spans/, child of the
context the dispatch record carries (the coordinator's apply that dispatched it). Its
reports are produced with that span current, so each carries its context in
``traceparent``/``tracestate`` and the coordinator's apply of it joins the same trace.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import trace

from headwater.core import events as ev
from services.common import tracing
from services.worker.channel import Send


def attempt_span_name(task: str) -> str:
    """The name of an attempt's span: ``<task> attempt``."""
    return f"{task} attempt"


def traced_attempt(dispatch: ev.TaskDispatched, headers: Sequence[tuple[str, bytes]] | None,
                   topic: str | None = None) -> trace.Span | None:
    """Start the attempt's span (None while tracing is off), with the dispatch's
    ``headwater.*`` attributes.

    Args:
        dispatch: the attempt's dispatch.
        headers: the dispatch record's headers.
        topic: the record's topic (None: ``tasks.<queue>``, without the prefix).
    """
    if tracing.tracer() is None:
        return None
    topic = topic or f"tasks.{dispatch.queue}"
    span = tracing.consuming(topic, dispatch.dispatch_id.encode(), headers,
                             name=attempt_span_name(dispatch.task))
    if span is not None:
        span.set_attributes({"headwater.workflow_id": dispatch.workflow_id,
                             "headwater.node": dispatch.node,
                             "headwater.attempt": dispatch.attempt,
                             "headwater.dispatch_id": dispatch.dispatch_id,
                             "headwater.task": dispatch.task})
    return span


def reporting_in(span: trace.Span, send: Send) -> Send:
    """``send``, producing each report with ``span`` current (its context in the
    record's headers); an outcome also sets the span's status."""

    async def traced(report: ev.Report) -> bool:
        if isinstance(report, ev.TaskFailed):
            span.set_status(trace.StatusCode.ERROR, report.error[:200])
        with trace.use_span(span, end_on_exit=False):
            return await send(report)

    return traced
