"""The projection of a code workflow's own steps: its sleeps and signal waits.

A ``@workflow``'s activations (index ``2k`` of its ``code`` node) and the tasks and
children it runs (index ``2s + 1``) are dispatched, so the core statements give them
their rows. Its sleeps and signal waits are tasks of the coordinator's own: the
activation's decision creates them (``headwater/core/kinds/code/journal.py``,
``_issue``) and no ``TaskDispatched`` is recorded. Their rows come from the decision,
the activation's ``TaskSucceeded`` output, which lists the steps it issued in order:

- each ``sleep`` or ``signal`` step gets a ``running`` row (task ``headwater.sleep`` or
  ``headwater.signal``, dispatched and started at the decision), and each ``patch`` (a
  ``wf.patched`` marker) a ``succeeded`` one (``headwater.patch``). Its index is
  ``2 s + 1``, ``s`` the number the decision gives the step (``step``, checked by the
  core against the journal: ``decision.numbering_fault``);
- a code timer's ``TimerFired`` ends a sleep (succeeded) or a signal wait (failed,
  ``TimeoutError``); a ``SignalConsumed`` of the step's index ends a wait (succeeded);
  a ``TaskCancelled`` or the workflow's end cancels one still running.

A batch applies these after the core statements and the node kinds' (``writer.py``), so
a step made and ended in one batch is made first; the endings repeat the core ones for
that reason (a no-op when the core one already applied, by the ``seq`` guard). Rows are
made once (``on conflict do nothing``) and ended under the ``seq`` guard, so batches and
duplicates give the same rows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from headwater.core import events as ev
from headwater.core.ids import CODE_TIMER, parse_node_timer_id, task_key
from headwater.core.kinds.code.journal import OWN_OPS, PATCH_TASK, SIGNAL_TASK, SLEEP_TASK
from services.projector.statements import OPEN_TASKS, TERMINAL, Statements, ts

_OWN = f"task in ('{SLEEP_TASK}', '{SIGNAL_TASK}')"
_IS_CODE = (
    "exists (select 1 from workflows w, jsonb_array_elements(w.spec->'nodes') n"
    " where w.workflow_id = $1 and n->>'id' = $2 and n->>'kind' = 'code')")
INSERT_OWN_STEP = (
    "insert into tasks (workflow_id, task_key, node, idx, attempt, status, task, queue,"
    " message, worker, dispatched_at, started_at, finished_at, progress, seq, first_seq)"
    " select $1, $2 || '[' || $7::int || ']', $2, $7::int, $9::int, $8, $5, '', $6, $5,"
    " $4::timestamptz, $4, case when $8 = 'succeeded' then $4 end,"
    " case when $8 = 'succeeded' then 1.0 end,"
    f" $3, $3 where {_IS_CODE} on conflict (workflow_id, task_key) do nothing")
OWN_STEP_TIMED = (
    "update tasks set status = case when task = $5 then 'succeeded' else 'failed' end,"
    " progress = case when task = $5 then 1.0 else progress end,"
    " error = case when task = $5 then '' else 'no signal within its timeout' end,"
    " error_type = case when task = $5 then '' else 'TimeoutError' end,"
    " finished_at = $4, seq = $3 where workflow_id = $1 and task_key = $2 and seq < $3"
    f" and {_OWN}")
OWN_STEP_SIGNALLED = (
    "update tasks set status = 'succeeded', progress = 1.0, finished_at = $4, seq = $3"
    f" where workflow_id = $1 and task_key = $2 and seq < $3 and task = '{SIGNAL_TASK}'")
OWN_STEP_CANCELLED = (
    "update tasks set status = 'cancelled', error = $4, finished_at = $5, seq = $3"
    f" where workflow_id = $1 and task_key = $2 and seq < $3 and {_OWN}")
OWN_STEPS_CLOSED = (
    "update tasks set status = 'cancelled', seq = $2 where workflow_id = $1"
    f" and status = any($3::text[]) and seq < $2 and {_OWN}")
CODE_STATEMENTS = (INSERT_OWN_STEP, OWN_STEP_TIMED, OWN_STEP_SIGNALLED, OWN_STEP_CANCELLED,
                   OWN_STEPS_CLOSED)
"""The statements of code steps, in the order a batch applies them (a row is made
before it ends)."""


_TASKS = {"sleep": SLEEP_TASK, "signal": SIGNAL_TASK, "patch": PATCH_TASK}
"""The task name of each of the coordinator's own steps."""


def _message(step: dict[str, Any]) -> str:
    """What a sleep's, a wait's or a patch marker's row says it does."""
    if step.get("op") == "patch":
        return f"patched: {step.get('name', '')}"
    if step.get("op") == "sleep":
        if step.get("until_ms") is not None:
            return f"sleep until {ts(int(step['until_ms'])).isoformat()}"
        return f"sleep {float(step.get('seconds') or 0):g} s"
    timeout = step.get("timeout")
    within = f" (timeout {float(timeout):g} s)" if timeout is not None else ""
    return f"wait for signal {step.get('name', '')}{within}"


def _decided(wid: str, seq: int, at: datetime, b: ev.TaskSucceeded) -> Statements:
    """An activation's decision: a row for each sleep and signal wait it issued."""
    if b.index is None or b.index % 2 or not isinstance(b.output, dict):
        return []
    if "finish" in b.output or "fail" in b.output:
        return []  # an ending decision issues nothing (journal.succeeded)
    steps = b.output.get("steps")
    if not isinstance(steps, list):
        return []
    attempt = b.attempt  # the generation's first attempt, as the core gives its tasks
    return [(INSERT_OWN_STEP, (wid, b.node, seq, at, _TASKS[step["op"]], _message(step),
                               2 * int(step["step"]) + 1,
                               "succeeded" if step["op"] == "patch" else "running", attempt))
            for step in steps
            if isinstance(step, dict) and step.get("op") in OWN_OPS
            and isinstance(step.get("step"), int)]


def _timer_fired(wid: str, seq: int, at: datetime, b: ev.TimerFired) -> Statements:
    parsed = parse_node_timer_id(b.timer_id)
    if parsed is None or parsed[0] != CODE_TIMER:
        return []
    return [(OWN_STEP_TIMED, (wid, parsed[1], seq, at, SLEEP_TASK))]


CODE_STEPS: dict[type, Callable[[str, int, datetime, Any], Statements]] = {
    ev.TaskSucceeded: _decided,
    ev.TimerFired: _timer_fired,
    ev.SignalConsumed: lambda wid, seq, at, b: [
        (OWN_STEP_SIGNALLED, (wid, task_key(b.node, b.index), seq, at))],
    ev.TaskCancelled: lambda wid, seq, at, b: [
        (OWN_STEP_CANCELLED, (wid, task_key(b.node, b.index), seq, b.reason, at))],
}
"""Body type -> the code steps' statements of an event of a running workflow."""


def code_plan(e: ev.HistoryEvent) -> Statements:
    """The code steps' statements that project one event (after the core and the node
    kinds' ones)."""
    b = e.body
    if type(b) in TERMINAL:
        return [(OWN_STEPS_CLOSED, (e.workflow_id, e.seq, OPEN_TASKS))]
    steps = CODE_STEPS.get(type(b))
    return steps(e.workflow_id, e.seq, ts(b.at_ms), b) if steps is not None else []
