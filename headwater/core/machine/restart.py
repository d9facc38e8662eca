"""Restart on failure: a lost attempt restarts the whole run as a new generation.

With ``restart_on_failure`` (``headwater.core.spec.restart``), an attempt whose lease
expires (no report from its worker within ``heartbeat_timeout``) does not go to its
task's retry policy while restarts are left (``WorkflowSpec.max_restarts``): every
unfinished attempt is cancelled (``TaskCancelled``, which workers obey, and which
cancels the child workflow of a ``workflow`` node's attempt), ``WorkflowRestarted``
starts the next generation, and the root nodes start again with the workflow's input.
The history goes on, numbered as before; the new generation's attempts are numbered
after every earlier one (``WorkflowRestarted.attempt_floor``), so their dispatch ids and
child ids are new and a late report of an old attempt is fenced as superseded. A lost
attempt after the last restart is retried like any failed one.
"""

from __future__ import annotations

from typing import Any

from headwater.core import events as ev
from headwater.core.ids import task_key
from headwater.core.machine import ending, submission
from headwater.core.machine.recorder import Recorder
from headwater.core.state import TaskState, WorkflowState


def restarts_left(state: WorkflowState) -> bool:
    """Whether a lost attempt restarts the run now: the spec allows restarts and fewer
    than ``max_restarts`` were made (generation 1 is the run as submitted)."""
    return state.generation - state.continued <= state.spec.max_restarts


def restart(rec: Recorder, lost: TaskState, why: str) -> None:
    """Restart the run because ``lost`` (the current attempt of a task) was lost.

    Args:
        rec: the step's recorder; the ``TimerFired`` of the lease is recorded already.
        lost: the attempt whose lease expired.
        why: how the loss reads (``"lost: no heartbeat from worker w for 3 s"``).
    """
    where = f"{task_key(lost.node, lost.index)} attempt {lost.attempt}"
    _next_generation(rec, f"restarting the run: {where} was {why}", f"{where} was {why}",
                     continued=False)


def continue_as_new(rec: Recorder, new_input: Any) -> None:
    """A code workflow's function continued as new: the next generation runs it from
    its start with ``new_input`` and a fresh journal (``WorkflowRestarted.continued``),
    so its history per generation stays bounded."""
    _next_generation(rec, "the workflow continued as new", "continued as new",
                     continued=True, new_input=new_input)


def _next_generation(rec: Recorder, cancel_reason: str, reason: str, *, continued: bool,
                     new_input: Any = None) -> None:
    """Cancel every unfinished attempt, record ``WorkflowRestarted`` and start the
    root nodes again."""
    state = rec.current
    for task in list(state.tasks.values()):
        if not task.status.terminal:
            rec.record(ev.TaskCancelled(state.workflow_id, task.node, task.index,
                                        task.attempt, rec.at_ms, cancel_reason))
    state = rec.current
    floor = max([state.attempt_floor, *(t.attempt for t in state.tasks.values())])
    dropped = {node_id: node.next_index for node_id, node in state.nodes.items()
               if node.next_index}
    rec.record(ev.WorkflowRestarted(state.workflow_id, rec.at_ms, state.generation + 1,
                                    floor, reason, dropped,
                                    continued=continued, input=new_input))
    submission.start_roots(rec)
    ending.finish_if_done(rec)
