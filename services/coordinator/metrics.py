"""The coordinator's Prometheus metrics: attempts by outcome and workflow durations (from
the history events each batch recorded), a cache's hits and misses with the cost its hits
saved (``TaskCached``, a ``CacheAnswered`` miss: §4o), the batches themselves, the intent log, the
records moved home (``homing.MOVED``).

Who counts what, so that nothing is counted twice: an attempt's outcome and a workflow's
end are counted here, once, when the batch that recorded them has been carried out
(``BatchApplier.apply_batch``): the coordinator alone knows of timeouts, lost attempts and
cancels. Workers time the task code they ran (``services.worker.metrics``); the
projector counts the events it wrote (``services.projector.metrics``). Counters start at
zero with each process: a batch carried out again after a crash (``recover``) is counted
by neither process, and one applied again after a crash by the new one only.

How an attempt's end reads in the history:

- ``TaskSucceeded``: succeeded; ``TaskFailed``: failed (reported by the worker), or
  nondeterministic when its error type is ``NondeterminismError`` (a code workflow's
  activation whose code parted from the run's history: it is retried until fixed code is
  deployed, so this rate says such runs wait);
- ``TimerFired`` of the attempt's deadline: timed_out, of its lease: lost; the
  ``TaskFailed`` (or, for a restart, ``TaskCancelled``) recorded with it for the same
  attempt is not counted again;
- ``TaskCancelled``: cancelled (the workflow or its node ended first), unless the
  attempt it names had already failed and its task was waiting for its retry's backoff
  (the task's state still holds that failure's error): that attempt was counted as
  failed. A restart drops its tasks from the state, so a task a restart cancels in its
  backoff is counted as cancelled too.

Attempts carry the task the attempt ran (a loop step's tool; ``workflow`` for a child
workflow's attempt) and the workflow's name; workflow durations the workflow's name. Both
are names clients choose, so the label values are capped (``BoundedLabels``): past
``MAX_ATTEMPT_SERIES`` pairs and ``MAX_WORKFLOW_SERIES`` names, new ones count as
``other``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sized

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from headwater.core import events as ev
from headwater.core.ids import DEADLINE_TIMER, LEASE_TIMER, parse_task_timer_id, task_key
from headwater.core.state import WorkflowState
from headwater.core.work import task_work
from headwater.errors import SpecError
from services.common.metrics import (
    DURATION_BUCKETS_S,
    LATENCY_BUCKETS_S,
    SIZE_BUCKETS,
    BoundedLabels,
)
from services.coordinator import homing

OUTCOMES = ("succeeded", "failed", "timed_out", "lost", "cancelled", "nondeterministic")
"""The values of ``headwater_attempts_total``'s ``outcome``."""
MAX_ATTEMPT_SERIES = 200
"""The most (task, workflow) pairs with series of their own in
``headwater_attempts_total``; later new pairs count as ``other``."""
MAX_WORKFLOW_SERIES = 50
"""The most workflow names with series of their own in
``headwater_workflow_duration_seconds``; later new names count as ``other``."""

ATTEMPTS = Counter("headwater_attempts_total", "Attempts ended, by outcome, task and "
                   "workflow name, as the coordinator recorded them.",
                   ["outcome", "task", "workflow"])
_ATTEMPT_LABELS = BoundedLabels(MAX_ATTEMPT_SERIES)
_OUTCOME_OF: dict[type, str] = {ev.TaskSucceeded: "succeeded", ev.TaskFailed: "failed",
                                 ev.TaskCancelled: "cancelled"}
"""The history events that end an attempt (when no expired timer ended it first)."""
_EXPIRED = {DEADLINE_TIMER: "timed_out", LEASE_TIMER: "lost"}
NONDETERMINISM = "NondeterminismError"
"""The error type of a code workflow's activation that parted from its history."""

WORKFLOW_SECONDS = Histogram(
    "headwater_workflow_duration_seconds", "Workflows ended, by status and workflow name: "
    "seconds from their acceptance to their end (the coordinator's clock).",
    ["status", "workflow"], buckets=DURATION_BUCKETS_S)
_WORKFLOW_LABELS = BoundedLabels(MAX_WORKFLOW_SERIES)
_ENDED: dict[type, str] = {ev.WorkflowSucceeded: "succeeded", ev.WorkflowFailed: "failed",
                           ev.WorkflowCancelled: "cancelled"}
UNKNOWN = "unknown"
"""The task or workflow label of an event whose workflow's state is not at hand."""

CACHE_HITS = Counter("headwater_cache_hits_total", "Attempts answered by their cache "
                     "(TaskCached: not dispatched), by task.", ["task"])
CACHE_MISSES = Counter("headwater_cache_misses_total", "Attempts their cache answered a "
                       "miss (they compute the key), by task.", ["task"])
CACHE_SAVED_SECONDS = Counter(
    "headwater_cache_saved_seconds_total", "Run time the cache's hits saved, by task: "
    "each hit counts its source attempt's time from its start to its success.", ["task"])
CACHE_SAVED_UNITS = Counter(
    "headwater_cache_saved_units_total", "Units (ctx.report_units: model tokens, say) the "
    "cache's hits saved, by task: each hit counts what its source attempt reported.",
    ["task"])
_CACHE_LABELS = BoundedLabels(MAX_ATTEMPT_SERIES)

HISTORY_EVENTS = Counter("headwater_coordinator_history_events_total",
                         "History events recorded and published.")
BATCH_RECORDS = Histogram("headwater_coordinator_batch_size_records",
                          "Input records per batch applied.", buckets=SIZE_BUCKETS)
BATCH_SECONDS = Histogram(
    "headwater_coordinator_batch_apply_seconds", "Seconds from a batch's first step to its "
    "effects acknowledged by the broker (intents recorded and carried out).",
    buckets=LATENCY_BUCKETS_S)
INTENTS_PENDING = Gauge(
    "headwater_coordinator_intents_pending", "Partitions whose intent slot holds an intent "
    "not cleared yet (a batch being carried out, or one found at recovery).")
INTENTS_REDONE = Counter("headwater_coordinator_intents_redone_total",
                         "Intents carried out again after a crash or a move (partitions).")
STALE_STATES = Counter(
    "headwater_coordinator_stale_states_total", "Batches refused before their intent "
    "because a workflow's first new seq did not follow its table header's (decided from "
    "a stale copy of its state; nothing of them published): ``seq_guard``.")


def batch_applied(records: Iterable[object], started_s: float,
                  events: list[ev.HistoryEvent], states: Mapping[str, WorkflowState]) -> None:
    """Count a batch that has been carried out.

    Args:
        records: its input records (counted when a sized collection).
        started_s: ``time.perf_counter()`` when it began, seconds.
        events: the history events it recorded, in order.
        states: workflow id -> state after the batch (the workflows it changed).
    """
    BATCH_SECONDS.observe(time.perf_counter() - started_s)
    if isinstance(records, Sized):
        BATCH_RECORDS.observe(len(records))
    if events:
        count_events(events, states)


def count_events(events: list[ev.HistoryEvent], states: Mapping[str, WorkflowState]) -> None:
    """Count the attempts ended and the workflows finished among ``events`` (see the
    module's docstring for how each reads), one increment per outcome, task and
    workflow name and batch.

    Args:
        events: history events recorded, in order.
        states: workflow id -> its state after them, for its name, its tasks' names and
            when it was accepted.
    """
    counts: dict[tuple[str, str, str], int] = {}
    expired: set[tuple[str, str, int]] = set()
    for e in events:
        body = e.body
        outcome = _OUTCOME_OF.get(type(body))
        if isinstance(body, ev.TaskFailed) and body.error_type == NONDETERMINISM:
            outcome = "nondeterministic"
        if outcome is not None:
            state = states.get(e.workflow_id)
            if ((not expired or not _ended_by_timer(e, expired))
                    and not _cancelled_after_failing(body, state)):
                assert isinstance(body, ev.TaskSucceeded | ev.TaskFailed | ev.TaskCancelled)
                _add(counts, outcome, state, body.node, body.index)
        elif type(body) is ev.TimerFired:
            parsed = parse_task_timer_id(body.timer_id)
            if parsed is not None:
                node, index = _node_of(parsed[1])
                _add(counts, _EXPIRED[parsed[0]], states.get(e.workflow_id), node, index)
                expired.add((e.workflow_id, parsed[1], parsed[2]))
        elif (status := _ENDED.get(type(body))) is not None:
            state = states.get(e.workflow_id)
            if state is not None:
                WORKFLOW_SECONDS.labels(status, *_WORKFLOW_LABELS(state.name)).observe(
                    max(0, body.at_ms - state.created_at_ms) / 1000)
    for labels, count in counts.items():
        ATTEMPTS.labels(*labels).inc(count)
    HISTORY_EVENTS.inc(len(events))
    count_caches(events, states)


def count_caches(events: list[ev.HistoryEvent], states: Mapping[str, WorkflowState]) -> None:
    """Count the cache's hits (with what they saved) and misses among ``events``."""
    for e in events:
        if isinstance(e.body, ev.TaskCached | ev.CacheAnswered):
            _count_cache(e.body, states.get(e.workflow_id))


def _count_cache(body: ev.TaskCached | ev.CacheAnswered, state: WorkflowState | None) -> None:
    """A hit (``TaskCached``, with what its source cost) or a miss (a ``CacheAnswered``
    recorded: only a miss is) of the task ``body``'s attempt runs."""
    if isinstance(body, ev.TaskCached):
        (task,) = _CACHE_LABELS(body.task)
        CACHE_HITS.labels(task).inc()
        CACHE_SAVED_SECONDS.labels(task).inc(max(0, body.saved_ms) / 1000)
        if body.units:
            CACHE_SAVED_UNITS.labels(task).inc(body.units)
        return
    (task,) = _CACHE_LABELS(_task_and_workflow(state, body.node, body.index)[0])
    CACHE_MISSES.labels(task).inc()


def _add(counts: dict[tuple[str, str, str], int], outcome: str, state: WorkflowState | None,
         node: str, index: int | None) -> None:
    """One more attempt ended with ``outcome`` for the task ``node`` (map item or loop
    step ``index``) runs in ``state``'s workflow."""
    task, workflow = _ATTEMPT_LABELS(*_task_and_workflow(state, node, index))
    labels = (outcome, task, workflow)
    counts[labels] = counts.get(labels, 0) + 1


def _task_and_workflow(state: WorkflowState | None, node: str,
                       index: int | None) -> tuple[str, str]:
    """The task an attempt of ``node`` (``index``) ran (``workflow`` for a child
    workflow's, a loop step's tool for its odd index) and its workflow's name."""
    if state is None:
        return UNKNOWN, UNKNOWN
    try:
        return task_work(state, node, index).task, state.name
    except (KeyError, SpecError):  # no such node or decided tool, or a spec that is invalid
        return UNKNOWN, state.name


def _node_of(key: str) -> tuple[str, int | None]:
    """``(node, index)`` of a task key (``node`` or ``node[index]``: ``ids.task_key``)."""
    node, _, rest = key.partition("[")
    return node, int(rest[:-1]) if rest[:-1].isdigit() else None


def _cancelled_after_failing(body: ev.Body, state: WorkflowState | None) -> bool:
    """Whether ``body`` is the ``TaskCancelled`` of an attempt that had failed already:
    its task (in ``state``, after the batch) is that attempt, and still holds the
    failure's error (a dispatch clears it; a cancel keeps it)."""
    if type(body) is not ev.TaskCancelled or state is None:
        return False
    task = state.tasks.get(task_key(body.node, body.index))
    return (task is not None and task.attempt == body.attempt
            and bool(task.error or task.error_type))


def _ended_by_timer(event: ev.HistoryEvent, expired: set[tuple[str, str, int]]) -> bool:
    """Whether ``event`` (an attempt's end: ``TaskFailed``, ``TaskCancelled``) ends one whose
    deadline or lease was recorded as expired before it."""
    body = event.body
    assert isinstance(body, ev.TaskFailed | ev.TaskCancelled | ev.TaskSucceeded)
    return (event.workflow_id, task_key(body.node, body.index), body.attempt) in expired


class MovedHome(Collector):
    """``headwater_coordinator_records_moved_total`` by topic, read from ``homing.MOVED``
    at each scrape."""

    def collect(self) -> Iterator[CounterMetricFamily]:
        """The counts so far."""
        family = CounterMetricFamily(
            "headwater_coordinator_records_moved", "Input records moved to their home "
            "partition (produced with another partitioner than murmur2), by topic.",
            labels=["topic"])
        for topic, count in sorted(dict(homing.MOVED.by_topic).items()):
            family.add_metric([topic], count)
        yield family


REGISTRY.register(MovedHome())
