"""The recorder: numbers the history events a step decides and evolves the state through
each as it is decided, so every later rule sees the state the event made.

Numbering here is the per-workflow ``seq``: strictly increasing and gap-free
(docs/architecture.md, invariant 2); evolving here keeps the state a fold of the history
(invariant 1). An event that ends an attempt which asked limiters for permits is
followed by ``PermitsReturned`` here, whichever rule recorded it (§4n); one that ends an
attempt which looked its cache up and was not answered a hit, by ``CacheReturned``
(§4o).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.ids import task_key
from headwater.core.state import WorkflowState


@dataclass
class Step:
    """The result of one ``step``: the new state and what was recorded, in seq order."""

    state: WorkflowState | None
    events: list[ev.HistoryEvent] = field(default_factory=list)
    deferred: bool = False
    """The input is for a workflow not submitted yet and must wait for it: keep it and
    hand it to ``start`` with the submission (a cancel that overtook its submission)."""

    @property
    def dispatches(self) -> list[ev.TaskDispatched]:
        """The dispatches among the recorded events."""
        return [e.body for e in self.events if isinstance(e.body, ev.TaskDispatched)]


_ENDS = (ev.TaskSucceeded, ev.TaskFailed, ev.TaskCancelled)
"""The events that end an attempt (after which its permits are given back)."""


class Recorder:
    """Numbers bodies and evolves the state through them, as they are decided.

    Attributes:
        state: the workflow's state so far (``None`` until ``WorkflowAccepted``).
        at_ms: the time of the input being applied (ms since the epoch): every event
            decided for it carries this time.
        events: what was recorded, in seq order.
        finished: nodes whose consequences are still to be worked out (``flow``).
        settling: whether ``flow.finish`` is already working through ``finished``.
    """

    def __init__(self, state: WorkflowState | None, at_ms: int) -> None:
        self.state = state
        self.at_ms = at_ms
        self.events: list[ev.HistoryEvent] = []
        self.finished: deque[str] = deque()
        self.settling = False
        self.deferred = False

    @property
    def current(self) -> WorkflowState:
        """The state, once the workflow exists (every rule but acceptance needs one)."""
        assert self.state is not None
        return self.state

    def opened(self, run_id: str, spec: dict[str, Any], at_ms: int) -> WorkflowState | None:
        """The state of a run that is no workflow (a limiter, a cache: ``spec`` is its
        fixed spec), created by its first input; None when it can take no input (it
        ended, or its spec is bad)."""
        state = self.state
        if state is None:
            state = self.record(ev.WorkflowAccepted(run_id, at_ms, spec, None, None))
        if state.status.terminal or state.spec_error:
            return None
        return state

    def record(self, body: ev.Body) -> WorkflowState:
        """Number ``body`` with the next seq, evolve the state through it, keep it.

        Returns:
            The state after the event.

        Raises:
            IllegalTransition: ``body`` does not fit the state (a bug in a rule).
        """
        seq = (self.state.seq if self.state else 0) + 1
        event = ev.HistoryEvent(body.workflow_id, seq, body)
        self.state = evolve(self.state, event)
        self.events.append(event)
        if isinstance(body, _ENDS):
            self._return_permits(body)
            self._return_cache(body)
        return self.state

    def _return_permits(self, end: ev.TaskSucceeded | ev.TaskFailed | ev.TaskCancelled,
                        ) -> None:
        """After the event that ended an attempt which asked limiters for permits
        (``TaskState.limiters``: a node with ``concurrency`` or ``rate_limit``), record
        that it gives them back (``PermitsReturned``), whatever ended it and wherever."""
        assert self.state is not None
        task = self.state.tasks.get(task_key(end.node, end.index))
        if task is None or not task.limiters or task.attempt != end.attempt:
            return
        units = end.units if isinstance(end, ev.TaskSucceeded) else None
        self.record(ev.PermitsReturned(end.workflow_id, end.node, end.index, end.attempt,
                                       tuple(task.limiters), end.at_ms, units))

    def _return_cache(self, end: ev.TaskSucceeded | ev.TaskFailed | ev.TaskCancelled,
                      ) -> None:
        """After the event that ended an attempt which looked its cache up and was not
        answered a hit (``TaskState.cache``: it waited, or computed), record that it
        releases the cache (``CacheReturned``): with its output and what it cost when it
        succeeded, so that the cache stores it; else empty, so that the next waiter
        computes."""
        assert self.state is not None
        task = self.state.tasks.get(task_key(end.node, end.index))
        if task is None or not task.cache or task.attempt != end.attempt:
            return
        if not isinstance(end, ev.TaskSucceeded):
            self.record(ev.CacheReturned(end.workflow_id, end.node, end.index, end.attempt,
                                         task.cache, end.at_ms))
            return
        began = task.started_at_ms if task.started_at_ms is not None else (
            task.dispatched_at_ms)
        self.record(ev.CacheReturned(end.workflow_id, end.node, end.index, end.attempt,
                                     task.cache, end.at_ms, True, end.output,
                                     max(0, end.at_ms - (began or end.at_ms)), end.units))

    def give_back(self, node: str, index: int | None, attempt: int) -> None:
        """Record that a live attempt that does not end gives back what it holds, as its
        end would: its permits (``PermitsReturned``) and its cache (``CacheReturned``,
        empty, so that the next waiter computes). A pause recalling it does this
        (``machine/pause.py``): the attempt that follows asks again at the resume."""
        task = self.current.tasks.get(task_key(node, index))
        if task is None or task.attempt != attempt:
            return
        wid, limiters, cache = self.current.workflow_id, task.limiters, task.cache
        if limiters:
            self.record(ev.PermitsReturned(wid, node, index, attempt, tuple(limiters),
                                           self.at_ms, None))
        if cache:
            self.record(ev.CacheReturned(wid, node, index, attempt, cache, self.at_ms))

    def result(self) -> Step:
        """The step's result: the state, the events recorded, whether the input waits."""
        return Step(self.state, self.events, self.deferred)
