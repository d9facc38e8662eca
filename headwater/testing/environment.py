"""``Environment``: runs workflows in-process on the real pure core, with time skipped.

    async def test_research() -> None:
        env = Environment()
        run = await env.start(research, question="why?")
        await env.signal(run, "approval", {"approved": True})
        assert await env.result(run) == {...}

What the coordinator does with Kafka and a table, the environment does in memory: each
input (submission, report, timer, signal) goes through ``headwater.core.machine.step``,
the same pure call the coordinator makes, and each event it records is carried out here:
a dispatch runs the task function (a ``@task``, or a ``@workflow``'s activation) at
once, in this process; a child workflow is started and reports to its parent; a timer
fires when nothing else is left to do, the clock jumping to it (a sleep of a day takes
no time). ``history`` is the run's history, which ``headwater replay`` would fold the
same way.

Large values go by reference as on the stack (``headwater/blobs.py``): a submission's
input, a signal's fields, a task's output (an activation's: its decision's values) over
``HEADWATER_BLOB_THRESHOLD_BYTES`` are kept in ``blobs`` (a dict, the stack's blob
store) and the history holds references; task code gets real values, and so does the
test (``result``). A selection through one, or a map over a list stored by reference,
gives task code the part its path names, and a path the value has not fails the
attempt, here as there.
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
from collections.abc import Callable, Generator
from datetime import datetime
from typing import Any

from headwater import blobs
from headwater.context import AttemptInfo, TaskContext
from headwater.core import events as ev
from headwater.core.caching import is_cache
from headwater.core.deadline import RUN_DEADLINE_TIMER
from headwater.core.ids import child_id
from headwater.core.kinds.cache.routing import cache_inputs
from headwater.core.kinds.code.continuation import is_continued
from headwater.core.kinds.code.journal import activation_dispatch, child_spec
from headwater.core.kinds.limiter.routing import permit_inputs
from headwater.core.kinds.workflow.rules import report_to_parent
from headwater.core.machine import step
from headwater.core.spec import read_spec
from headwater.core.state import WorkflowState
from headwater.core.status import WorkflowStatus
from headwater.errors import (
    NondeterminismError,
    NonRetryableError,
    WorkflowCancelled,
    WorkflowFailed,
)
from headwater.sdk import REGISTRY
from headwater.testing.payloads import Payloads, through_json
from headwater.workflows.decorator import info_of
from headwater.workflows.instances import ACTIVATION_MARK, activate

MAX_OUTPUT_BYTES = 1024 * 1024
"""A worker's default ``HEADWATER_MAX_OUTPUT_BYTES``."""
WORKER = "headwater.testing"
"""The worker a started attempt names."""


class Environment:
    """An in-process Headwater: the real core, your real task functions, no broker.

    Args:
        now: the clock's start (default: now).
        definitions: stored definitions by name (spec documents) for ``wf.call`` and
            ``kind: workflow`` children that name one.
        cache: keep each run's instance between activations, and let a step's report
            carry the next decision (a continuation), as a worker does (False: every
            activation replays from the start, as after a crash).
        max_output_bytes: the largest encoded ``TaskSucceeded`` a worker sends
            (``HEADWATER_MAX_OUTPUT_BYTES``, 1 MiB by default): a report over it, once
            its large values went by reference, fails the attempt for good, as on a
            worker.
        blob_threshold_bytes: the most bytes of JSON a value keeps inline (None:
            ``HEADWATER_BLOB_THRESHOLD_BYTES``, else ``blobs.DEFAULT_THRESHOLD_BYTES``;
            0: never by reference).

    Attributes:
        blobs: the values stored by reference, by digest (their JSON).
    """

    def __init__(self, *, now: datetime | None = None,
                 definitions: dict[str, dict[str, Any]] | None = None,
                 cache: bool = True, max_output_bytes: int = MAX_OUTPUT_BYTES,
                 blob_threshold_bytes: int | None = None) -> None:
        start = now or datetime.now().astimezone()
        self.now_ms = round(start.timestamp() * 1000)
        self.definitions = dict(definitions or {})
        self.cache = cache
        self.payloads = Payloads(max_output_bytes, blob_threshold_bytes)
        self.blobs = self.payloads.blobs
        self.states: dict[str, WorkflowState] = {}
        self.histories: dict[str, list[ev.HistoryEvent]] = {}
        self._inputs: list[tuple[int, int, ev.Input]] = []
        self._order = itertools.count()
        self._ids = itertools.count(1)
        self.dispatched = 0
        """How many task attempts (activations included) were run."""
        self.nondeterministic: dict[str, NondeterminismError] = {}
        """Runs whose code parted from their history, and how (their activation waits
        to be retried; ``resume`` after deploying fixed code)."""

    # -- what a test does ---------------------------------------------------------------

    async def start(self, workflow: Any, input: Any = None, *, id: str | None = None,
                    rerun: dict[str, Any] | None = None, cache_refresh: bool = False,
                    paused: bool = False, **kwargs: Any) -> str:
        """Submit a run (a ``@workflow``, a definition's name, or a spec document) and
        run it until it waits; returns its id. ``rerun``: a rerun document
        (``headwater.core.reuse``) naming what the run reuses of another;
        ``cache_refresh``: the run bypasses cache hits (``?cache=refresh``); ``paused``:
        it starts paused (as a paused definition's runs do) until ``resume_run``."""
        doc = self._spec_of(workflow)
        run_id = id or f"test-{next(self._ids)}"
        given = self.payloads.offload(input if input is not None else kwargs)
        self._put(ev.WorkflowSubmitted(run_id, doc, given, self.now_ms, rerun=rerun,
                                       cache_refresh=cache_refresh,
                                       paused_by="test" if paused else None))
        await self.run_until_idle(timers=False)
        return run_id

    async def signal(self, run_id: str, name: str, fields: dict[str, Any] | None = None,
                     *, signal_id: str = "") -> None:
        """Send a signal, as ``POST .../signals/{name}`` does, and run on until it waits."""
        self._put(ev.SignalSent(run_id, name, self.now_ms, None, signal_id,
                                self.payloads.offload(fields)))
        await self.run_until_idle(timers=False)

    async def cancel(self, run_id: str, reason: str = "cancelled by the test") -> None:
        """Cancel a run."""
        self._put(ev.CancelRequested(run_id, self.now_ms, reason))
        await self.run_until_idle(timers=False)

    async def pause_run(self, run_id: str, reason: str = "") -> None:
        """Pause a run, as ``POST .../pause`` does: it dispatches nothing new."""
        self._put(ev.PauseRequested(run_id, self.now_ms, by="test", reason=reason))
        await self.run_until_idle(timers=False)

    async def resume_run(self, run_id: str) -> None:
        """Resume a paused run: what it held is dispatched, due timers fire."""
        self._put(ev.ResumeRequested(run_id, self.now_ms, by="test"))
        await self.run_until_idle(timers=False)

    async def result(self, run_id: str) -> Any:
        """Run (skipping time) until the run ends; its output, or raise
        ``WorkflowFailed`` / ``WorkflowCancelled``. A run that waits for a signal
        nobody sends raises ``TimeoutError``."""
        await self.run_until_idle(timers=True)
        if run_id in self.nondeterministic:
            raise self.nondeterministic[run_id]
        state = self.states[run_id]
        if state.status is WorkflowStatus.SUCCEEDED:
            return blobs.resolve(state.output, self.blobs)
        if state.status is WorkflowStatus.FAILED:
            raise WorkflowFailed(run_id, state.error)
        if state.status is WorkflowStatus.CANCELLED:
            raise WorkflowCancelled(run_id, state.error)
        raise TimeoutError(f"run {run_id} waits ({state.status.value}) with nothing left to "
                           "do: send the signal it waits for")

    async def run(self, workflow: Any, input: Any = None, **kwargs: Any) -> Any:
        """Start a run and return its output (``start`` then ``result``)."""
        return await self.result(await self.start(workflow, input, **kwargs))

    async def resume(self, run_id: str) -> None:
        """After deploying code that decides as the history did (registering the fixed
        ``@workflow``), let a run caught by a ``NondeterminismError`` retry its
        activation (its retry timer fires on ``result``)."""
        self.nondeterministic.pop(run_id, None)

    def history(self, run_id: str) -> list[ev.HistoryEvent]:
        """The run's history, as the coordinator would have recorded it."""
        return list(self.histories.get(run_id, []))

    def state(self, run_id: str) -> WorkflowState:
        """The run's state (what the coordinator's table would hold)."""
        return self.states[run_id]

    # -- the loop --------------------------------------------------------------------------

    async def run_until_idle(self, timers: bool = True) -> None:
        """Apply inputs until none is left; with ``timers``, then fire the next timer
        (the clock jumps to it) and go on, until no timer is armed either."""
        while True:
            while self._inputs:
                at, _, item = heapq.heappop(self._inputs)
                self.now_ms = max(self.now_ms, at)
                await self._apply(item)
            if not timers or not self._fire_next_timer():
                return

    def _fire_next_timer(self) -> bool:
        """Fire the earliest timer; a cache's expiry only once the clock has reached it
        (the runs' timers move the clock, a cache's entry lives on meanwhile)."""
        armed = [(t.fire_at_ms, wid, tid) for wid, s in self.states.items()
                 if not s.status.terminal and wid not in self.nondeterministic
                 for tid, t in s.timers.items()
                 if not is_cache(wid) or t.fire_at_ms <= self.now_ms]
        armed += [(s.deadline_at_ms, wid, RUN_DEADLINE_TIMER) for wid, s in self.states.items()
                  if not s.status.terminal and s.deadline_at_ms is not None]  # a deadline
        if not armed:
            return False
        at, wid, tid = min(armed)
        self._put(ev.TimerFired(wid, tid, max(at, self.now_ms)))
        return True

    def _put(self, item: ev.Input) -> None:
        heapq.heappush(self._inputs, (item.at_ms, next(self._order), item))

    async def _apply(self, item: ev.Input) -> None:
        wid = item.workflow_id
        result = step(self.states.get(wid), item)
        if result.state is not None:
            self.states[wid] = result.state
        self.histories.setdefault(wid, []).extend(result.events)
        for event in result.events:
            await self._carry_out(event.body, result.state)

    async def _carry_out(self, body: ev.Body, state: WorkflowState | None) -> None:
        assert state is not None
        report = report_to_parent(body, state)
        if report is not None:  # a child's start too, as the coordinator reports it
            self._put(report)
        if isinstance(body, ev.TaskCancelled) and self._child(state, body) is not None:
            self._put(ev.CancelRequested(
                child_id(body.workflow_id, body.node, body.index, body.attempt), body.at_ms,
                f"parent {body.workflow_id}: {body.reason}", parent_id=body.workflow_id))
        for item in permit_inputs(body):  # a held attempt's request, a grant, a release
            self._put(item)
        for item in cache_inputs(body):  # a lookup, a cache's answer, a release
            self._put(item)
        if not isinstance(body, ev.TaskDispatched):
            return
        child = self._child(state, body)
        if child is not None:
            self._put(ev.ChildSubmitted(
                child_id(body.workflow_id, body.node, body.index, body.attempt),
                body.workflow_id, body.node, body.index, body.attempt, child, body.input,
                body.at_ms, state.tenant))
            return
        if is_continued(body):
            return  # decided already, by the report of the step before it: no one runs it
        # a worker reports the start of each attempt it takes: the history holds it (and
        # max_events counts it) as on the stack
        self._put(ev.TaskStarted(body.workflow_id, body.node, body.index, body.attempt,
                                 self.now_ms, WORKER))
        self._put(await self._run_task(activation_dispatch(state, body)))

    def _child(self, state: WorkflowState, body: ev.TaskDispatched | ev.TaskCancelled) -> Any:
        spec = state.spec.node(body.node)
        if spec.code is not None:
            found = child_spec(state, body.node, body.index)
            return found.workflow if found is not None else None
        return spec.child.workflow if spec.child is not None else None

    async def _run_task(self, body: ev.TaskDispatched) -> ev.Input:
        """Run one attempt now; its report (success or failure) at the same instant."""
        self.dispatched += 1
        where = (body.workflow_id, body.node, body.index, body.attempt, self.now_ms)
        info = REGISTRY.get(body.task)
        if info is None:
            return ev.TaskFailed(*where, f"no task {body.task!r} is registered here (import "
                                 "its module in the test)", "TaskNotFoundError", retryable=False)
        resolved = self.payloads.resolved(body, where)
        if isinstance(resolved, ev.TaskFailed):
            return resolved
        given, resumed = resolved
        ctx = TaskContext(AttemptInfo(body.workflow_id, body.node, body.index, body.attempt),
                          last_checkpoint=resumed)
        # what crosses to and from task code goes as JSON, as over Kafka: a function that
        # changes a value it gave or got later does not change the history
        kwargs = through_json(given) if isinstance(given, dict) else {}
        activation = getattr(info.fn, ACTIVATION_MARK, False)
        try:
            if activation:
                wf = info_of(body.task)
                assert wf is not None
                output = await activate(wf, kwargs, None, self._resolve, cache=self.cache,
                                        node=body.node)
            else:
                output = await _call(info.fn, info.wants_ctx, ctx, kwargs)
        except NondeterminismError as e:
            self.nondeterministic[body.workflow_id] = e
            return ev.TaskFailed(*where, str(e), type(e).__name__, retryable=True)
        except NonRetryableError as e:
            return ev.TaskFailed(*where, str(e), type(e).__name__, retryable=False)
        except Exception as e:
            return ev.TaskFailed(*where, str(e) or type(e).__name__, type(e).__name__,
                                 retryable=True)
        return self.payloads.report(where, output, activation, self.cache, ctx.units)

    async def _resolve(self, name: str) -> tuple[dict[str, Any], int | None]:
        """A definition ``wf.call`` names. One the environment was not given fails the
        activation for good: a worker retries it until the definition is registered,
        which here it never is (the retries would take minutes to give up)."""
        if name not in self.definitions:
            raise NonRetryableError(f"no definition {name!r}: give "
                                    "Environment(definitions=...)")
        return self.definitions[name], 1

    def _spec_of(self, workflow: Any) -> dict[str, Any]:
        info = info_of(workflow)
        if info is not None:
            return info.spec()
        if isinstance(workflow, str):
            if workflow not in self.definitions:
                raise LookupError(f"no @workflow or definition {workflow!r} here")
            return self.definitions[workflow]
        if isinstance(workflow, dict):
            read_spec(workflow)
            return workflow
        raise TypeError(f"start takes a @workflow, a definition's name or a spec document, "
                        f"not {type(workflow).__name__}")


async def _call(fn: Callable[..., Any], wants_ctx: bool, ctx: TaskContext,
                kwargs: dict[str, Any]) -> Any:
    """Call a task function as a worker would: generators give the list of their chunks,
    or what a sync generator returned if not None (``services/worker/calls.py``)."""
    args = {"ctx": ctx, **kwargs} if wants_ctx else kwargs
    if inspect.isasyncgenfunction(fn):
        return [chunk async for chunk in fn(**args)]
    if inspect.iscoroutinefunction(fn):
        return await fn(**args)
    out = await asyncio.to_thread(lambda: fn(**args))
    return await asyncio.to_thread(_drain, out) if inspect.isgenerator(out) else out


def _drain(generator: Generator[Any, Any, Any]) -> Any:
    """Run a sync generator to its end: what it returned, else the chunks it yielded."""
    chunks: list[Any] = []
    while True:
        try:
            chunks.append(next(generator))
        except StopIteration as stop:
            return chunks if stop.value is None else stop.value
