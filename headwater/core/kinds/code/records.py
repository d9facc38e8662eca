"""The ``code`` kind's records: its spec fields (``CodeSpec``). It has no history
events of its own: an activation's decision is its attempt's ``TaskSucceeded``, a step's
result its task's (or its timer's ``TimerFired``, or its ``SignalConsumed``)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_EVENTS = 20_000
"""The most history events a code workflow's run may record before it fails with
``HistoryTooLong`` (``wf.continue_as_new`` starts a fresh run instead)."""
MAX_EVENTS_LIMIT = 1_000_000
"""The largest ``max_events`` a spec may give."""


@dataclass(frozen=True)
class CodeSpec:
    """A code node (its ``task`` is the ``@workflow`` its activations run): the most
    events its run may record."""

    max_events: int = DEFAULT_MAX_EVENTS
