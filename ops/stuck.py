"""Stuck workflows: not finished, and nothing will ever move them (docs/architecture.md §3,
invariant 5).

A workflow moves when an input arrives for it. The inputs it can still expect are
reports of an attempt on a queue or running (``TaskStatus.live``; a running attempt
also has its lease, and either may have a deadline: ``state.task_timers``) and the
firing of a retry timer (``state.timers``). A running workflow with none of them waits
forever; so does a task waiting to retry whose retry timer is gone, whatever else
runs. Wait nodes and child workflows do not exist in this version; when they do, an
open wait and a running child will count as pending too.

An attempt queued where no worker listens is pending by this definition: a worker may
still come. A cancellation can always end a stuck workflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from headwater.core.ids import retry_timer_id
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus
from ops.history import Recorded, dedupe, fold


def pending(state: WorkflowState) -> list[str]:
    """What the workflow still waits for: live attempts and timers, one phrase each."""
    found = [f"task {key} {t.status.value}" for key, t in state.tasks.items()
             if t.status.live]
    found += [f"timer {timer_id}" for timer_id in state.timers]
    return found


def is_stuck(state: WorkflowState) -> str | None:
    """Why a workflow is stuck, or None if it is finished or something will move it.

    Args:
        state: a workflow's state (folded from its history, or from the table).

    Returns:
        A sentence naming the unfinished nodes and what is missing, or None.
    """
    if state.status.terminal:
        return None
    if state.spec_error:
        return f"its spec is invalid ({state.spec_error}) but it did not fail"
    orphans = [key for key, t in state.tasks.items() if t.status is TaskStatus.RETRY_WAIT
               and retry_timer_id(key, t.attempt + 1) not in state.timers]
    if orphans:
        return f"task {', '.join(orphans)} waits to retry without a retry timer"
    if pending(state):
        return None
    open_nodes = [f"{node_id} ({n.status.value})" for node_id, n in state.nodes.items()
                  if not n.status.terminal]
    if not open_nodes:
        return "every node finished but the workflow did not"
    return (f"no attempt queued or running and no timer, with nodes unfinished: "
            f"{', '.join(open_nodes)}")


@dataclass(frozen=True)
class Stuck:
    """A stuck workflow.

    Attributes:
        workflow_id: its id.
        name: its spec's name.
        seq: its last event's seq.
        updated_at_ms: its last event's time, ms since the epoch.
        reason: what ``is_stuck`` says.
    """

    workflow_id: str
    name: str
    seq: int
    updated_at_ms: int
    reason: str


@dataclass
class Scan:
    """What ``scan`` found.

    Attributes:
        workflows: how many workflows the log has.
        running: how many of them are not finished.
        recent: running ones skipped because their last event is too recent.
        stuck: the stuck ones.
        unfoldable: ``(workflow id, why)`` for histories that do not fold.
        truncated: ``(workflow id, first seq)`` for histories whose beginning is gone
            (deleted by the topic's retention): not judged.
    """

    workflows: int = 0
    running: int = 0
    recent: int = 0
    stuck: list[Stuck] = field(default_factory=list)
    unfoldable: list[tuple[str, str]] = field(default_factory=list)
    truncated: list[tuple[str, int]] = field(default_factory=list)


def scan(histories: Mapping[str, Sequence[Recorded]], now_ms: int,
         older_than_ms: int = 0) -> Scan:
    """Fold every workflow's history and collect the stuck ones.

    Args:
        histories: workflow id -> its records in log order (duplicates included).
        now_ms: the current time, ms since the epoch.
        older_than_ms: skip running workflows whose last event is younger than this, ms
            (their next event may be on its way).

    Returns:
        The stuck workflows (by id), and the histories that could not be judged.
    """
    found = Scan(workflows=len(histories))
    for workflow_id in sorted(histories):
        events, conflicts = dedupe(histories[workflow_id])
        if events and events[0].event.seq > 1:
            found.truncated.append((workflow_id, events[0].event.seq))
            continue
        result = fold(r.event for r in events)
        if result.error or conflicts or result.state is None:
            why = result.error or (conflicts[0].describe() if conflicts else "no events")
            found.unfoldable.append((workflow_id, why))
            continue
        state = result.state
        if state.status.terminal:
            continue
        found.running += 1
        if now_ms - state.updated_at_ms < older_than_ms:
            found.recent += 1
            continue
        reason = is_stuck(state)
        if reason is not None:
            found.stuck.append(Stuck(workflow_id, state.name, state.seq,
                                     state.updated_at_ms, reason))
    return found
