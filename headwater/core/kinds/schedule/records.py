"""The ``schedule`` kind's events (its spec fields and fire times: ``cron.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScheduleArmed:
    """History: a ``schedule`` node's next fire time is ``fire_ms`` (ms since the
    epoch): its timer ``schedule:<node>`` is armed for then."""

    workflow_id: str
    node: str
    at_ms: int
    fire_ms: int


@dataclass(frozen=True)
class ScheduleFired:
    """History: the fire time ``fire_ms`` of a ``schedule`` node came due. ``outcome``
    is ``started`` (its run, the child workflow ``run_id``, was dispatched with this
    step), ``skipped_overlap`` (an earlier run still ran), ``skipped_missed`` (its timer
    fired more than ``misfire_grace`` after it, and the catch-up policy did not run it)
    or ``skipped_paused``."""

    workflow_id: str
    node: str
    at_ms: int
    fire_ms: int
    outcome: str
    run_id: str | None = None


@dataclass(frozen=True)
class SchedulePaused:
    """History: a ``pause`` signal (``signal_id``, or ``""``) paused the schedule node."""

    workflow_id: str
    node: str
    at_ms: int
    signal_id: str = ""


@dataclass(frozen=True)
class ScheduleResumed:
    """History: a ``resume`` signal (``signal_id``, or ``""``) resumed the schedule node;
    a ``ScheduleArmed`` for its next fire time after now follows."""

    workflow_id: str
    node: str
    at_ms: int
    signal_id: str = ""
