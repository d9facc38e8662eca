"""History events: what the state machine records, and the ``HistoryEvent`` envelope.

The coordinator publishes each on ``events`` inside a ``HistoryEvent`` carrying the
per-workflow ``seq``. Besides the records here, the history holds recorded inputs
(``events.inputs``: ``TaskStarted``, ``TaskSucceeded``, ``TimerFired``, ...) and the node
kinds' events (each in its unit's ``records.py``); ``Body`` names them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from headwater.core.calls import CallerLinked, CallLinked
from headwater.core.conditions import ConditionEvaluated
from headwater.core.deadline import DeadlineSet
from headwater.core.events.inputs import (
    TaskCheckpointed,
    TaskFailed,
    TaskHeartbeated,
    TaskOutputStreamed,
    TaskProgressed,
    TaskStarted,
    TaskSucceeded,
    TimerFired,
)
from headwater.core.events.pause import (
    DispatchDeferred,
    DispatchRecalled,
    TimerDeferred,
    WorkflowPaused,
    WorkflowResumed,
)
from headwater.core.ids import dispatch_id as make_dispatch_id
from headwater.core.kinds.cache.records import (
    CacheAnswered,
    CacheLookedUp,
    CacheReleased,
    CacheReturned,
    CacheServed,
    TaskCached,
    TaskLookedUp,
)
from headwater.core.kinds.limiter.records import (
    LimitDefined,
    PermitGranted,
    PermitIssued,
    PermitRefused,
    PermitReleased,
    PermitRequested,
    PermitsReturned,
    TaskHeld,
)
from headwater.core.kinds.loop.records import LoopStepDecided
from headwater.core.kinds.schedule.records import (
    ScheduleArmed,
    ScheduleFired,
    SchedulePaused,
    ScheduleResumed,
)
from headwater.core.kinds.sleep.records import SleepStarted
from headwater.core.kinds.wait.records import (
    SignalConsumed,
    SignalDiscarded,
    SignalSent,
    WaitStarted,
)
from headwater.core.kinds.workflow.records import ParentLinked


@dataclass(frozen=True)
class TaskDispatched:
    """One attempt of one task, sent to ``tasks.<queue>`` and recorded in the history."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    task: str
    queue: str
    input: Any
    at_ms: int
    timeout_s: float | None = None
    heartbeat_timeout_s: float | None = None
    checkpoint: Any = None

    @property
    def deadline_ms(self) -> int | None:
        """When the attempt times out (ms since the epoch, on the coordinator's clock):
        ``timeout_s`` after dispatch, time on the queue included; None without a timeout.
        A worker must not compare it with its own clock (it times ``timeout_s`` from when
        it took the dispatch)."""
        if self.timeout_s is None:
            return None
        return self.at_ms + round(self.timeout_s * 1000)

    @property
    def dispatch_id(self) -> str:
        """``workflow_id/node[index]/attempt``."""
        return make_dispatch_id(self.workflow_id, self.node, self.index, self.attempt)










@dataclass(frozen=True)
class WorkflowAccepted:
    """History: the workflow was accepted with this spec document and input, resolved
    from the registered definition ``definition`` version ``definition_version`` (None
    for an inline spec)."""

    workflow_id: str
    at_ms: int
    spec: Any
    input: Any
    tenant: str | None = None
    definition: str | None = None
    definition_version: int | None = None
    rerun: Any = None
    """A rerun's source and what it reuses (``headwater/core/reuse.py``); None."""
    cache_refresh: bool = False
    """The run bypasses cache hits (``WorkflowSubmitted.cache_refresh``)."""


@dataclass(frozen=True)
class NodeReused:
    """History: a rerun took a node's output from the run it reruns (``rerun`` of
    ``WorkflowAccepted``); the node does not run again. Its ``NodeFinished`` follows."""

    workflow_id: str
    node: str
    output: Any
    at_ms: int


@dataclass(frozen=True)
class TaskReused:
    """History: a rerun took item ``index`` of a fanned-out node from the run it reruns;
    the item is not dispatched, and counts as succeeded with ``attempt`` (the
    generation's first)."""

    workflow_id: str
    node: str
    index: int
    attempt: int
    output: Any
    at_ms: int


@dataclass(frozen=True)
class MapExpanded:
    """History: a map node resolved its list; ``count`` children will run."""

    workflow_id: str
    node: str
    count: int
    at_ms: int


@dataclass(frozen=True)
class TimerScheduled:
    """History: a durable timer that fires at ``fire_at_ms`` to retry an attempt."""

    workflow_id: str
    timer_id: str
    fire_at_ms: int
    node: str
    index: int | None
    attempt: int
    at_ms: int


@dataclass(frozen=True)
class TaskCancelled:
    """History: an attempt still queued, running or waiting to retry was cancelled (the
    workflow or its node ended first). Also sent to every worker, which stops it."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    reason: str = ""


@dataclass(frozen=True)
class ReportDiscarded:
    """History: a late outcome (``report``, a type name) for an attempt that had already
    ended otherwise (timed out, lost, cancelled, superseded) changed nothing."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    report: str = ""
    reason: str = ""


@dataclass(frozen=True)
class NodeFinished:
    """History: a node reached a terminal status (a ``NodeStatus`` value)."""

    workflow_id: str
    node: str
    status: str
    at_ms: int
    error: str = ""


@dataclass(frozen=True)
class WorkflowRestarted:
    """History: a lost attempt restarted the whole run (``restart_on_failure``,
    ``headwater.core.spec.restart``), or a code workflow continued as new
    (``continued``: its function called ``wf.continue_as_new``, and the generation runs
    with ``input``). Every unfinished attempt was cancelled just
    before; ``generation`` (2, 3, ...) starts again from the root nodes with the
    workflow's input. The previous generation's tasks (``dropped``: node -> how many
    tasks it had, its ``next_index``, so the record grows with the nodes, not the tasks)
    and node outputs leave the state, and the new generation's attempts are numbered
    from ``attempt_floor + 1`` (the highest attempt so far, plus one), so a late
    report of an older attempt is never taken for a newer one."""

    workflow_id: str
    at_ms: int
    generation: int
    attempt_floor: int
    reason: str = ""
    dropped: dict[str, int] = field(default_factory=dict)
    continued: bool = False
    input: Any = None


@dataclass(frozen=True)
class WorkflowSucceeded:
    """History, terminal: every node succeeded; ``output`` is the workflow's output."""

    workflow_id: str
    at_ms: int
    output: Any = None


@dataclass(frozen=True)
class WorkflowFailed:
    """History, terminal: a node failed for good, or the submission was invalid."""

    workflow_id: str
    at_ms: int
    error: str = ""


@dataclass(frozen=True)
class WorkflowCancelled:
    """History, terminal: cancelled on request."""

    workflow_id: str
    at_ms: int
    reason: str = ""


Body = (
    WorkflowAccepted
    | TaskDispatched
    | TaskStarted
    | TaskProgressed
    | TaskHeartbeated
    | TaskCheckpointed
    | TaskOutputStreamed
    | TaskSucceeded
    | TaskFailed
    | TaskCancelled
    | ReportDiscarded
    | TimerScheduled
    | TimerFired
    | MapExpanded
    | ParentLinked
    | WaitStarted
    | SignalSent
    | SignalConsumed
    | SignalDiscarded
    | SleepStarted
    | NodeReused
    | TaskReused
    | ConditionEvaluated
    | LoopStepDecided
    | ScheduleArmed
    | ScheduleFired
    | SchedulePaused
    | ScheduleResumed
    | TaskHeld
    | PermitGranted
    | PermitsReturned
    | PermitRequested
    | PermitReleased
    | PermitIssued
    | PermitRefused
    | LimitDefined
    | TaskLookedUp
    | CacheAnswered
    | TaskCached
    | CacheReturned
    | CacheLookedUp
    | CacheServed
    | CacheReleased
    | NodeFinished
    | WorkflowRestarted
    | WorkflowSucceeded
    | WorkflowFailed
    | WorkflowCancelled
    | DeadlineSet
    | CallerLinked
    | CallLinked
    | WorkflowPaused
    | WorkflowResumed
    | DispatchDeferred
    | TimerDeferred
    | DispatchRecalled
)
TERMINAL_BODIES = (WorkflowSucceeded, WorkflowFailed, WorkflowCancelled)


@dataclass(frozen=True)
class HistoryEvent:
    """One record of ``events``: ``body`` numbered ``seq`` (1, 2, 3 ... per workflow)."""

    workflow_id: str
    seq: int
    body: Body

    @property
    def type(self) -> str:
        """The body's class name, e.g. ``"TaskSucceeded"`` (the SSE ``event:`` field)."""
        return type(self.body).__name__

    @property
    def terminal(self) -> bool:
        """Whether this event ends the workflow."""
        return isinstance(self.body, TERMINAL_BODIES)
