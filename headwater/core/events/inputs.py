"""Inputs: what arrives on the input topics (``submissions``, ``control``, ``reports``)
for the state machine, which turns each into zero or more history events.

Recorded inputs (``TaskStarted``, ``TaskSucceeded``, ``TimerFired``, ...) appear in the
history as the coordinator applied them: their ``at_ms`` is the coordinator's clock when
it took the record, whatever the producer wrote (``services/coordinator/inputs.py``,
docs/architecture.md "Time"). Times are integer milliseconds since the Unix epoch; the
core takes them from the record and never reads a clock. A child workflow's submission
(``ChildSubmitted``) and a signal (``SignalSent``) are the ``workflow`` and ``wait``
kinds' records (their units' ``records.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headwater.core.calls import CallLinked
from headwater.core.events.pause import PauseRequested, ResumeRequested
from headwater.core.kinds.cache.records import CacheAnswered, CacheLookedUp, CacheReleased
from headwater.core.kinds.limiter.records import (
    LimitDefined,
    PermitDenied,
    PermitGranted,
    PermitReleased,
    PermitRequested,
)
from headwater.core.kinds.wait.records import SignalSent
from headwater.core.kinds.workflow.records import ChildSubmitted


@dataclass(frozen=True)
class WorkflowSubmitted:
    """A request to run a workflow (gateway or any producer).

    ``spec`` is always the full document. ``definition`` and ``definition_version`` name
    the registered definition it was resolved from (the gateway resolves it; the
    coordinator never looks one up); None for an inline spec. ``rerun`` makes it a rerun
    of another run (``headwater/core/reuse.py``: its source and the outputs it reuses,
    which the gateway read from the source's history); None for a run of its own.
    ``cache_refresh`` bypasses the cache's hits for every cached node of the run
    (``?cache=refresh``: its attempts compute and store fresh outputs). ``parent`` names
    the task attempt whose ``ctx.call`` submits it (``{"workflow_id", "node", "index",
    "attempt"}``, ``headwater/core/calls.py``); None for a run of its own. ``paused_by``
    starts the run paused (``WorkflowPaused`` right after its acceptance, before any
    dispatch), by that (``definition:<name>``: the gateway's, for a paused definition);
    None starts it running.
    """

    workflow_id: str
    spec: Any
    input: Any
    at_ms: int
    tenant: str | None = None
    definition: str | None = None
    definition_version: int | None = None
    rerun: Any = None
    cache_refresh: bool = False
    parent: Any = None
    paused_by: str | None = None


@dataclass(frozen=True)
class CancelRequested:
    """A request to cancel a workflow.

    ``parent_id`` is set by a parent's coordinator cancelling its child: such a cancel
    ends only a workflow that is that parent's child (``ParentLinked``), so a parent
    whose child id was taken by another run cannot cancel that run. None (a user's
    cancel, from the gateway or any producer) cancels whatever the id names.
    """

    workflow_id: str
    at_ms: int
    reason: str = ""
    parent_id: str | None = None


@dataclass(frozen=True)
class TimerFired:
    """A durable timer's deadline passed (published by the coordinator's timer loop)."""

    workflow_id: str
    timer_id: str
    at_ms: int


@dataclass(frozen=True)
class TaskStarted:
    """A worker began running an attempt."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    worker: str = ""


@dataclass(frozen=True)
class TaskProgressed:
    """Progress of a running attempt: ``fraction`` in [0, 1] and a message."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    fraction: float = 0.0
    message: str = ""


@dataclass(frozen=True)
class TaskSucceeded:
    """An attempt returned ``output`` (any JSON value).

    ``continuation``: on a code workflow's step only, the decision of the function's next
    activation, which the worker that ran the step reached at once with the run's
    instance it kept (``headwater.workflows.instances.continued``): ``{"act": k,
    "through": results given, "at_ms": its time, "decision": ...}``. The coordinator
    records it as activation k, dispatched and decided in the same batch, when it is
    exactly the activation it would dispatch next; otherwise it ignores it and dispatches
    as usual (``headwater/core/kinds/code/continuation.py``). The history's copy has
    none.

    ``units``: what the attempt reports it used of its node's rate limits
    (``ctx.report_units``; model tokens, say), or None: the units it asked for. The
    coordinator hands it to the rate limiters with the release (``PermitReleased``).
    """

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    output: Any = None
    continuation: Any = None
    units: int | None = None


@dataclass(frozen=True)
class TaskFailed:
    """An attempt raised. ``retryable`` is false for the SDK's non-retryable error.

    ``traceback`` is the exception's traceback as the worker formatted it (task code's
    frames first, chained causes included, at most ``MAX_TRACEBACK_CHARS`` characters:
    ``services/worker/tracebacks.py``); "" for a failure nothing raised (a timeout, a
    lost lease, a child workflow's end). The history keeps it; the state does not.
    """

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    error: str = ""
    error_type: str = ""
    retryable: bool = True
    traceback: str = ""


@dataclass(frozen=True)
class TaskHeartbeated:
    """The worker running an attempt is alive (sent every third of its heartbeat timeout)."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int


@dataclass(frozen=True)
class TaskCheckpointed:
    """Task code saved ``checkpoint`` (any JSON value); the next attempt receives it."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    checkpoint: Any = None


@dataclass(frozen=True)
class TaskOutputStreamed:
    """A generator task yielded ``chunk`` (any JSON value), number ``chunk_seq`` (0-based)
    of its attempt."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int
    chunk_seq: int = 0
    chunk: Any = None


Report = (
    TaskStarted | TaskProgressed | TaskHeartbeated | TaskCheckpointed | TaskOutputStreamed
    | TaskSucceeded | TaskFailed
)
Input = (WorkflowSubmitted | ChildSubmitted | CancelRequested | SignalSent | TimerFired
         | Report | PermitRequested | PermitReleased | PermitGranted | PermitDenied
         | LimitDefined
         | CacheLookedUp | CacheReleased | CacheAnswered
         | CallLinked | PauseRequested | ResumeRequested)
