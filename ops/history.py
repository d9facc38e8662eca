"""Replay: a workflow's recorded history, deduplicated, folded and shown as a timeline.

Readers of the events topic see each event at least once (docs/architecture.md §3,
invariant 2): a coordinator that crashed after publishing re-publishes the same events
with the same ``seq``. Such identical duplicates are dropped here; two records with one
``seq`` and different bodies are a ``Conflict`` (the history is corrupt, or two writers
owned the workflow).
Everything in this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from headwater.core import calls, deadline, registry
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.ids import task_key
from headwater.core.state import IllegalTransition, WorkflowState
from headwater.core.wording import Describe, short


@dataclass(frozen=True)
class Recorded:
    """One history event as read from the log.

    Attributes:
        event: the decoded record.
        offset: its offset in its partition (-1 when not read from Kafka).
        timestamp_ms: the record's Kafka timestamp, ms since the epoch (0 when unknown).
    """

    event: ev.HistoryEvent
    offset: int = -1
    timestamp_ms: int = 0


@dataclass(frozen=True)
class Conflict:
    """Two records of one workflow with the same ``seq`` and different bodies.

    Attributes:
        seq: the sequence number they share.
        kept: the first one read (the one folded).
        other: a later one that differs from it.
    """

    seq: int
    kept: Recorded
    other: Recorded

    def describe(self) -> str:
        """One line naming both records."""
        return (f"seq {self.seq} recorded twice with different bodies: {self.kept.event.type}"
                f" at offset {self.kept.offset}, {self.other.event.type} at offset "
                f"{self.other.offset}")


def dedupe(records: Iterable[Recorded]) -> tuple[list[Recorded], list[Conflict]]:
    """Keep the first record of each ``seq``; report records that contradict it.

    Args:
        records: one workflow's records, in log order.

    Returns:
        The distinct records sorted by ``seq``, and the conflicting duplicates.
    """
    first: dict[int, Recorded] = {}
    conflicts: list[Conflict] = []
    for r in records:
        kept = first.setdefault(r.event.seq, r)
        if kept is not r and kept.event != r.event:
            conflicts.append(Conflict(r.event.seq, kept, r))
    return [first[seq] for seq in sorted(first)], conflicts


@dataclass(frozen=True)
class Fold:
    """The result of folding a history.

    Attributes:
        state: the state after the last event that applied (None if none did).
        error: why folding stopped early (a gap in ``seq``, an event that does not fit),
            or ``""``.
    """

    state: WorkflowState | None
    error: str = ""


def fold(events: Iterable[ev.HistoryEvent], upto_seq: int | None = None) -> Fold:
    """Fold events through ``headwater.core.evolve`` from nothing.

    Args:
        events: deduplicated events in ``seq`` order.
        upto_seq: stop after this ``seq`` (None: fold them all).

    Returns:
        The state, and the reason folding stopped early if it did.
    """
    state: WorkflowState | None = None
    for e in events:
        if upto_seq is not None and e.seq > upto_seq:
            break
        try:
            state = evolve(state, e)
        except IllegalTransition as error:
            return Fold(state, f"seq {e.seq} ({e.type}) does not apply: {error}")
    return Fold(state)


@dataclass(frozen=True)
class TimelineRow:
    """One line of a timeline.

    Attributes:
        seq: the event's number.
        at_ms: the event's time, ms since the epoch.
        type: the event's type name.
        task: ``node[index]/attempt`` (or the node alone) when it concerns one, else ``""``.
        detail: a short description of what else it says.
    """

    seq: int
    at_ms: int
    type: str
    task: str
    detail: str

    def time(self) -> str:
        """``at_ms`` as UTC ``YYYY-MM-DD HH:MM:SS.mmm``."""
        return datetime.fromtimestamp(self.at_ms / 1000, tz=UTC).strftime(
            "%Y-%m-%d %H:%M:%S.%f")[:-3]


def timeline(events: Iterable[ev.HistoryEvent]) -> list[TimelineRow]:
    """One row per event, in the order given."""
    return [TimelineRow(e.seq, e.body.at_ms, e.type, _task(e.body), describe(e.body))
            for e in events]


def _task(body: ev.Body) -> str:
    node = getattr(body, "node", None)
    if node is None:
        return ""
    index = getattr(body, "index", None)
    attempt = getattr(body, "attempt", None)
    key = task_key(node, index)
    return key if attempt is None else f"{key}/{attempt}"


def _accepted(b: ev.WorkflowAccepted) -> str:
    name = b.spec.get("name") if isinstance(b.spec, dict) else None
    source = b.rerun.get("of") if isinstance(b.rerun, dict) else None
    return (f"{name or '(unnamed)'}" + (f" tenant {b.tenant}" if b.tenant else "")
            + (f" rerun of {source}" if source else ""))


def _dispatched(b: ev.TaskDispatched) -> str:
    timeout = f" timeout {b.timeout_s:g} s" if b.timeout_s is not None else ""
    return f"{b.task} on {b.queue}{timeout}"


def _failed(b: ev.TaskFailed) -> str:
    return short(f"{b.error_type}: {b.error}" + ("" if b.retryable else " (not retryable)"))


COMMON: dict[type[Any], Describe] = {
    ev.WorkflowAccepted: _accepted,
    ev.TaskDispatched: _dispatched,
    ev.TaskStarted: lambda b: f"on {b.worker}" if b.worker else "",
    ev.TaskProgressed: lambda b: short(f"{b.fraction:.0%} {b.message}".strip()),
    ev.TaskHeartbeated: lambda b: "",
    ev.TaskCheckpointed: lambda b: short(b.checkpoint),
    ev.TaskOutputStreamed: lambda b: short(f"#{b.chunk_seq} {short(b.chunk)}"),
    ev.TaskSucceeded: lambda b: short(b.output),
    ev.TaskFailed: _failed,
    ev.TaskCancelled: lambda b: short(b.reason),
    ev.ReportDiscarded: lambda b: short(f"{b.report}: {b.reason}"),
    ev.TimerScheduled: lambda b: f"{b.timer_id} in {(b.fire_at_ms - b.at_ms) / 1000:g} s",
    ev.TimerFired: lambda b: b.timer_id,
    ev.ConditionEvaluated: lambda b: "when: true" if b.value else "when: false (skipped)",
    ev.NodeFinished: lambda b: short(f"{b.status} {b.error}".strip()),
    ev.WorkflowRestarted: lambda b: short(f"generation {b.generation}: {b.reason}"),
    ev.NodeReused: lambda b: short(f"reused: {short(b.output)}"),
    ev.TaskReused: lambda b: short(f"reused: {short(b.output)}"),
    ev.WorkflowSucceeded: lambda b: short(b.output),
    ev.WorkflowFailed: lambda b: short(b.error),
    ev.WorkflowCancelled: lambda b: short(b.reason),
    ev.WorkflowPaused: lambda b: short(" ".join(p for p in (f"by {b.by}" if b.by else "",
                                                           b.reason) if p)),
    ev.WorkflowResumed: lambda b: f"{b.held} held, {b.due} timers due"
                                  + (f" (by {b.by})" if b.by else ""),
    ev.DispatchDeferred: lambda b: "held: the run is paused",
    ev.DispatchRecalled: lambda b: f"attempt {b.attempt} recalled before it started: "
                                   "the run is paused",
    ev.TimerDeferred: lambda b: f"{b.timer_id} due: fires at the resume",
}
"""The timeline descriptions of the history events that are no node kind's."""

DESCRIPTIONS: dict[type[Any], Describe] = {
    **COMMON, **deadline.DESCRIBE, **calls.DESCRIBE,
    **{event: how for u in registry.units() for event, how in u.describe.items()}}
"""History event type -> its timeline description: the common events' (``COMMON``, a
run's deadline's and its ``ctx.call`` links', from their modules) and
each node kind's, from its unit (``registry.KindUnit.describe``; every history event has
one, ``tests/unit/ops/test_history.py``)."""


def describe(body: ev.Body) -> str:
    """What an event says beyond its type and task, in a few words."""
    how = DESCRIPTIONS.get(type(body))
    return how(body) if how is not None else ""
