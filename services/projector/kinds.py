"""What the node kinds' history events write to the PostgreSQL projection: a child's link
to its parent, waits and the signals they take, a sleep's wake-up, a condition's value and
a loop's steps (the tables and columns are in ``services/common/db.py``).

``kind_plan`` gives an event's statements after the core ones (``statements.core_plan``);
``writer.py`` applies both, in the order of ``STATEMENTS`` there. Like the core ones,
every statement is guarded by ``seq`` or sets a value that never changes once recorded
(a parent link, a sleep's wake-up time, a condition's value), so one batch, many
batches and duplicates give the same rows:

- ``ParentLinked``: the child's ``workflows`` row gets ``parent_id``, ``parent_node``,
  ``parent_index`` and ``parent_attempt`` (a parent's children are the rows naming it).
- ``CallerLinked`` (a run a task's ``ctx.call`` submitted) sets the same columns: its
  parent's children are the rows naming it, whichever kind of child.
- ``DeadlineSet``: the ``workflows`` row's ``deadline_at``.
- ``WaitStarted``: the node's row is running; a ``waits`` row per instance (``node`` or
  ``node[index]``) is ``waiting`` with its signal and timeout. ``SignalConsumed`` makes
  it ``signalled`` (with the signal's id and fields); its timer's ``TimerFired``
  ``timed_out``; its node's ``NodeFinished`` or the workflow's end ``ended``.
- ``SignalSent`` (a signal the workflow took) and ``SignalDiscarded``: a ``signals``
  row each (``received``, ``discarded`` with the reason; a discard of a kept signal, whose
  wait had no item for it, marks its received row discarded too); ``SignalConsumed`` marks the
  oldest received one of that name, index (or none: a code workflow's wait names its task
  index) and id ``consumed`` by its node.
- ``SleepStarted``: the node's row is running, with ``wake_at``.
- ``ConditionEvaluated``: the node's row (pending until the node runs or is skipped)
  with ``condition``.
- ``LoopStepDecided``: a ``loop_steps`` row (the tool and its input, or the finish and
  its output; the spend).
- A schedule's acceptance, its ``Schedule*`` events and its end: its ``schedules`` row
  (``schedules.py``).
- A limiter's ``PermitRequested``, ``PermitReleased``, ``PermitIssued`` and
  ``PermitRefused``: its ``limiters`` row (``limiters.py``).
- A cache's ``CacheLookedUp``, ``CacheServed`` and ``CacheReleased``: its ``caches`` row
  (``caches.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from headwater.core import events as ev
from headwater.core.ids import WAIT_TIMER, parse_node_timer_id, task_key
from headwater.core.status import NodeStatus
from services.projector.caches import CACHE_STATEMENTS, CACHE_STEPS
from services.projector.limiters import LIMITER_STATEMENTS, LIMITER_STEPS
from services.projector.schedules import SCHEDULE_STATEMENTS, schedule_plan
from services.projector.statements import TERMINAL, UPSERT_NODE, Statements, ts


class WaitStatus(StrEnum):
    """Where one wait (a ``waits`` row) is."""

    WAITING = "waiting"  # for its signal (until its timeout, if any)
    SIGNALLED = "signalled"  # took a signal; its fields are the output
    TIMED_OUT = "timed_out"  # no signal before the timeout
    ENDED = "ended"  # its node or its workflow ended otherwise (failed, cancelled)


class SignalStatus(StrEnum):
    """What became of a signal the workflow recorded (a ``signals`` row)."""

    RECEIVED = "received"  # taken by the workflow; kept until its wait starts
    CONSUMED = "consumed"  # a wait took it
    DISCARDED = "discarded"  # came after its wait had ended; changed nothing


SET_PARENT = (
    "update workflows set parent_id = $2, parent_node = $3, parent_index = $4,"
    " parent_attempt = $5 where workflow_id = $1")
SET_DEADLINE = "update workflows set deadline_at = $2 where workflow_id = $1"
SET_CONDITION = "update nodes set condition = $3 where workflow_id = $1 and node = $2"
SET_WAKE_AT = "update nodes set wake_at = $3 where workflow_id = $1 and node = $2"
UPSERT_WAIT = (
    "insert into waits (workflow_id, wait_key, node, idx, signal, status, started_at,"
    " timeout_at, seq) values ($1, $2, $3, $4, $5, 'waiting', $6, $7, $8)"
    " on conflict (workflow_id, wait_key) do update set signal = excluded.signal,"
    " status = excluded.status, started_at = excluded.started_at,"
    " timeout_at = excluded.timeout_at, signal_id = '', fields = null, ended_at = null,"
    " seq = excluded.seq where waits.seq < excluded.seq")
_WAITING = " where workflow_id = $1 and wait_key = $2 and status = 'waiting' and seq < $3"
WAIT_SIGNALLED = ("update waits set status = 'signalled', signal_id = $4, fields = $5,"
                  " ended_at = $6, seq = $3" + _WAITING)
WAIT_TIMED_OUT = "update waits set status = 'timed_out', ended_at = $4, seq = $3" + _WAITING
CLOSE_NODE_WAITS = (
    "update waits set status = 'ended', ended_at = $4, seq = $3 where workflow_id = $1"
    " and node = $2 and status = 'waiting' and seq < $3")
CLOSE_OPEN_WAITS = (
    "update waits set status = 'ended', ended_at = $3, seq = $2 where workflow_id = $1"
    " and status = 'waiting' and seq < $2")
INSERT_SIGNAL = (
    "insert into signals (workflow_id, seq, name, idx, signal_id, status, reason, fields, at)"
    " values ($1, $2, $3, $4, $5, $6, $7, $8, $9) on conflict do nothing")
# The oldest received signal of that name, index and id; once per SignalConsumed (its
# seq is kept in consumed_seq), so that a duplicate delivery takes no second one. A code
# workflow's signals have no index, while its SignalConsumed names the wait's task
# index: a signal without one matches too (a wait per item discards those).
SIGNAL_CONSUMED = (
    "update signals set status = 'consumed', node = $5, consumed_seq = $6"
    " where workflow_id = $1 and seq = (select min(seq) from signals where workflow_id = $1"
    " and name = $2 and (idx is not distinct from $3 or idx is null) and signal_id = $4"
    " and status = 'received' and seq < $6)"
    " and not exists (select 1 from signals where workflow_id = $1 and consumed_seq = $6)")
# A kept signal its wait, starting, had no item for: its received row says so too.
SIGNAL_DROPPED = (
    "update signals set status = 'discarded', reason = $5 where workflow_id = $1"
    " and name = $2 and idx is not distinct from $3 and signal_id = $4 and signal_id <> ''"
    " and status = 'received' and seq < $6")
UPSERT_STEP = (
    "insert into loop_steps (workflow_id, node, step, tool, input, finish, output, spend,"
    " decided_at, seq) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    " on conflict (workflow_id, node, step) do update set tool = excluded.tool,"
    " input = excluded.input, finish = excluded.finish, output = excluded.output,"
    " spend = excluded.spend, decided_at = excluded.decided_at, seq = excluded.seq"
    " where loop_steps.seq < excluded.seq")
KIND_STATEMENTS = (SET_PARENT, SET_DEADLINE, SET_CONDITION, SET_WAKE_AT, UPSERT_WAIT,
                   WAIT_SIGNALLED, WAIT_TIMED_OUT, CLOSE_NODE_WAITS, CLOSE_OPEN_WAITS,
                   INSERT_SIGNAL, SIGNAL_CONSUMED, SIGNAL_DROPPED, UPSERT_STEP,
                   *SCHEDULE_STATEMENTS, *LIMITER_STATEMENTS, *CACHE_STATEMENTS)
"""The node kinds' statements, in the order a batch applies them (after the core ones,
so that the rows they update exist): a wait's row is written before it is signalled,
timed out or ended, a signal's before it is consumed; a schedule's (``schedules.py``)
last."""

_RUNNING = NodeStatus.RUNNING.value


def _wait_started(wid: str, seq: int, at: datetime, b: ev.WaitStarted) -> Statements:
    timeout_at = ts(b.timeout_at_ms) if b.timeout_at_ms is not None else None
    return [(UPSERT_NODE, (wid, b.node, _RUNNING, None, "", seq)),
            (UPSERT_WAIT, (wid, task_key(b.node, b.index), b.node, b.index, b.signal, at,
                           timeout_at, seq))]


def _signal_consumed(wid: str, seq: int, at: datetime, b: ev.SignalConsumed) -> Statements:
    return [(WAIT_SIGNALLED, (wid, task_key(b.node, b.index), seq, b.signal_id, b.fields, at)),
            (SIGNAL_CONSUMED, (wid, b.name, b.index, b.signal_id, b.node, seq))]


def _timer_fired(wid: str, seq: int, at: datetime, b: ev.TimerFired) -> Statements:
    parsed = parse_node_timer_id(b.timer_id)
    if parsed is None or parsed[0] != WAIT_TIMER:
        return []
    return [(WAIT_TIMED_OUT, (wid, parsed[1], seq, at))]


def _step_decided(wid: str, seq: int, at: datetime, b: ev.LoopStepDecided) -> Statements:
    return [(UPSERT_STEP, (wid, b.node, b.step, b.tool, b.input, b.finish, b.output,
                           float(b.spend), at, seq))]


KIND_STEPS: dict[type, Callable[[str, int, datetime, Any], Statements]] = {
    ev.ParentLinked: lambda wid, seq, at, b: [
        (SET_PARENT, (wid, b.parent_id, b.node, b.index, b.attempt))],
    ev.CallerLinked: lambda wid, seq, at, b: [
        (SET_PARENT, (wid, b.parent_id, b.node, b.index, b.attempt))],
    ev.DeadlineSet: lambda wid, seq, at, b: [(SET_DEADLINE, (wid, ts(b.deadline_ms)))],
    ev.WaitStarted: _wait_started,
    ev.SignalSent: lambda wid, seq, at, b: [
        (INSERT_SIGNAL, (wid, seq, b.name, b.index, b.signal_id, SignalStatus.RECEIVED.value,
                         "", b.fields, at))],
    ev.SignalConsumed: _signal_consumed,
    ev.SignalDiscarded: lambda wid, seq, at, b: [
        (INSERT_SIGNAL, (wid, seq, b.name, b.index, b.signal_id,
                         SignalStatus.DISCARDED.value, b.reason, None, at)),
        (SIGNAL_DROPPED, (wid, b.name, b.index, b.signal_id, b.reason, seq))],
    ev.SleepStarted: lambda wid, seq, at, b: [
        (UPSERT_NODE, (wid, b.node, _RUNNING, None, "", seq)),
        (SET_WAKE_AT, (wid, b.node, ts(b.wake_at_ms)))],
    ev.ConditionEvaluated: lambda wid, seq, at, b: [
        (UPSERT_NODE, (wid, b.node, NodeStatus.PENDING.value, None, "", seq)),
        (SET_CONDITION, (wid, b.node, bool(b.value)))],
    ev.LoopStepDecided: _step_decided,
    ev.TimerFired: _timer_fired,
    ev.NodeFinished: lambda wid, seq, at, b: [(CLOSE_NODE_WAITS, (wid, b.node, seq, at))],
    **LIMITER_STEPS,
    **CACHE_STEPS,
}
"""Body type -> the node kinds' statements of an event of a running workflow."""


def kind_plan(e: ev.HistoryEvent) -> Statements:
    """The node kinds' statements that project one event (after its core ones), with
    their arguments; none for most core events."""
    b = e.body
    if type(b) in TERMINAL:
        return [(CLOSE_OPEN_WAITS, (e.workflow_id, e.seq, ts(b.at_ms))), *schedule_plan(e)]
    steps = KIND_STEPS.get(type(b))
    own = steps(e.workflow_id, e.seq, ts(b.at_ms), b) if steps is not None else []
    return [*own, *schedule_plan(e)]
