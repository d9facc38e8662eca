"""A run's deadline: the spec's top-level ``deadline``, and its record ``DeadlineSet``.

``deadline`` bounds the whole run, where the top-level ``timeout`` stays what it was, a
default for each node's attempts. It is either a span counted from the run's start (its
acceptance: seconds as a number, ``3600``, or a duration text as a cache's ``ttl``
takes, ``30s``, ``15m``, ``12h``, ``7d``; ``caching.ttl_ms``) or an instant (RFC 3339
with a UTC offset, ``2026-12-31T23:00:00Z``; ``instants.parse_instant``). A definition's
spec and a ``@workflow(deadline=...)`` carry it like any other spec field.

When the run is accepted its instant is recorded (``DeadlineSet``, after
``WorkflowAccepted``): the state keeps it (``WorkflowState.deadline_at_ms``), the
coordinator arms the run's timer from it (``RUN_DEADLINE_TIMER``) and the projection
shows it. When the timer fires at or after that instant on a running workflow, the
run fails with ``DEADLINE_ERROR`` named in its error (``machine/deadline.py``): its
unfinished attempts are cancelled (``TaskCancelled``, which workers obey and which
cancels a ``workflow`` node's child), and its ``ctx.call`` children with it
(``headwater/core/calls.py``). A run whose deadline has passed when it is accepted
fails at once, before any node starts. A restart (``restart_on_failure``) keeps the
deadline: it bounds the run, whatever generation it is in.

This module imports nothing of the machine, so ``events`` and ``spec`` can import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.caching import ttl_ms
from headwater.core.instants import RFC3339_HINT, iso_text, parse_instant
from headwater.core.wording import Describe, Follow, FollowNote

KEY = "deadline"
"""The spec's top-level field."""
RUN_DEADLINE_TIMER = "run:deadline"
"""The id of a run's deadline timer (no node's: ``ids.parse_task_timer_id`` and
``ids.parse_node_timer_id`` take none of this form)."""
_INSTANT_LIKE = re.compile(r"^\s*\d{4}-")
"""A text that means an instant (it starts with a year), as opposed to a span."""
DEADLINE_ERROR = "DeadlineExceeded"
"""The error a run that passed its deadline fails with (its ``WorkflowFailed.error``
starts with it)."""


@dataclass(frozen=True)
class RunDeadline:
    """A spec's ``deadline``: a span after the run's start, or an instant.

    Attributes:
        after_ms: the span from the run's acceptance, ms; None for an instant.
        at_ms: the instant, ms since the epoch; None for a span.
    """

    after_ms: int | None = None
    at_ms: int | None = None

    def due_ms(self, started_ms: int) -> int:
        """The instant the run must have ended by, for a run accepted at ``started_ms``
        (ms since the epoch)."""
        return self.at_ms if self.at_ms is not None else started_ms + (self.after_ms or 0)


def parse_deadline(doc: Mapping[str, Any], faults: list[str]) -> RunDeadline | None:
    """The spec's ``deadline``, or None when it gives none (or an invalid one: a fault
    ``"deadline: <what>"`` is appended).

    Args:
        doc: the spec document (a mapping).
        faults: appended to.
    """
    value = doc.get(KEY)
    if value is None:
        return None
    if isinstance(value, str) and _INSTANT_LIKE.match(value):
        at = parse_instant(value.strip())
        if at is not None:
            return RunDeadline(at_ms=at)
        faults.append(f"deadline: {value[:60]!r} is no instant: give {RFC3339_HINT}, "
                      "or a span such as 3600, 30s, 15m, 12h, 7d")
        return None
    try:
        return RunDeadline(after_ms=ttl_ms(value, KEY))
    except ValueError as e:
        faults.append(f"deadline: {e}, or an instant ({RFC3339_HINT})")
        return None


def exceeded_error(deadline_ms: int, started_ms: int) -> str:
    """The error of a run that passed its deadline: ``DeadlineExceeded: the run's
    deadline <instant> passed (<s> s after its start)``."""
    return (f"{DEADLINE_ERROR}: the run's deadline {iso_text(deadline_ms)} passed "
            f"({(deadline_ms - started_ms) / 1000:g} s after its start)")


@dataclass(frozen=True)
class DeadlineSet:
    """History: the run must have ended by ``deadline_ms`` (ms since the epoch), from its
    spec's ``deadline``; recorded right after its acceptance."""

    workflow_id: str
    deadline_ms: int
    at_ms: int


DESCRIBE: dict[type[Any], Describe] = {
    DeadlineSet: lambda b: f"deadline {iso_text(b.deadline_ms)}",
}
"""The event's timeline detail (``ops history``)."""

FOLLOW: dict[type[Any], Follow | None] = {
    DeadlineSet: lambda data: FollowNote(
        f"deadline {iso_text(int(data.get('deadline_ms') or 0))}"),
}
"""The event's line in the live view (``ops follow``)."""
