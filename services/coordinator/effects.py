"""One batch's effects, built in memory input by input before anything is written.

Each input record is decoded and routed (``inputs.decode_input``; one on another
partition than its workflow's is moved there or dead-lettered: ``homing``), skipped when
the table holds its effects already (the store's applied offsets: it came again after a
crash), dead-lettered when it is refused (a submission whose id names another run, a
signal no wait can take: ``refusals.refusal``), stepped through the state machine, and its
outputs collected: new states, history events, encoded records, dead letters. A step
that raises fails its workflow as data (``machine.fail``), and a workflow whose table
entry would exceed the record limit is failed instead of written: a bug or a record too
large must not stop the coordinator nor leave an intent that can never be carried out
(docs/architecture.md, invariant 6).
``batch.BatchApplier`` then records the effects as intents and carries them out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from headwater import codec
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.fencing import stop_for, stops_for_expired
from headwater.core.ids import LEASE_TIMER, parse_task_timer_id
from headwater.core.machine import Step, fail, start, step
from headwater.core.machine.reports import lease_renewal
from headwater.core.state import WorkflowState
from headwater.errors import DecodeError
from headwater.topics import Topics
from services.common.auth.tokens import Authenticator
from services.coordinator import deferred, homing, retention
from services.coordinator.conflicts import conflict_records
from services.coordinator.inputs import decode_input
from services.coordinator.records import (
    RECORD_MARGIN_BYTES,
    DeadLetter,
    InputRecord,
    Outgoing,
    encode_outputs,
)
from services.coordinator.refusals import refusal
from services.coordinator.store import Store
from services.coordinator.submitters import Guarded, producer_fault
from services.coordinator.writeset import touched_parts

log = logging.getLogger(__name__)

Entries = dict[str, list[tuple[bytes, bytes | None]]]
"""Workflow id -> its table entries (key, value), in the order to write them."""


@dataclass
class BatchEffects:
    """What one batch does, collected input by input (``add``, in batch order).

    Attributes:
        touched: workflow id -> its state after the batch's inputs so far.
        out: the history events recorded, in order.
        encoded: the records to publish (history, dispatches, stops), in order.
        dead: the inputs that could not be applied, and why.
        moves: the inputs on another partition than their workflow's, to move home.
        inputs_of: workflow id -> the inputs that changed it, with their events.
        applied: workflow id -> input topic -> offset of the last input applied.
        replayed: inputs skipped because the table holds their effects.
        deferred: workflow id -> the inputs deferred until its submission, where the
            batch changed them (``deferred``).
        started: workflows whose submission consumed the inputs deferred for it.
        history_heartbeats: whether heartbeats are recorded like any report (else they
            only move their lease).
        auth: checks submissions' tokens (``submitters``); None: auth is off.
        renewals: ``(workflow id, lease timer id, expiry ms)`` of the leases heartbeats
            moved (``machine.reports.lease_renewal``), for the timer index.
    """

    topics: Topics
    store: Store
    max_record_bytes: int
    partition: Callable[[str], int]
    """The partition of a workflow's records and entries."""
    touched: dict[str, WorkflowState] = field(default_factory=dict)
    out: list[ev.HistoryEvent] = field(default_factory=list)
    encoded: list[Outgoing] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    moves: list[homing.Move] = field(default_factory=list)
    inputs_of: dict[str, list[tuple[InputRecord, ev.Input]]] = field(default_factory=dict)
    applied: dict[str, dict[str, int]] = field(default_factory=dict)
    replayed: int = 0
    deferred: dict[str, list[ev.Input]] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)
    history_heartbeats: bool = False
    auth: Authenticator | None = None
    renewals: list[tuple[str, str, int]] = field(default_factory=list)
    lease_end: Callable[[str, str, int], int] | None = None
    """``TimerIndex.lease_end``: when a lease ends by the heartbeats this process read."""
    _stored_deferred: dict[str, list[ev.Input]] = field(default_factory=dict)
    retention_ms: int | None = None  # HEADWATER_RETENTION_S; None: nothing is purged
    purged: Entries = field(default_factory=dict)  # what purges write (``retention``)

    def add(self, record: InputRecord) -> None:
        """Apply one input record: route it, step it, collect what it did. Never raises
        for a bad input or a failing step (it is dead-lettered)."""
        routed = self._route(record)
        if routed is None:
            return
        event, state, offsets = routed
        if retention.screened(self, record, event, state):
            return
        if isinstance(event, ev.TaskHeartbeated) and not self.history_heartbeats:
            self._renew(event, state)
            return
        if isinstance(event, ev.TimerFired) and self._lease_renewed(event, state):
            return
        why = refusal(state, event)
        if why is not None:
            self.dead.append(DeadLetter(record, why))
            self.encoded.extend(conflict_records(self.topics, state, event, why))
            return
        stepped = self._step(record, event, state)
        if stepped is not None:
            result, outgoing = stepped
            self._collect(record, event, result, outgoing, offsets)

    def _route(self, record: InputRecord,
               ) -> tuple[ev.Input, WorkflowState | None, dict[str, int]] | None:
        """The record's event, its workflow's state and applied offsets; None when it
        was dead-lettered (undecodable, misplaced, its snapshot unreadable), moved home
        (``homing``) or skipped (applied before a crash: its effects are in the table)."""
        try:
            event = decode_input(self.topics, record.topic, record.key, record.value,
                                 record.headers)
        except DecodeError as e:
            self.dead.append(DeadLetter(record, str(e)))
            return None
        wid = event.workflow_id
        home = self.partition(wid)
        if record.partition != home:  # its reports would go elsewhere: it would hang
            homing.sort_out(self.topics, record, wid, home, self.moves, self.dead)
            return None
        try:
            state = self.touched.get(wid) or self.store.get(wid)
            if wid not in self.applied:
                self.applied[wid] = self._stored_offsets(wid, state)
        except DecodeError as e:  # a snapshot we cannot read: keep the input, go on
            self.dead.append(DeadLetter(record, f"snapshot of {wid} is unreadable: {e}"))
            return None
        offsets = self.applied[wid]
        if record.offset <= offsets.get(record.topic, -1):
            self.replayed += 1
            return None
        fault = (producer_fault(self.auth, record.headers, event, state)
                 if self.auth is not None and isinstance(event, Guarded) else None)
        if fault is not None:
            self.dead.append(DeadLetter(record, fault))
            return None
        return event, state, offsets

    def _stored_offsets(self, wid: str, state: WorkflowState | None) -> dict[str, int]:
        """The applied offsets the table holds for ``wid``: beside its header, or, for a
        workflow not submitted yet, beside the inputs deferred for it.

        Raises:
            DecodeError: the entry holding them is malformed.
        """
        if state is not None:
            return self.store.applied(wid)
        kept, offsets = deferred.load(
            self.store.get_entry(deferred.deferred_key(wid)))
        self._stored_deferred[wid] = kept  # read once a batch, like the offsets
        return offsets

    def _deferred_for(self, wid: str) -> list[ev.Input]:
        """The inputs deferred until ``wid``'s submission, as the batch left them (the table's,
        read by ``_stored_offsets`` when the batch first met the workflow without state)."""
        return self.deferred.get(wid, self._stored_deferred.get(wid, []))

    def _step(self, record: InputRecord, event: ev.Input, state: WorkflowState | None,
              ) -> tuple[Step, list[Outgoing]] | None:
        """The machine's step and its encoded records; when that raises, the input is
        dead-lettered and its workflow failed as data (None: not even that). A new
        workflow's submission takes the inputs deferred for it (``machine.start``)."""
        try:
            if (state is None and isinstance(event, ev.WorkflowSubmitted | ev.ChildSubmitted)
                    and (kept := self._deferred_for(event.workflow_id))):
                result = start(event, kept)
                self.started.add(event.workflow_id)
                self.deferred.pop(event.workflow_id, None)
            else:
                result = step(state, event)
            return result, encode_outputs(self.topics, result.events, self.max_record_bytes,
                                          result.state)
        except Exception as e:  # a bug or a record too large must not stop the service
            log.exception("cannot apply %s to %s", type(event).__name__, event.workflow_id)
            reason = f"cannot apply {type(event).__name__}: {type(e).__name__}: {e}"
            self.dead.append(DeadLetter(record, reason))
            return self._fail(event.workflow_id, event, reason)

    def _collect(self, record: InputRecord, event: ev.Input, result: Step,
                 outgoing: list[Outgoing], offsets: dict[str, int]) -> None:
        """Keep what a step did, and the stops to send: for a report of an attempt that
        must end, and for the attempts a fired timer ended (``fencing``)."""
        wid = event.workflow_id
        if result.deferred:
            self._keep_deferred(record, event, offsets)
        if result.events and result.state is not None:
            self.out.extend(result.events)
            self.encoded.extend(outgoing)
            offsets[record.topic] = record.offset
            self.touched[wid] = result.state
            self.inputs_of.setdefault(wid, []).append((record, event))
        stops = stops_for_expired(result.events) if isinstance(event, ev.TimerFired) else []
        stop = stop_for(result.state, event) if isinstance(event, ev.Report) else None
        for s in [*stops, *([stop] if stop is not None else [])]:
            self.encoded.append(Outgoing(self.topics.worker_control, wid.encode(),
                                         codec.encode(s), wid))

    def _renew(self, heartbeat: ev.TaskHeartbeated, state: WorkflowState | None) -> None:
        """A heartbeat kept out of the history: it moves its attempt's lease, and an
        attempt that must end is told to stop, as for any report. Nothing is written to
        the table: a renewal lost with this process is made up by the full lease its
        successor grants every running attempt."""
        renewal = lease_renewal(state, heartbeat)
        if renewal is not None:
            self.renewals.append((heartbeat.workflow_id, *renewal))
        stop = stop_for(state, heartbeat)
        if stop is not None:
            wid = heartbeat.workflow_id
            self.encoded.append(Outgoing(self.topics.worker_control, wid.encode(),
                                         codec.encode(stop), wid))

    def _lease_renewed(self, fired: ev.TimerFired, state: WorkflowState | None) -> bool:
        """Whether ``fired`` is a lease that heartbeats this process read since renewed
        (not in the history, so the machine cannot see them): then it is not applied,
        and the lease is armed again for when it does end."""
        parsed = parse_task_timer_id(fired.timer_id)
        if parsed is None or parsed[0] != LEASE_TIMER or self.lease_end is None or state is None:
            return False
        task = state.tasks.get(parsed[1])
        if task is None or task.attempt != parsed[2] or task.heartbeat_ms is None:
            return False
        end = self.lease_end(fired.workflow_id, fired.timer_id, task.heartbeat_ms)
        if end <= fired.at_ms:
            return False
        self.renewals.append((fired.workflow_id, fired.timer_id, end))
        return True

    def _keep_deferred(self, record: InputRecord, event: ev.Input,
                      offsets: dict[str, int]) -> None:
        """Keep an input the machine deferred until its workflow's submission arrives
        (dead-lettered past ``MAX_DEFERRED`` of them)."""
        wid = event.workflow_id
        kept = [*self._deferred_for(wid), event]
        size = len(deferred.deferred_key(wid)) + len(deferred.dump(
            kept, {**offsets, record.topic: record.offset}))
        if len(kept) > deferred.MAX_DEFERRED:
            why = (f"{deferred.MAX_DEFERRED} inputs already wait for workflow {wid}, "
                   "which was never submitted")
        elif size > self.max_record_bytes - RECORD_MARGIN_BYTES:
            why = (f"the inputs waiting for workflow {wid} would take {size} bytes, over the "
                   f"limit of {self.max_record_bytes} (HEADWATER_MAX_MESSAGE_BYTES) less "
                   f"{RECORD_MARGIN_BYTES}")
        else:
            self.deferred[wid] = kept
            offsets[record.topic] = record.offset
            return
        self.dead.append(DeadLetter(record, why))

    def table_entries(self) -> tuple[dict[str, set[str]], Entries]:
        """The parts of each touched workflow that changed (``writeset.touched_parts``)
        and its table entries; a workflow whose entries would not fit a record is failed
        instead (``_fail_oversized``)."""
        events_of: dict[str, list[ev.HistoryEvent]] = {}
        for e in self.out:  # one pass: a batch may touch hundreds of workflows
            events_of.setdefault(e.workflow_id, []).append(e)
        changed = {wid: touched_parts(events_of.get(wid, []), state)
                   for wid, state in self.touched.items()}
        entries = {wid: self.store.entries(state, changed[wid], self.applied[wid])
                   for wid, state in self.touched.items()}
        for wid, kept in self.deferred.items():
            entries.setdefault(wid, []).append(
                (deferred.deferred_key(wid), deferred.dump(kept, self.applied[wid])))
        entries.update(self.purged)  # a purged workflow has no other input applied
        for wid in self.started:  # consumed: the entry is emptied
            entries.setdefault(wid, []).append((deferred.deferred_key(wid), b""))
        for wid in [w for w, es in entries.items() if self._too_large(es)]:
            self._fail_oversized(wid, entries, changed)
        return changed, entries

    def _too_large(self, entries: list[tuple[bytes, bytes | None]]) -> int:
        """The size of the largest table entry over the record limit, else 0."""
        largest = max((len(k) + len(v or b"") for k, v in entries), default=0)
        return largest if largest > self.max_record_bytes - RECORD_MARGIN_BYTES else 0

    def _fail_oversized(self, wid: str, entries: Entries,
                        changed: dict[str, set[str]]) -> None:
        """A workflow whose snapshot would not fit a table entry (an output near the
        record limit, say): drop what the batch did to it, fail it as data from its state
        before the batch instead, and dead-letter the batch's last input to it. Without
        this its intent would land and never be carried out (aiokafka refuses the entry),
        on every restart."""
        size = self._too_large(entries.pop(wid))
        if wid not in self.touched:  # only deferred inputs, which _keep_deferred bounds
            log.error("the inputs waiting for workflow %s take %d bytes; not kept", wid, size)
            self.deferred.pop(wid, None)
            return
        reason = (f"the snapshot of workflow {wid} would hold a table entry of {size} bytes, "
                  f"over the limit of {self.max_record_bytes} (HEADWATER_MAX_MESSAGE_BYTES) "
                  f"less {RECORD_MARGIN_BYTES}")
        log.error("%s; failing it", reason)
        self.out[:] = [e for e in self.out if e.workflow_id != wid]
        self.encoded[:] = [o for o in self.encoded if o.workflow_id != wid]
        self.touched.pop(wid)
        self.store.forget(wid)
        inputs = self.inputs_of[wid]
        record, event = inputs[-1]
        self.dead.append(DeadLetter(record, reason))
        try:
            result = fail(self.store.load(wid), event, reason[:2000])
            outgoing = encode_outputs(self.topics, result.events, self.max_record_bytes,
                                      result.state)
        except Exception:
            log.exception("cannot fail %s either", wid)
            return
        if result.state is None or not result.events:
            return
        offsets = self.store.applied(wid)
        for r, _ in inputs:  # the batch's inputs to it are spent
            offsets[r.topic] = max(r.offset, offsets.get(r.topic, -1))
        changed[wid] = touched_parts(result.events, result.state)
        failed_entries = self.store.entries(result.state, changed[wid], offsets)
        if self._too_large(failed_entries):  # even failing it does not fit (its definition)
            self.store.forget(wid)
            return
        self.out.extend(result.events)
        self.encoded.extend(outgoing)
        self.touched[wid] = result.state
        if wid in self.started:  # the submission consumed them, failed as it is
            failed_entries.append((deferred.deferred_key(wid), b""))
        entries[wid] = failed_entries

    def _fail(self, wid: str, event: ev.Input, reason: str,
              ) -> tuple[Step, list[Outgoing]] | None:
        """After an input could not be applied, fail its workflow as data (so that it
        ends, and a timer cannot fire the same input again and again).

        Returns:
            The failing step and its encoded records, or None when even that cannot be
            recorded (the input is then only dead-lettered).
        """
        self._rebuild(wid)
        try:
            result = fail(self.touched.get(wid), event, reason[:2000])
            return result, encode_outputs(self.topics, result.events, self.max_record_bytes,
                                          result.state)
        except Exception:
            log.exception("cannot fail %s either", wid)
            self._rebuild(wid)
            return None

    def _rebuild(self, wid: str) -> None:
        """After a failed step the in-memory state may be half-changed: rebuild it from
        the stored snapshot and this batch's events so far, which evolve exactly."""
        self.store.forget(wid)
        state = self.store.load(wid)
        for event in self.out:
            if event.workflow_id == wid:
                state = evolve(state, event)
        if state is None:
            self.touched.pop(wid, None)
        else:
            self.touched[wid] = state
