"""A code workflow run through ``headwater.core.machine.step`` as a coordinator and its
workers would run it, with no broker: every input in time order, each step's result
handed to ``on_step`` (to write a table, fold a history, check it).

An activation dispatch is answered by running the ``@workflow``'s function over the
input the coordinator builds from the state after the step that dispatched it
(``journal.activation_dispatch``, as ``services/coordinator/records.py`` does), a task
step (or a child) by ``outputs`` (its name and input by default; an exception it returns
fails the attempt); both start 1 ms after their dispatch and end 2 ms after it.
Signals come at the times given. The earliest timer of the state fires once nothing
queued comes before it (a sleep, a signal wait's timeout, a retry), the clock jumping
to it, until the run ends.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from headwater.core import events as ev
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import activation_dispatch, is_activation
from headwater.core.machine import Step, step
from headwater.core.state import WorkflowState
from headwater.workflows.decorator import WorkflowInfo
from headwater.workflows.instances import activate, continued

T0 = 1_700_000_000_000


def echo(d: ev.TaskDispatched) -> Any:
    """A task step's output: its task's name and its input."""
    return {"task": d.task, "input": d.input}


@dataclass
class CodeRun:
    """One run of ``info``'s function.

    Attributes:
        info: the ``@workflow``.
        input: the run's input.
        workflow_id: its id.
        signals: ``(ms after the start, name, fields)`` of the signals sent to it.
        outputs: a task step's output (an exception: the attempt fails with it).
        on_step: called with each input and ``step``'s result, in order.
        cache: let the activations reuse the run's instance (False: each replays the
            function from its start, as after a crash).
        continue_steps: a task step's success carries the next decision when the
            instance is kept (``instances.continued``, as a worker's report does;
            needs ``cache``); an activation a continuation decided is sent to no one.
    """

    info: WorkflowInfo
    input: Any
    workflow_id: str = "wf-code"
    signals: list[tuple[int, str, Any]] = field(default_factory=list)
    outputs: Callable[[ev.TaskDispatched], Any] = echo
    on_step: Callable[[ev.Input, Step], None] | None = None
    cache: bool = False
    continue_steps: bool = False
    state: WorkflowState | None = None
    history: list[ev.HistoryEvent] = field(default_factory=list)
    _queue: list[tuple[int, int, ev.Input]] = field(default_factory=list)
    _order: itertools.count[int] = field(default_factory=itertools.count)
    _armed: set[tuple[str, int]] = field(default_factory=set)

    def run(self, most: int = 100_000) -> WorkflowState:
        """Apply inputs until the run has ended (at most ``most``); its last state."""
        self._put(ev.WorkflowSubmitted(self.workflow_id, self.info.spec(), self.input, T0))
        for at, name, fields in self.signals:
            self._put(ev.SignalSent(self.workflow_id, name, T0 + at, None,
                                    f"{name}-{at}", fields))
        for _ in range(most):
            self._arm_due_timer()
            if not self._queue:
                break
            _, _, item = heapq.heappop(self._queue)
            result = step(self.state, item)
            self.state = result.state
            self.history.extend(result.events)
            if self.on_step is not None:
                self.on_step(item, result)
            for event in result.events:
                if isinstance(event.body, ev.TaskDispatched) and not is_continued(event.body):
                    self._answer(event.body)
            if self.state is not None and self.state.status.terminal:
                break
        assert self.state is not None and self.state.status.terminal, "the run did not end"
        return self.state

    def _put(self, item: ev.Input) -> None:
        heapq.heappush(self._queue, (item.at_ms, next(self._order), item))

    def _arm_due_timer(self) -> None:
        """Queue the earliest timer of the state once, when nothing queued comes before
        it (the clock never runs backwards)."""
        if self.state is None or not self.state.timers:
            return
        timer_id, timer = min(self.state.timers.items(), key=lambda t: t[1].fire_at_ms)
        if (timer_id, timer.fire_at_ms) in self._armed:
            return
        if not self._queue or timer.fire_at_ms <= self._queue[0][0]:
            self._armed.add((timer_id, timer.fire_at_ms))
            self._put(ev.TimerFired(self.workflow_id, timer_id, timer.fire_at_ms))

    def _answer(self, d: ev.TaskDispatched) -> None:
        """The worker's reports of one dispatch: started, then its output."""
        assert self.state is not None
        where = (d.workflow_id, d.node, d.index, d.attempt)
        if is_activation(d.index):
            payload = activation_dispatch(self.state, d).input
            output = asyncio.run(activate(self.info, payload, cache=self.cache, node=d.node))
        else:
            output = self.outputs(d)
        self._put(ev.TaskStarted(*where, d.at_ms + 1, "w-1"))
        if isinstance(output, Exception):
            self._put(ev.TaskFailed(*where, d.at_ms + 2, str(output), type(output).__name__,
                                    True))
            return
        carried = continued(d.workflow_id, d.node, d.index, output, d.at_ms + 2) if (
            self.continue_steps and not is_activation(d.index)) else None
        # As the report reaches the coordinator: JSON (a tuple the task returned is a list).
        self._put(ev.TaskSucceeded(*where, d.at_ms + 2, orjson.loads(orjson.dumps(output)),
                                   carried))
