"""Retention: a workflow that ended leaves the coordinator's table after a while.

``HEADWATER_RETENTION_S`` seconds after a workflow's last event (its terminal event, or a
report that came after it), every table entry of it (header, definition, task entries,
the emptied entry of inputs that waited for it) is deleted: tombstones on the changelog,
which compaction then removes, so the table stops growing and a restart restores less.

How a purge runs, so that a crash at any point is harmless:

1. ``RetentionSweep`` (a periodic job) reads the headers held locally and, for each
   workflow past its retention, produces a ``TimerFired`` with the timer id
   ``RETENTION_TIMER`` to the control topic, like any other timer.
2. The batch applier takes it like any input, in order with the workflow's other inputs,
   and checks again on its own clock that the workflow ended and its retention passed
   (``purge_due``: the control topic is open to any producer). The deletions then go
   into the batch's intent (``intents``) with everything else: a SIGKILL leaves either
   no intent (the record is read again, or the next sweep sends another) or a whole
   intent, which the next owner of the partition carries out before reading inputs. So
   the table holds either the whole workflow or only its marker, never a part.

What stays: a marker (``PURGED``, ``dump_marker``, under 100 bytes) in place of the
header, so that the id is not taken again. Any input for a purged workflow (a
submission, a child's ``ChildSubmitted``, a report, a signal, a cancel) is dead-lettered
with the reason ``refused_after_purge`` gives: a second run under the id would start its
history again at seq 1 on the events topic, where the first one's records stay.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from headwater.core import events as ev
from headwater.core.state import WorkflowState
from headwater.core.status import WorkflowStatus
from services.common.clock import now_ms
from services.coordinator.keys import DEFERRED, DEFINITION, TABLE_KEY_SEP, table_entry_key
from services.coordinator.records import DeadLetter, InputRecord
from services.coordinator.snapshot import task_keys

if TYPE_CHECKING:
    from services.coordinator.effects import BatchEffects

log = logging.getLogger(__name__)

RETENTION_TIMER = "@retention"
"""The timer id of the ``TimerFired`` that asks for a workflow's purge (no timer of the
state machine starts with ``@``)."""
PURGED = "@purged"
"""The part under which a purged workflow's marker is kept; no task key can be it."""
MARKER_VERSION = 1
SWEEP_MAX = 500
"""Most purges one sweep asks for; the next sweep asks for the rest."""
RESEND_S = 30.0
"""A workflow whose purge was asked for is asked for again after this long, seconds, if
its header is still there (the ``TimerFired`` was lost, or refused as early)."""


def sweep_interval_s(retention_s: float) -> float:
    """How often the sweep looks for workflows past retention: a tenth of it, between 1 s
    and 60 s, so a purge comes at most about 10 % (or a minute) late."""
    return min(60.0, max(1.0, retention_s / 10))


def purge_due(state: WorkflowState | None, at_ms: int, retention_ms: int | None) -> bool:
    """Whether ``state`` may be purged at ``at_ms``: it ended, and ``retention_ms`` have
    passed since its last event (``updated_at_ms``); never when retention is off (None)."""
    return (retention_ms is not None and state is not None and state.status.terminal
            and state.updated_at_ms + retention_ms <= at_ms)


def header_due(header: bytes, at_ms: int, retention_ms: int) -> bool:
    """``purge_due`` read off a raw header entry (``snapshot.dump_header``) without
    decoding the workflow; False for a header that does not parse."""
    try:
        h = orjson.loads(header)
        return bool(WorkflowStatus(h["status"]).terminal
                    and int(h["updated_at_ms"]) + retention_ms <= at_ms)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return False


def purged_key(workflow_id: str) -> bytes:
    """The table key of a purged workflow's marker (on the partition of its id)."""
    return table_entry_key(workflow_id, PURGED)


def dump_marker(state: WorkflowState, purged_at_ms: int) -> bytes:
    """The marker kept for a purged workflow: how it ended, its last seq, when it was
    last changed and purged (ms since the epoch). Bounded: no spec, input or output."""
    return orjson.dumps({"v": MARKER_VERSION, "status": state.status.value, "seq": state.seq,
                         "ended_at_ms": state.updated_at_ms, "purged_at_ms": purged_at_ms})


def load_marker(raw: bytes) -> dict[str, Any]:
    """The marker's fields (``dump_marker``); ``{}`` for one that does not parse."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def purge_entries(state: WorkflowState, purged_at_ms: int) -> list[tuple[bytes, bytes | None]]:
    """The table writes that purge ``state``: its marker, then a delete (None) for each
    task entry (``snapshot.task_keys``), the deferred inputs entry, the definition and the
    header. Written in one intent, so their order does not matter for a crash."""
    wid = state.workflow_id
    parts = [*task_keys(state), DEFERRED, DEFINITION]
    out: list[tuple[bytes, bytes | None]] = [(purged_key(wid), dump_marker(state, purged_at_ms))]
    out += [(table_entry_key(wid, part), None) for part in parts]
    out.append((table_entry_key(wid), None))
    return out


def refused_after_purge(event: ev.Input, marker: bytes) -> str:
    """The dead letter's reason for an input to a purged workflow."""
    m = load_marker(marker)
    return (f"{type(event).__name__} for workflow {event.workflow_id} refused: the workflow "
            f"ended ({m.get('status', '?')}, seq {m.get('seq', '?')}) and was purged after "
            "its retention (HEADWATER_RETENTION_S); its id cannot be used again")


def expired_headers(items: Iterable[tuple[bytes, bytes]], at_ms: int, retention_ms: int,
                    ) -> list[str]:
    """The workflow ids whose header, among the table's ``(key, value)`` items, is past
    retention at ``at_ms``; intent slots and other parts (keys holding the separator)
    are passed over."""
    sep = TABLE_KEY_SEP.encode()
    return [bytes(k).decode() for k, v in items
            if sep not in bytes(k) and v is not None and header_due(bytes(v), at_ms,
                                                                    retention_ms)]


class RetentionSweep:
    """Asks for the purge of every local workflow past retention (see the module).

    Args:
        items: the table's local ``(key, value)`` pairs, read at each sweep.
        send: produce a ``TimerFired`` to the control topic and wait for the ack.
        retention_s: the retention, seconds.
        rebalancing: whether the consumer group is rebalancing now (no sweep then).
    """

    def __init__(self, items: Callable[[], Iterable[tuple[bytes, bytes]]],
                 send: Callable[[ev.TimerFired], Awaitable[None]], retention_s: float,
                 rebalancing: Callable[[], bool]) -> None:
        self.items = items
        self.send = send
        self.retention_ms = round(retention_s * 1000)
        self.rebalancing = rebalancing
        self._asked: dict[str, float] = {}

    async def tick(self) -> None:
        """Send the purge requests due (at most ``SWEEP_MAX``; none while rebalancing)."""
        if self.rebalancing():
            return
        now, clock = now_ms(), time.monotonic()
        self._asked = {w: t for w, t in self._asked.items() if clock - t < RESEND_S}
        due = [w for w in expired_headers(list(self.items()), now, self.retention_ms)
               if w not in self._asked][:SWEEP_MAX]
        for wid in due:
            await self.send(ev.TimerFired(wid, RETENTION_TIMER, now))
            self._asked[wid] = clock
        if due:
            log.info("asked for the purge of %d workflows past retention", len(due))


def screened(effects: BatchEffects, record: InputRecord, event: ev.Input,
             state: WorkflowState | None) -> bool:
    """Take an input that retention decides about; False for any other (it is stepped).

    A purge request (``RETENTION_TIMER``) is never stepped: when ``purge_due`` on the
    coordinator's clock, the workflow's ``purge_entries`` join the batch's entries
    (``effects.purged``), else it is dropped. Any other input for a workflow purged
    (by this batch, or before: its marker is in the table) is dead-lettered.
    """
    wid = event.workflow_id
    if isinstance(event, ev.TimerFired) and event.timer_id == RETENTION_TIMER:
        if wid not in effects.purged and purge_due(state, event.at_ms, effects.retention_ms):
            assert state is not None
            effects.purged[wid] = purge_entries(state, event.at_ms)
            effects.store.forget(wid)
        return True
    marker = (dump_marker(state, event.at_ms) if wid in effects.purged and state is not None
              else None if state is not None else effects.store.get_entry(purged_key(wid)))
    if marker is None:
        return False
    effects.dead.append(DeadLetter(record, refused_after_purge(event, marker)))
    return True
