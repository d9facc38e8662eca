"""The ``schedule`` kind's events (its spec fields and fire times: ``cron.py``), with how
they read (``DESCRIBE``: their timeline details; ``FOLLOW``: none in the live view)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headwater.core.instants import iso_text
from headwater.core.wording import Describe, Follow


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


DESCRIBE: dict[type[Any], Describe] = {
    ScheduleArmed: lambda b: f"next fire time {iso_text(b.fire_ms)}",
    ScheduleFired: lambda b: (f"{iso_text(b.fire_ms)}: {b.outcome}"
                              + (f" {b.run_id}" if b.run_id else "")),
    SchedulePaused: lambda b: "paused",
    ScheduleResumed: lambda b: "resumed",
}
"""Each event's timeline detail."""

FOLLOW: dict[type[Any], Follow | None] = dict.fromkeys(DESCRIBE)
"""No line in the live view, nor any change to it: a schedule's workflow is followed as
its runs, each a workflow of its own."""
