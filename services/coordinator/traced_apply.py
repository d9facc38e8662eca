"""The coordinator's apply of one input as a trace span, and the context its records
carry on (``services.common.tracing``).

Each input is applied inside a ``CONSUMER`` span ``process <topic>`` (the OpenTelemetry
messaging conventions,
https://opentelemetry.io/docs/specs/semconv/messaging/messaging-spans/), child of the
context in the input's ``traceparent`` header: the gateway's request for a submission, a
signal or a cancel, the worker's attempt for a report. Every record the apply produces
(history, dispatches to ``tasks.<queue>``, stops, a child's submission) carries the
context of that span in its headers, so that one trace runs from the submission through
each dispatch, each attempt and each report to the workflow's end.

The context needs no storage of its own, nor any place in the pure core: a dispatch
after a report is produced by that report's apply, in the report's trace, whichever
coordinator process applies it (after a restart too). Only inputs without a context
(the coordinator's own timer firings: a retry's backoff, a lease or a deadline) start
a trace of their own.
"""

from __future__ import annotations

import dataclasses

from opentelemetry import trace

from services.common import tracing
from services.coordinator.effects import BatchEffects
from services.coordinator.records import InputRecord

SERVICE_NAME = "headwater-coordinator"


def traced_add(effects: BatchEffects, record: InputRecord) -> None:
    """``effects.add(record)`` inside the record's apply span; the records it encoded
    get the span's context as headers. Tracing must be on (``tracing.tracer()``)."""
    span = tracing.consuming(record.topic, record.key, record.headers, record.partition,
                             record.offset)
    if span is None:
        effects.add(record)
        return
    before = len(effects.encoded)
    try:
        with trace.use_span(span, end_on_exit=False):
            effects.add(record)
        if len(effects.encoded) > before:
            headers = tuple(tracing.context_headers(span))
            effects.encoded[before:] = [dataclasses.replace(o, headers=headers)
                                        for o in effects.encoded[before:]]
            span.set_attribute("headwater.records_produced", len(effects.encoded) - before)
    finally:
        span.end()
