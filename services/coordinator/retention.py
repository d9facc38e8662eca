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
   and the core's screen (``machine.decide``) checks again, at the time the
   coordinator stamped on it, that the workflow ended and its retention passed
   (``headwater.core.retention.purge_due``: the control topic is open to any
   producer). The deletions (``purge_entries``) then go
   into the batch's intent (``intents``) with everything else: a SIGKILL leaves either
   no intent (the record is read again, or the next sweep sends another) or a whole
   intent, which the next owner of the partition carries out before reading inputs. So
   the table holds either the whole workflow or only its marker, never a part.

What stays: a marker (``PURGED``, ``headwater.core.retention.dump_marker``, under 200
bytes) in place of the header, so that the id is not taken again. An input for a purged
workflow does what it did to the ended workflow (``headwater.core.retention.after_purge``):
a duplicate of its submission, a late report, a timer or a cancel change nothing; a
signal, another submission under the id (another body, tenant or parent) are refused
and dead-lettered with the reason ``refused_after_purge`` gives: a second run under the
id would start its history again at seq 1 on the events topic, where the first one's
records stay.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable

from headwater.core import events as ev
from headwater.core.retention import RETENTION_TIMER, dump_marker, header_due
from headwater.core.state import WorkflowState
from services.common.clock import now_ms
from services.coordinator.keys import DEFERRED, DEFINITION, TABLE_KEY_SEP, table_entry_key
from services.coordinator.layout import task_keys

log = logging.getLogger(__name__)

PURGED = "@purged"
"""The part under which a purged workflow's marker is kept; no task key can be it."""
SWEEP_MAX = 30_000
"""Most purges one sweep asks for; the next sweep asks for the rest. With a sweep every
``sweep_interval_s`` (60 s at most) that is 500 purges a second: more than the
workflows a coordinator ends."""
SEND_WINDOW = 500
"""Purge requests in flight at once (each waits for the broker's ack)."""
RESEND_S = 30.0
"""A workflow whose purge was asked for is asked for again after this long, seconds, if
its header is still there (the ``TimerFired`` was lost, or refused as early)."""


def sweep_interval_s(retention_s: float) -> float:
    """How often the sweep looks for workflows past retention: a tenth of it, between 1 s
    and 60 s, so a purge comes at most about 10 % (or a minute) late. Each sweep reads
    every header of the process's partitions (a cost that grows with the table, not
    with what is due), so the default day's retention sweeps once a minute."""
    return min(60.0, max(1.0, retention_s / 10))


def purged_key(workflow_id: str) -> bytes:
    """The table key of a purged workflow's marker (on the partition of its id)."""
    return table_entry_key(workflow_id, PURGED)


def purge_entries(state: WorkflowState, purged_at_ms: int) -> list[tuple[bytes, bytes | None]]:
    """The table writes that purge ``state``: its marker, then a delete (None) for each
    task entry (``layout.task_keys``), the deferred inputs entry, the definition and the
    header. Written in one intent, so their order does not matter for a crash."""
    wid = state.workflow_id
    parts = [*task_keys(state), DEFERRED, DEFINITION]
    out: list[tuple[bytes, bytes | None]] = [(purged_key(wid), dump_marker(state, purged_at_ms))]
    out += [(table_entry_key(wid, part), None) for part in parts]
    out.append((table_entry_key(wid), None))
    return out


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
        """Send the purge requests due (at most ``SWEEP_MAX``; none while rebalancing).
        The headers are read in a thread, from a copy of the items taken on the loop."""
        if self.rebalancing():
            return
        now, clock = now_ms(), time.monotonic()
        self._asked = {w: t for w, t in self._asked.items() if clock - t < RESEND_S}
        items = list(self.items())
        expired = await asyncio.to_thread(expired_headers, items, now, self.retention_ms)
        due = [w for w in expired if w not in self._asked][:SWEEP_MAX]
        for start in range(0, len(due), SEND_WINDOW):
            window = due[start:start + SEND_WINDOW]
            await asyncio.gather(*(self.send(ev.TimerFired(wid, RETENTION_TIMER, now))
                                   for wid in window))
            self._asked.update(dict.fromkeys(window, clock))
        if due:
            log.info("asked for the purge of %d workflows past retention", len(due))
