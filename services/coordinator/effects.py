"""One batch's effects, built in memory input by input before anything is written.

Each input record is decoded and routed (``inputs.decode_input``; one on another
partition than its workflow's is moved there or dead-lettered: ``homing``), skipped when
the table holds its effects already (the store's applied offsets: it came again after a
crash), its producer checked (``submitters``), then handed with its workflow's state and
what this process measured (``machine.Context``: deferred inputs and the size of their
entry, a purge marker, what it saw of a lease) to the core's one pure call,
``machine.decide``, which screens it (retention, leases, refusals, child conflicts) and
steps it. Its ``Decision`` is carried
out here: new states, history events, encoded records (stops, a refused child's report),
dead letters, lease renewals, purges. A step that raises fails its workflow as data
(``machine.failed``), and a workflow whose table entry would exceed the record limit is
failed instead of written (``machine.oversized``, given the size measured here): a bug
or a record too large must not stop the coordinator nor leave an intent that can never
be carried out (docs/architecture.md, invariant 6).
``batch.BatchApplier`` then records the effects as intents and carries them out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from headwater import codec
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.machine import (
    Context,
    Decision,
    LeaseSeen,
    Step,
    decide,
    failed,
    oversized,
)
from headwater.core.retention import dump_marker
from headwater.core.state import WorkflowState
from headwater.errors import DecodeError
from headwater.topics import Topics
from services.common.auth.tokens import Authenticator
from services.coordinator import deferred, homing
from services.coordinator.inputs import decode_input
from services.coordinator.records import (
    RECORD_MARGIN_BYTES,
    DeadLetter,
    InputRecord,
    Outgoing,
    encode_outputs,
)
from services.coordinator.retention import purge_entries, purged_key
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
    lease_seen: Callable[[str, str], LeaseSeen] | None = None
    """``TimerIndex.lease_seen``: what this process saw of a lease (the heartbeats it
    read); None when heartbeats are in the history."""
    _stored_deferred: dict[str, list[ev.Input]] = field(default_factory=dict)
    retention_ms: int | None = None  # HEADWATER_RETENTION_S; None: nothing is purged
    purged: Entries = field(default_factory=dict)  # what purges write (``retention``)

    def add(self, record: InputRecord) -> None:
        """Apply one input record: route it, decide it (``machine.decide``), carry the
        decision out. Never raises for a bad input or a failing step (it is
        dead-lettered)."""
        routed = self._route(record)
        if routed is None:
            return
        event, state, offsets = routed
        stepped = self._decide(record, event, state)
        if stepped is None:
            return
        decision, outgoing = stepped
        wid = event.workflow_id
        if decision.refused is not None:
            self.dead.append(DeadLetter(record, decision.refused))
        if decision.report is not None:  # on the partition of the refused child's id
            self.encoded.append(Outgoing(self.topics.reports,
                                         decision.report.workflow_id.encode(),
                                         codec.encode(decision.report), wid))
        for cancel in decision.cancels:  # a ctx.call's run linked to an ended parent
            self.encoded.append(Outgoing(self.topics.control, cancel.workflow_id.encode(),
                                         codec.encode(cancel), wid))
        if decision.renewal is not None:
            self.renewals.append((wid, *decision.renewal))
        if decision.purge and state is not None:
            self.purged[wid] = purge_entries(state, event.at_ms)
            self.store.forget(wid)
        if decision.step is not None:
            self._collect(record, event, decision.step, outgoing, offsets)
        self._stop(wid, decision)

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

    def _decide(self, record: InputRecord, event: ev.Input, state: WorkflowState | None,
                ) -> tuple[Decision, list[Outgoing]] | None:
        """The core's decision and its step's encoded records; when that raises, the
        input is dead-lettered and its workflow failed as data (None: not even that)."""
        try:
            decision = decide(state, event, self._context(record, event, state))
            if decision.started:  # the submission took the inputs deferred for it
                self.started.add(event.workflow_id)
                self.deferred.pop(event.workflow_id, None)
                self.dead += [DeadLetter(InputRecord(
                    self.topics.control, record.partition, -1, record.key, codec.encode(i),
                    []), why) for i, why in decision.expired]
            if decision.step is None:
                return decision, []
            return decision, encode_outputs(self.topics, decision.step.events,
                                            self.max_record_bytes, decision.step.state)
        except Exception as e:  # a bug or a record too large must not stop the service
            log.exception("cannot apply %s to %s", type(event).__name__, event.workflow_id)
            reason = f"cannot apply {type(event).__name__}: {type(e).__name__}: {e}"
            self.dead.append(DeadLetter(record, reason))
            return self._fail(event.workflow_id, event, reason)

    def _context(self, record: InputRecord, event: ev.Input,
                 state: WorkflowState | None) -> Context:
        """What this process measured for ``event``: the inputs deferred for its workflow,
        the marker of its purge (by this batch, or in the table), what it saw of a lease."""
        wid = event.workflow_id
        marker = (dump_marker(state, event.at_ms) if wid in self.purged and state is not None
                  else None if state is not None else self.store.get_entry(purged_key(wid)))
        lease = (self.lease_seen(wid, event.timer_id)
                 if isinstance(event, ev.TimerFired) and self.lease_seen is not None else None)
        waiting = self._deferred_for(wid) if state is None else []
        return Context(deferred=waiting, history_heartbeats=self.history_heartbeats,
                       retention_ms=self.retention_ms, marker=marker, lease=lease,
                       deferred_bytes=self._deferred_bytes(record, event, waiting, state),
                       max_entry_bytes=self.max_record_bytes - RECORD_MARGIN_BYTES)

    def _deferred_bytes(self, record: InputRecord, event: ev.Input, waiting: list[ev.Input],
                        state: WorkflowState | None) -> int:
        """The size of the deferred entry of ``event``'s workflow with ``event`` kept too
        (0 for an input that cannot be deferred): ``decide`` bounds it."""
        if state is not None or not deferred.deferrable(event):
            return 0
        wid = event.workflow_id
        offsets = {**self.applied[wid], record.topic: record.offset}
        return len(deferred.deferred_key(wid)) + len(deferred.dump([*waiting, event], offsets))

    def _collect(self, record: InputRecord, event: ev.Input, result: Step,
                 outgoing: list[Outgoing], offsets: dict[str, int]) -> None:
        """Keep what a step did: its state, events and records."""
        wid = event.workflow_id
        if result.deferred:
            self._keep_deferred(record, event, offsets)
        if result.events and result.state is not None:
            self.out.extend(result.events)
            self.encoded.extend(outgoing)
            offsets[record.topic] = record.offset
            self.touched[wid] = result.state
            self.inputs_of.setdefault(wid, []).append((record, event))

    def _stop(self, wid: str, decision: Decision) -> None:
        """Send the stops a decision holds (``fencing``) to ``worker-control``."""
        for s in decision.stops:
            self.encoded.append(Outgoing(self.topics.worker_control, wid.encode(),
                                         codec.encode(s), wid))

    def _keep_deferred(self, record: InputRecord, event: ev.Input,
                      offsets: dict[str, int]) -> None:
        """Keep an input the machine deferred until its workflow's submission arrives
        (``decide`` refuses one past ``MAX_DEFERRED``, or one the entry would not fit)."""
        self.deferred[event.workflow_id] = [*self._deferred_for(event.workflow_id), event]
        offsets[record.topic] = record.offset

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
        failing = self._drop_and_fail(wid, size)
        if failing is None:
            return
        result, outgoing = failing
        inputs = self.inputs_of[wid]
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

    def _drop_and_fail(self, wid: str, size: int) -> tuple[Step, list[Outgoing]] | None:
        """Drop what the batch did to ``wid``, dead-letter its last input to it, and fail
        it from its state before the batch as the core decides (``machine.oversized``,
        told the entry's ``size`` in bytes); None when that cannot be recorded."""
        self.out[:] = [e for e in self.out if e.workflow_id != wid]
        self.encoded[:] = [o for o in self.encoded if o.workflow_id != wid]
        self.touched.pop(wid)
        self.store.forget(wid)
        record, event = self.inputs_of[wid][-1]
        try:
            before, loaded = self.store.load(wid), True
        except Exception:
            log.exception("cannot fail %s either", wid)
            before, loaded = None, False
        decision = oversized(before, event, size, self.max_record_bytes, RECORD_MARGIN_BYTES)
        log.error("%s; failing it", decision.refused)
        self.dead.append(DeadLetter(record, decision.refused or ""))
        if not loaded or decision.step is None:
            if decision.error is not None:
                log.error("cannot fail %s either: %s", wid, decision.error)
            return None
        try:
            return decision.step, encode_outputs(self.topics, decision.step.events,
                                                 self.max_record_bytes, decision.step.state)
        except Exception:
            log.exception("cannot fail %s either", wid)
            return None

    def _fail(self, wid: str, event: ev.Input, reason: str,
              ) -> tuple[Decision, list[Outgoing]] | None:
        """After an input could not be applied, fail its workflow as data (so that it
        ends, and a timer cannot fire the same input again and again).

        Returns:
            The failing decision (``machine.failed``) and its step's encoded records, or
            None when even that cannot be
            recorded (the input is then only dead-lettered).
        """
        self._rebuild(wid)
        decision = failed(self.touched.get(wid), event, reason)
        try:
            if decision.step is not None:
                return decision, encode_outputs(self.topics, decision.step.events,
                                                self.max_record_bytes, decision.step.state)
            log.error("cannot fail %s either: %s", wid, decision.error)
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
