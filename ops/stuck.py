"""Stuck workflows: not finished, and nothing will ever move them (docs/architecture.md §3,
invariant 5).

A workflow moves when an input arrives for it. The inputs it can still expect are
reports of an attempt on a queue or running (``TaskStatus.live``; a running attempt
also has its lease, and either may have a deadline: ``state.task_timers``; a child
workflow's attempt waits for the child's end), the firing of a durable timer
(``state.timers``: a retry, a wait's timeout, a sleep's wake-up) and a signal for an
open wait (with or without a timeout: a signal may come at any time). A running
workflow with none of them waits forever; so does one with

- a task waiting to retry whose retry timer is gone, or a sleep without its wake-up
  timer, whatever else runs;
- a sleep whose wake-up is more than the grace past (the coordinators' timer loop
  should have fired it);
- a child workflow attempt whose child has vanished: no history for the child more than
  the grace after the dispatch, or a child that ended more than the grace ago without
  the parent hearing (the attempt's deadline, if it has one, may still fail it).

An attempt queued where no worker listens is pending by this definition (a worker may
still come), but it is listed too when the workers' announcements are given
(``serving``): a task or map attempt, or a code workflow's activation or task step,
dispatched on a queue without a live worker, or whose live workers do not serve its
task (``unserved``). A code workflow's sleeps and signal waits are tasks no worker runs
(their timer or a signal ends them): pending, named as such. So is an attempt held for a
permit of a limiter (its grant moves it), and a limiter itself (a run that never ends:
it waits for requests). A paused run is never stuck: it waits for its resume, which
moves it (its held attempts and its timers that came due are out of ``state.tasks``'
live ones and ``state.timers`` until then). A cancellation can always end a stuck
workflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from headwater.core.ids import SLEEP_TIMER, child_id, node_timer_id, retry_timer_id
from headwater.core.kinds.code.journal import SIGNAL_TASK, SLEEP_TASK
from headwater.core.pausing import PAUSED
from headwater.core.spec import NodeKind
from headwater.core.state import WorkflowState
from headwater.core.status import NodeStatus, TaskStatus
from headwater.core.work import CHILD_TASK, task_work
from ops.history import Recorded, dedupe, fold

GRACE_MS = 60_000
"""How late a sleep's wake-up, or a child's start or end report, may be before the
workflow counts as stuck, ms."""
Seen = Mapping[str, WorkflowState | None]
"""Workflow id -> its folded state (None: in the log, but not foldable or truncated)."""


def _nodes_of_kind(state: WorkflowState, kind: NodeKind) -> list[str]:
    return [n.id for n in state.spec.nodes if n.kind is kind]


def _signal_of(state: WorkflowState, node_id: str) -> str:
    wait = state.spec.node(node_id).wait
    return wait.signal if wait is not None else "?"


def pending(state: WorkflowState) -> list[str]:
    """What the workflow still waits for: live attempts, timers and open waits, one
    phrase each."""
    found = [_own_step(t.worker, key) or f"task {key} {t.status.value}"
             for key, t in state.tasks.items() if t.status.live]
    if state.paused:
        found.append("a resume (it is paused)")
    found += [f"task {key} held for a permit of {t.waiting_for}"
              for key, t in state.tasks.items()
              if t.status is TaskStatus.HELD and t.waiting_for and t.waiting_for != PAUSED]
    if _nodes_of_kind(state, NodeKind.LIMITER):
        found.append("requests for its key (a limiter)")
    found += [f"timer {timer_id}" for timer_id in state.timers]
    found += [f"wait {node_id} for signal {_signal_of(state, node_id)}"
              for node_id in _nodes_of_kind(state, NodeKind.WAIT)
              if state.nodes[node_id].status is NodeStatus.RUNNING]
    return found


def _own_step(worker: str, key: str) -> str | None:
    """A code workflow's sleep or signal wait (a task no worker runs: its ``worker``
    names which), one phrase; None for any other task."""
    if worker == SLEEP_TASK:
        return f"sleep {key}"
    if worker == SIGNAL_TASK:
        return f"signal wait {key}"
    return None


def is_stuck(state: WorkflowState, now_ms: int | None = None, seen: Seen | None = None,
             grace_ms: int = GRACE_MS) -> str | None:
    """Why a workflow is stuck, or None if it is finished or something will move it.

    Args:
        state: a workflow's state (folded from its history, or from the table).
        now_ms: the current time, ms since the epoch (None: late sleeps and children
            are not judged).
        seen: every workflow in the log (None: children are not judged).
        grace_ms: how late a wake-up or a child may be, ms.

    Returns:
        A sentence naming the unfinished nodes and what is missing, or None.
    """
    if state.status.terminal or (state.paused and not state.spec_error):
        return None  # a paused run's resume moves it; what it deferred is held apart
    if state.spec_error:
        return f"its spec is invalid ({state.spec_error}) but it did not fail"
    orphans = [key for key, t in state.tasks.items() if t.status is TaskStatus.RETRY_WAIT
               and retry_timer_id(key, t.attempt + 1) not in state.timers]
    if orphans:
        return f"task {', '.join(orphans)} waits to retry without a retry timer"
    why = _sleep_stuck(state, now_ms, grace_ms) or (
        _child_vanished(state, now_ms, seen, grace_ms) if now_ms is not None and seen is not None
        else None)
    if why is not None or pending(state):
        return why
    open_nodes = [f"{node_id} ({n.status.value})" for node_id, n in state.nodes.items()
                  if not n.status.terminal]
    if not open_nodes:
        return "every node finished but the workflow did not"
    return (f"no attempt queued or running, no timer and no wait, with nodes unfinished: "
            f"{', '.join(open_nodes)}")


def unserved(state: WorkflowState, serving: Mapping[str, set[str]]) -> str | None:
    """A task or map attempt dispatched (not started) on a queue that no live worker
    serves its task on, or None.

    Args:
        state: a workflow's state.
        serving: queue -> the tasks its live workers serve (the workers topic).
    """
    if state.status.terminal:
        return None
    kinds = (NodeKind.TASK, NodeKind.MAP, NodeKind.CODE)
    for key, t in state.tasks.items():
        node = state.spec.node(t.node) if t.node in state.nodes else None
        if t.status is not TaskStatus.DISPATCHED or node is None or node.kind not in kinds:
            continue
        work = task_work(state, t.node, t.index)  # a code step's own task and queue
        if work.task == CHILD_TASK:
            continue
        if work.queue not in serving:
            return (f"task {key}/{t.attempt} waits on queue {work.queue}, which has no live "
                    "worker")
        if work.task not in serving[work.queue]:
            return (f"task {key}/{t.attempt} waits on queue {work.queue}, whose live workers "
                    f"do not serve task {work.task}")
    return None


def _sleep_stuck(state: WorkflowState, now_ms: int | None, grace_ms: int) -> str | None:
    """A running sleep without its wake-up timer, or whose wake-up is long past."""
    for node_id in _nodes_of_kind(state, NodeKind.SLEEP):
        if state.nodes[node_id].status is not NodeStatus.RUNNING:
            continue
        timer = state.timers.get(node_timer_id(SLEEP_TIMER, node_id))
        if timer is None:
            return f"sleep {node_id} has no wake-up timer"
        if now_ms is not None and now_ms - timer.fire_at_ms > grace_ms:
            return (f"sleep {node_id} was due to wake {(now_ms - timer.fire_at_ms) / 1000:.0f}"
                    " s ago and has not")
    return None


def _child_vanished(state: WorkflowState, now_ms: int, seen: Seen,
                    grace_ms: int) -> str | None:
    """A live attempt of a workflow node whose child has no history, or ended, more than
    ``grace_ms`` ago."""
    workflow_nodes = set(_nodes_of_kind(state, NodeKind.WORKFLOW))
    for key, t in state.tasks.items():
        if t.node not in workflow_nodes or not t.status.live:
            continue
        child = child_id(state.workflow_id, t.node, t.index, t.attempt)
        if child not in seen:
            if now_ms - t.dispatched_at_ms > grace_ms:
                return (f"task {key}/{t.attempt} waits for child workflow {child}, which has "
                        f"no history {(now_ms - t.dispatched_at_ms) / 1000:.0f} s after it "
                        "was started")
            continue
        child_state = seen[child]
        if (child_state is not None and child_state.status.terminal
                and now_ms - child_state.updated_at_ms > grace_ms):
            return (f"task {key}/{t.attempt} waits for child workflow {child}, which ended "
                    f"({child_state.status.value}) "
                    f"{(now_ms - child_state.updated_at_ms) / 1000:.0f} s ago")
    return None


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
         older_than_ms: int = 0, grace_ms: int = GRACE_MS,
         serving: Mapping[str, set[str]] | None = None) -> Scan:
    """Fold every workflow's history and collect the stuck ones.

    Args:
        histories: workflow id -> its records in log order (duplicates included).
        now_ms: the current time, ms since the epoch.
        older_than_ms: skip running workflows whose last event is younger than this, ms
            (their next event may be on its way).
        grace_ms: how late a sleep's wake-up or a child workflow may be, ms (``is_stuck``).
        serving: queue -> the tasks its live workers serve; given, attempts waiting on
            a queue that cannot take them are stuck too (``unserved``).

    Returns:
        The stuck workflows (by id), and the histories that could not be judged.
    """
    found = Scan(workflows=len(histories))
    seen = _fold_all(histories, found)
    for workflow_id in sorted(histories):
        state = seen.get(workflow_id)
        if state is None or state.status.terminal:
            continue
        found.running += 1
        if now_ms - state.updated_at_ms < older_than_ms:
            found.recent += 1
            continue
        reason = is_stuck(state, now_ms, seen, grace_ms)
        if reason is None and serving is not None:
            reason = unserved(state, serving)
        if reason is not None:
            found.stuck.append(Stuck(workflow_id, state.name, state.seq,
                                     state.updated_at_ms, reason))
    return found


def _fold_all(histories: Mapping[str, Sequence[Recorded]], found: Scan,
              ) -> dict[str, WorkflowState | None]:
    """Every workflow's folded state; None (and a note in ``found``) for histories that
    are truncated or do not fold."""
    seen: dict[str, WorkflowState | None] = {}
    for workflow_id in sorted(histories):
        seen[workflow_id] = None
        events, conflicts = dedupe(histories[workflow_id])
        if events and events[0].event.seq > 1:
            found.truncated.append((workflow_id, events[0].event.seq))
            continue
        result = fold(r.event for r in events)
        if result.error or conflicts or result.state is None:
            why = result.error or (conflicts[0].describe() if conflicts else "no events")
            found.unfoldable.append((workflow_id, why))
            continue
        seen[workflow_id] = result.state
    return seen
