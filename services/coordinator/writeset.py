"""Which table entries a step changed: the coordinator's write-set, read off the events.

The workflow table holds a header per workflow (rewritten on every change), its
definition once, and one entry per task (``layout``). Which task entries a batch must
rewrite follows from the history events it recorded, since ``evolve`` changes a task
only for an event that names it: so the domain state carries no bookkeeping of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from headwater.core import events as ev
from headwater.core.ids import parse_node_timer_id, parse_task_timer_id, task_key
from headwater.core.kinds.code.journal import own_step_indexes
from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus
from services.coordinator.keys import DEFINITION
from services.coordinator.layout import node_task_keys

_TERMINAL = (ev.WorkflowSucceeded, ev.WorkflowFailed, ev.WorkflowCancelled)
_ENDS = (ev.TaskSucceeded, ev.TaskFailed, ev.TaskCancelled)


def touched_parts(events: Iterable[ev.HistoryEvent], state: WorkflowState) -> set[str]:
    """The parts of the workflow's table entries that ``events`` changed.

    Args:
        events: history events of one workflow, as recorded (any order).
        state: the workflow's state after them.

    Returns:
        Task keys (``node`` or ``node[index]``), and ``DEFINITION`` when the workflow was
        accepted by them. A key no longer in ``state.tasks`` (a schedule's run that
        ended, a task of a generation a restart ended) is an entry to delete. The
        header is always rewritten and is not listed.
    """
    parts: set[str] = set()
    for event in events:
        body = event.body
        if isinstance(body, ev.WorkflowAccepted):
            parts.add(DEFINITION)
        elif isinstance(body, ev.TimerFired):
            parts.update(_timer_task(body.timer_id, state))
        elif isinstance(body, _TERMINAL):
            # A workflow that ends cancels whatever task is unfinished; the machine
            # records a TaskCancelled for each first, but the fold does it regardless.
            parts.update(k for k, t in state.tasks.items() if t.status is TaskStatus.CANCELLED)
        elif isinstance(body, ev.WorkflowRestarted):  # the old generation's entries:
            for node_id, count in body.dropped.items():  # deleted, or rewritten
                parts.update(node_task_keys(state.spec.node(node_id), count))
        elif isinstance(body, ev.MapExpanded | ev.NodeFinished):
            continue  # node state: in the header
        else:
            parts.update(_issued(body, state))
            node, index = getattr(body, "node", None), getattr(body, "index", None)
            if node is not None and (task_key(node, index) in state.tasks
                                     or _run_ended(body, state)):
                parts.add(task_key(node, index))
    return parts


def _timer_task(timer_id: str, state: WorkflowState) -> list[str]:
    """The task whose entry a timer changes: a deadline's or a lease's attempt (its
    outcome), a code workflow's sleep or signal wait (it ends); none for another."""
    parsed = parse_task_timer_id(timer_id)
    if parsed is not None:
        return [parsed[1]]
    own = parse_node_timer_id(timer_id)
    return [own[1]] if own is not None and own[1] in state.tasks else []


def _issued(body: object, state: WorkflowState) -> list[str]:
    """The tasks a code workflow's decision created without a dispatch (its sleeps and
    signal waits: ``code.journal``), for the activation's ``TaskSucceeded``."""
    if not isinstance(body, ev.TaskSucceeded) or body.index is None or body.index % 2:
        return []
    try:
        if state.spec_error or state.spec.node(body.node).code is None:
            return []
    except KeyError:
        return []
    return [task_key(body.node, i) for i in own_step_indexes(state, body.node, body.index // 2)]


def _run_ended(body: object, state: WorkflowState) -> bool:
    """Whether ``body`` ended a schedule's run, whose task has left the state
    (``kinds/schedule/rules.py``, ``_run_ended``): its entry is to be deleted."""
    if not isinstance(body, _ENDS) or state.spec_error:
        return False
    try:
        return state.spec.node(body.node).schedule is not None
    except KeyError:
        return False
