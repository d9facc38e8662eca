"""Pausing a run: the two control inputs (``PauseRequested``, ``ResumeRequested``) and
the history events the machine records for them (``headwater/core/machine/pause.py``).

A paused run dispatches nothing new: an attempt that would be dispatched is recorded as
``DispatchDeferred`` (a held task), a durable timer that comes due as ``TimerDeferred``
(it keeps its deadline); ``WorkflowResumed`` is followed by their dispatches and firings
in the order they were deferred. Attempts already running go on, and their reports are
applied; an attempt dispatched but not started yet is recalled (``DispatchRecalled``) and
dispatched again at the resume. Times are ms since the Unix epoch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PauseRequested:
    """A request to pause a run (the gateway, a bulk action, or any producer on
    ``control``, keyed by the workflow id).

    ``request_id`` makes it idempotent: a request whose id the run recorded changes
    nothing (a copy that arrives after a resume does not pause the run again); ``""``
    has none. ``by`` names who asked (a principal, ``definition:<name>`` for a paused
    definition), shown with the run's status; ``reason`` is free text.
    """

    workflow_id: str
    at_ms: int
    request_id: str = ""
    by: str = ""
    reason: str = ""


@dataclass(frozen=True)
class ResumeRequested:
    """A request to resume a paused run (as ``PauseRequested``)."""

    workflow_id: str
    at_ms: int
    request_id: str = ""
    by: str = ""


@dataclass(frozen=True)
class WorkflowPaused:
    """History: the run paused; it dispatches nothing new until ``WorkflowResumed``."""

    workflow_id: str
    at_ms: int
    request_id: str = ""
    by: str = ""
    reason: str = ""


@dataclass(frozen=True)
class WorkflowResumed:
    """History: the run resumed; the dispatches and timer firings it deferred follow,
    in the order they were deferred. ``held``: how many dispatches, ``due``: how many
    timers."""

    workflow_id: str
    at_ms: int
    request_id: str = ""
    by: str = ""
    held: int = 0
    due: int = 0


@dataclass(frozen=True)
class DispatchDeferred:
    """History: the run is paused, so this attempt is held instead of dispatched
    (``TaskStatus.HELD``, no deadline, no lease); its ``TaskDispatched`` follows the
    resume."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int


@dataclass(frozen=True)
class DispatchRecalled:
    """History: the run paused while this attempt was dispatched but not started, so it
    is recalled: workers are told to skip it, or to stop it if it has just started
    (``TaskCancelled`` on ``worker-control`` only), and its reports are stale from now
    on. The task is held with the next attempt (``attempt + 1``), whose
    ``TaskDispatched`` follows the resume; a recalled attempt does not count against the
    task's retry policy."""

    workflow_id: str
    node: str
    index: int | None
    attempt: int
    at_ms: int


@dataclass(frozen=True)
class TimerDeferred:
    """History: a durable timer (a retry's, a sleep's, a wait's timeout, a schedule's)
    came due while the run was paused: it is kept as due, and fires at the resume with
    its own deadline (``fire_at_ms``), not a new one."""

    workflow_id: str
    timer_id: str
    fire_at_ms: int
    at_ms: int
