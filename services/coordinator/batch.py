"""Apply a batch of input records: step them in memory, record, carry out, in this order.

The order of side effects is what makes at-least-once processing safe:

1. each partition's share of the batch (table entries, history events, dispatches, stops)
   is written as one intent into the table (``intents``) and acknowledged;
2. then carried out: the entries written and the records published, together;
3. then the intent is cleared, and faust commits the input offsets (every 0.5 s).

After a crash the new owner carries out any intent left in the table before it reads
inputs, and the inputs since the last commit come again:

- those whose effects were recorded are skipped: each workflow's snapshot remembers the
  offset of the last input applied to it, per input topic (``store.Store.applied``, kept
  in the workflow's header entry).
  Applying such an input to the newer snapshot could record something else under a seq
  already published (a failure report, applied again after the retry it caused, would
  be "superseded");
- those whose intent never landed had no effect anywhere: they are applied again, in
  whatever order faust now delivers the three input topics, to the same snapshots.
  Nothing of theirs was published, so no seq can be published twice with two bodies.

What a batch does in memory (decoding, routing, stepping, failing as data) is
``effects.BatchEffects``; this module orders its side effects.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from headwater.topics import Topics
from services.common import faults, tracing
from services.common.auth.tokens import Authenticator
from services.coordinator import homing, metrics, seq_guard
from services.coordinator.bus import Bus
from services.coordinator.effects import BatchEffects, Entries
from services.coordinator.intents import Intent, IntentLog, Unreadable, fingerprint
from services.coordinator.keys import intent_key, table_entry_workflow
from services.coordinator.records import DeadLetter, InputRecord, Outgoing
from services.coordinator.store import Store
from services.coordinator.timers import TimerIndex
from services.coordinator.traced_apply import SERVICE_NAME, traced_add

log = logging.getLogger(__name__)

PARTITION_CACHE = 4096
"""Workflow ids whose partition the applier remembers, the latest used. A batch names a
few hundred. It was 65,536: the ids of that many workflows, most of them ended long ago,
held by a coordinator that had run as many (B9 with 100,000 finished)."""


class Fenced(Exception):
    """This process must not write any more (its partitions may belong to another)."""


class BatchApplier:
    """Turns batches of input records into history, dispatches and snapshots, through
    one intent per partition (see the module's docstring); carries out the intents a
    batch that did not finish left behind (``recover``).

    Args:
        topics: the deployment's topic names.
        bus: where records and dead letters are published.
        store: the workflow table.
        timers: the timers of the workflows this process owns, armed after each batch.
        max_record_bytes: the largest record produced, bytes.
        fence: why this process must not write any more (``FreezeWatch.check``), or
            None; it is asked before each intent and before carrying one out.
    """

    history_heartbeats = False
    """Whether heartbeats are recorded in the history (``Settings.history_heartbeats``);
    otherwise they only move their lease."""
    retention_ms: int | None = None
    """How long an ended workflow stays in the table, ms (``Settings.retention_s``;
    ``retention``); None: for ever."""
    auth: Authenticator | None = None
    """Checks the tokens of submissions (``submitters``); None: auth is off."""

    def __init__(self, topics: Topics, bus: Bus, store: Store, timers: TimerIndex,
                 max_record_bytes: int, fence: Callable[[], str | None] = lambda: None,
                 ) -> None:
        self.topics = topics
        self.fence = fence
        self.max_record_bytes = max_record_bytes
        self.bus = bus
        self.store = store
        self.timers = timers
        self.intent_log = IntentLog(store)
        # murmur2 in pure Python, asked once per input and per output record: remembered
        # for the workflows of the last few batches (``PARTITION_CACHE``)
        self._partition = functools.lru_cache(maxsize=PARTITION_CACHE)(store.partition)
        self._one_at_a_time = asyncio.Lock()  # one batch's effects at a time, recovery too
        self._clearing: list[Awaitable[Any]] = []  # the last batch's slots being emptied
        tracing.configure(SERVICE_NAME)
        self.replayed = 0
        """Records skipped because they had been applied before (redelivered)."""
        self.redone = 0
        """Intents carried out again after a crash (partitions)."""

    async def recover(self, partitions: set[int]) -> None:
        """Carry out the intents left in the slots of ``partitions`` by a batch that did
        not finish (the process died, or the partitions moved here); call before reading
        their inputs. A slot that cannot be carried out (corrupt, or stale: the table moved
        past it, ``Intent.moved_on``) goes to the dead-letter topic, with the reason, and
        is emptied: its batch's inputs are then applied again where the table has not
        applied them.

        Raises:
            Exception: publishing or writing failed.
        """
        async with self._one_at_a_time:
            self._check_fence()
            pending, unreadable = self.intent_log.pending(partitions)
            if not pending and not unreadable:
                return
            log.warning("carrying out the unfinished intents of partitions %s",
                        sorted(pending))
            dead = [self._dead_intent(p, u) for p, u in sorted(unreadable.items())]
            for d in dead:
                log.error("dead-lettering %s", d.reason)
            self.store.clear_cache()
            await self._carry_out(pending, dead)
            faults.point("coordinator.after_redo")
            self.redone += len(pending)
            metrics.INTENTS_REDONE.inc(len(pending))
            await asyncio.gather(*self.intent_log.clear([*pending, *unreadable]))
            redone = {table_entry_workflow(k) for i in pending.values() for k, _ in i.entries}
            for wid in redone:
                state = self.store.get(wid)
                if state is not None:  # its timers may have been armed before the redo
                    self.timers.arm(state)

    def _dead_intent(self, partition: int, unreadable: Unreadable) -> DeadLetter:
        """A dead letter holding a slot refused: its head, then its chunks."""
        value = b"".join([unreadable.head, *unreadable.chunks])
        return DeadLetter(InputRecord(f"{self.topics.coordinator_app_id}-intents", partition,
                                      -1, intent_key(partition), value, []), unreadable.reason)

    async def apply_batch(self, records: Iterable[InputRecord]) -> None:
        """Apply records in order; record each partition's effects as one intent, then
        carry them out (see the module's docstring).

        Raises:
            Exception: only if writing to Kafka fails; the batch must then not be
                committed (the caller stops the process).
        """
        started_s = time.perf_counter()
        effects = self._effects_of(records)
        if not (effects.encoded or effects.dead or effects.deferred or effects.moves
                or effects.purged):
            self._renew(effects)
            metrics.batch_applied(records, started_s, [], {})
            return
        changed, entries = effects.table_entries()
        try:
            self._check_seqs(effects)
            intents = self._intents(entries, effects.encoded)
            await self._record_and_carry_out(intents, effects.dead, effects.moves)
        except BaseException:
            for wid in [*effects.touched, *effects.purged]:
                self.store.forget(wid)  # the cached states may be ahead of the table
            raise
        for wid in effects.purged:  # an input after its purge in the batch read it
            self.store.forget(wid)  # back from the table: not to be answered again
        for wid, state in effects.touched.items():
            self.timers.arm(state, changed[wid])
        self._renew(effects)
        metrics.batch_applied(records, started_s, effects.out, effects.touched)

    def _check_seqs(self, effects: BatchEffects) -> None:
        """Refuse a batch decided from a state behind the table (``seq_guard``), before
        its intent: logged, counted, raised.

        Raises:
            seq_guard.StaleState: a workflow's first new seq does not follow its header.
        """
        found = seq_guard.behind(effects.out, self.store.get_entry)
        if found:
            metrics.STALE_STATES.inc()
            error = seq_guard.refusal(found)
            log.error("%s", error)
            raise error

    def _renew(self, effects: BatchEffects) -> None:
        """Move the leases the batch's heartbeats renewed (after arming its states)."""
        for wid, timer_id, fire_at_ms in effects.renewals:
            self.timers.renew(wid, timer_id, fire_at_ms)

    def _effects_of(self, records: Iterable[InputRecord]) -> BatchEffects:
        """Step every record in memory (``effects.BatchEffects``), and log what was
        dead-lettered or skipped."""
        effects = BatchEffects(self.topics, self.store, self.max_record_bytes, self._partition,
                               history_heartbeats=self.history_heartbeats,
                               retention_ms=self.retention_ms, auth=self.auth,
                               lease_seen=None if self.history_heartbeats
                               else self.timers.lease_seen)
        try:
            for record in records:
                if tracing.tracer() is None:
                    effects.add(record)
                else:
                    traced_add(effects, record)
        finally:
            self.replayed += effects.replayed
        for d in effects.dead:
            log.warning("dead-lettering %s[%d]@%d: %s", d.record.topic, d.record.partition,
                        d.record.offset, d.reason)
        if effects.replayed:
            log.warning("skipped %d inputs whose effects the table holds (delivered again "
                        "after a crash or a rebalance)", effects.replayed)
        return effects

    def _intents(self, entries: Entries, encoded: list[Outgoing]) -> dict[int, Intent]:
        """Group the batch's table entries and records by partition, with what each
        entry's key holds now (before they are written: ``Intent.found``)."""
        intents: dict[int, Intent] = {}
        for wid, parts in entries.items():
            intent = intents.setdefault(self._partition(wid), Intent())
            intent.entries += parts
            for key, _ in parts:
                if key not in intent.found:
                    intent.found[key] = fingerprint(self.store.get_entry(key))
        for o in encoded:
            intents.setdefault(self._partition(o.workflow_id), Intent()).records.append(o)
        return intents

    async def _record_and_carry_out(self, intents: dict[int, Intent], dead: list[DeadLetter],
                                    moves: list[homing.Move]) -> None:
        """Write the intents and await them, then carry them out; their slots are
        emptied while the next batch is applied (and awaited before its intents)."""
        async with self._one_at_a_time:
            # The last batch's slots are empty before this one's intents land: a crash
            # from here on does not carry that batch out again (its dispatches would
            # reach workers a second time).
            await asyncio.gather(*self._clearing)
            self._clearing = []
            self._check_fence()
            faults.point("coordinator.before_intent")
            await asyncio.gather(*self.intent_log.record(intents))
            faults.point("coordinator.after_intent")
            self._check_fence()
            await self._carry_out(intents, dead, moves)
            faults.point("coordinator.after_publish")
            self._clearing = self.intent_log.clear(intents)  # awaited by the next batch

    def _check_fence(self) -> None:
        why = self.fence()
        if why is not None:
            raise Fenced(why)

    async def _carry_out(self, intents: dict[int, Intent], dead: list[DeadLetter],
                         moves: list[homing.Move] | None = None) -> None:
        """Write the intents' entries and publish their records (and the dead letters, and
        the moves home: ``homing``); return once the broker has acknowledged every one."""
        writes = self.store.write([e for i in intents.values() for e in i.entries])
        await asyncio.gather(self.bus.publish([r for i in intents.values() for r in i.records],
                                              dead), *writes,
                             homing.carry_out(self.bus, moves or []))
