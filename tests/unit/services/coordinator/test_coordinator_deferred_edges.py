"""The @waiting entry at its edges: sizes, corruption, conflicts, growth, staleness, and
the audit tools."""

from __future__ import annotations

import orjson
import pytest
from test_coordinator_deferred import CANCEL, SUBMIT, DeadBus, check_cancelled
from test_coordinator_redelivery import AT, SPEC, TOPICS, WF, Table, check_history, rec

from headwater import codec
from headwater.core import events as ev
from ops.audit import Observed, audit
from ops.cli import replay as replay_cli
from services.coordinator import deferred
from services.coordinator.batch import BatchApplier
from services.coordinator.keys import DEFERRED, TABLE_KEY_SEP, intent_key
from services.coordinator.records import InputRecord
from services.coordinator.timers import TimerIndex

LIMIT = 40_000


def applier(bus: DeadBus, table: Table, limit: int = 16 << 20) -> BatchApplier:
    return BatchApplier(TOPICS, bus, table, TimerIndex(), limit)


def kept(table: Table, wid: str = WF) -> list[ev.Input]:
    return deferred.load(table.get_entry(deferred.deferred_key(wid)))[0]


# -- 1. a waiting entry over the record limit -------------------------------------------

async def test_two_big_waiting_cancels_in_one_batch_do_not_stop_the_coordinator() -> None:
    """Each cancel fits a record; together their @waiting entry does not. Expected (the
    module docstring of effects.py, invariant 6): the one that does not fit is
    dead-lettered and the batch goes on. A raise here stops the process, and the same
    batch is delivered again on restart: a crash loop."""
    bus, table = DeadBus(), Table()
    big = "r" * 20_000
    cancels = [rec(TOPICS.control, i, ev.CancelRequested(WF, AT + i, big)) for i in range(2)]
    for _ in range(2):  # the process restarts and gets the same uncommitted batch again
        table.clear_cache()
        try:
            await applier(bus, table, LIMIT).apply_batch(cancels)
        except KeyError as e:  # _fail_oversized: self.touched.pop(wid), wid never touched
            pytest.fail(f"apply_batch raised KeyError({e}): the coordinator stops, again "
                        "on every restart")
    assert bus.dead and all(len(k) + len(v) <= LIMIT - 4096 for k, v in table.entries_.items())


async def test_a_big_second_waiting_cancel_in_a_later_batch_does_not_stop_it() -> None:
    bus, table = DeadBus(), Table()
    big = "r" * 20_000
    coordinator = applier(bus, table, LIMIT)
    await coordinator.apply_batch([rec(TOPICS.control, 0, ev.CancelRequested(WF, AT, big))])
    await coordinator.apply_batch([rec(TOPICS.control, 1, ev.CancelRequested(WF, AT + 1, big))])
    assert len(bus.dead) == 1


async def test_one_escaped_cancel_reason_grows_six_fold_in_the_waiting_entry() -> None:
    """Control characters are one byte in Avro, six in the entry's JSON (\\u0001): a cancel
    of 7 kB yields a 42 kB entry, over a 40 kB limit; another workflow in the batch must
    not be lost with it."""
    bus, table = DeadBus(), Table()
    other = "wf-other"
    cancel = rec(TOPICS.control, 0, ev.CancelRequested(WF, AT, "\x01" * 7_000))
    assert len(cancel.value or b"") < 8_000
    sub = InputRecord(TOPICS.submissions, 0, 0, other.encode(),
                      codec.encode(ev.WorkflowSubmitted(other, SPEC, {}, AT)), [])
    await applier(bus, table, LIMIT).apply_batch([cancel, sub])
    assert table.load(other) is not None


# -- 2. a malformed @waiting entry ----------------------------------------------------

async def test_a_malformed_waiting_entry_dead_letters_the_submission_with_a_reason() -> None:
    """The submission (answered 202 by the gateway) is dead-lettered
    as an unreadable snapshot, the coordinator goes on with the other workflow."""
    bus, table = DeadBus(), Table()
    table.entries_[deferred.deferred_key(WF)] = b"{not json"
    other = "wf-other"
    sub_other = InputRecord(TOPICS.submissions, 0, 1, other.encode(),
                            codec.encode(ev.WorkflowSubmitted(other, SPEC, {}, AT)), [])
    await applier(bus, table).apply_batch([SUBMIT, sub_other])
    [dead] = bus.dead
    assert dead.record == SUBMIT
    assert dead.reason.startswith(f"snapshot of {WF} is unreadable: bad waiting inputs entry")
    assert table.load(WF) is None and table.load(other) is not None


async def test_a_waiting_entry_with_ill_typed_fields_fails_the_workflow_as_data() -> None:
    """Valid JSON, at_ms a string: load accepts it, start raises TypeError; the workflow
    is failed as data, the submission dead-lettered, the coordinator goes on."""
    bus, table = DeadBus(), Table()
    table.entries_[deferred.deferred_key(WF)] = orjson.dumps({"v": 1, "applied": {}, "inputs": [
        {"type": "CancelRequested",
         "fields": {"workflow_id": WF, "at_ms": "soon", "reason": ""}}]})
    await applier(bus, table).apply_batch([SUBMIT])
    [dead] = bus.dead
    assert "TypeError" in dead.reason
    state = table.load(WF)
    assert state is not None and state.status.value == "failed"
    check_history(bus, table)


# -- 3. invalid spec, resubmissions --------------------------------------------------

async def test_a_waiting_cancel_then_an_invalid_spec_fails_it_and_empties_the_entry() -> None:
    bus, table = DeadBus(), Table()
    coordinator = applier(bus, table)
    await coordinator.apply_batch([CANCEL])
    bad = rec(TOPICS.submissions, 0, ev.WorkflowSubmitted(WF, {"name": "x", "nodes": []}, {}, AT))
    await coordinator.apply_batch([bad])
    assert [e.type for e in bus.events()] == ["WorkflowAccepted", "WorkflowFailed"]
    assert kept(table) == []
    check_history(bus, table)


@pytest.mark.parametrize("same", [True, False])
async def test_a_waiting_cancel_then_two_submissions(same: bool) -> None:
    bus, table = DeadBus(), Table()
    coordinator = applier(bus, table)
    await coordinator.apply_batch([CANCEL])
    spec2 = SPEC if same else {**SPEC, "name": "other"}
    again = rec(TOPICS.submissions, 1, ev.WorkflowSubmitted(WF, spec2, {}, AT + 5))
    await coordinator.apply_batch([SUBMIT, again])
    check_cancelled(bus, table)
    assert len(bus.dead) == (0 if same else 1)
    # an identical resubmission changes nothing and records no offset (as before)
    assert table.applied(WF) == {TOPICS.control: 0, TOPICS.submissions: 0}


# -- 4. a consumed entry ---------------------------------------------------------------

async def test_a_consumed_waiting_entry_is_left_as_an_empty_value_not_a_tombstone() -> None:
    bus, table = DeadBus(), Table()
    await applier(bus, table).apply_batch([CANCEL, SUBMIT])
    assert table.entries_[deferred.deferred_key(WF)] == b""  # kept in the compacted changelog


# -- 5. the audit tools ------------------------------------------------------------

async def test_replay_decodes_a_table_holding_only_a_waiting_cancel_without_error() -> None:
    """``headwater replay`` on an id whose cancel waits (its submission not read yet):
    the entries are legitimate, not a broken table."""
    bus, table = DeadBus(), Table()
    await applier(bus, table).apply_batch([CANCEL])
    prefix = WF.encode() + TABLE_KEY_SEP.encode()
    entries = {k[len(prefix):].decode(): v for k, v in table.entries_.items()
               if k.startswith(prefix)}
    assert list(entries) == [DEFERRED]
    table_state, table_error = replay_cli.decode_table(WF, entries)
    report = audit(WF, Observed(table=table_state, table_error=table_error), AT, 30_000)
    assert [d.describe() for d in report.differences] == []  # replay would exit 1


async def test_replay_decodes_a_cancelled_workflow_with_its_emptied_waiting_entry() -> None:
    bus, table = DeadBus(), Table()
    await applier(bus, table).apply_batch([CANCEL, SUBMIT])
    prefix = WF.encode() + TABLE_KEY_SEP.encode()
    entries = {("" if k == WF.encode() else k[len(prefix):].decode()): v
               for k, v in table.entries_.items() if k == WF.encode() or k.startswith(prefix)}
    state, error = replay_cli.decode_table(WF, entries)
    assert error == "" and state is not None and state.status.value == "cancelled"
    assert not any(k.startswith(intent_key(0)) for k in table.entries_)


# -- 6. timers of a workflow started by machine.start --------------------------------

async def test_a_workflow_started_with_its_waiting_cancel_arms_no_timer() -> None:
    bus, table = DeadBus(), Table()
    timers = TimerIndex()
    coordinator = BatchApplier(TOPICS, bus, table, timers, 16 << 20)
    await coordinator.apply_batch([CANCEL, rec(TOPICS.control, 1, ev.CancelRequested(
        "wf-ghost", AT, ""))])
    await coordinator.apply_batch([SUBMIT])
    assert len(timers) == 0 and timers.pop_due(AT + 10**9) == []
    assert table.scan() == []  # neither the @waiting keys nor the cancelled one re-arm


# -- 7. _fail_oversized of a workflow started with its waiting cancel ---------------

async def test_an_oversized_start_with_a_waiting_cancel_empties_the_entry() -> None:
    """A 15 kB cancel reason fits the @waiting entry; applied with the submission it goes
    into the nodes' entries and the header (45 kB): the workflow is failed instead
    (observed: WorkflowFailed, the submission dead-lettered). ``_fail_oversized`` pops
    the workflow's entries, the emptying of @waiting with them, and does not restore it:
    the consumed cancel stays in the table for ever (deferred.py: "emptied once the
    submission has consumed it")."""
    bus, table = DeadBus(), Table()
    coordinator = applier(bus, table, LIMIT)
    await coordinator.apply_batch([rec(TOPICS.control, 0, ev.CancelRequested(WF, AT,
                                                                             "r" * 15_000))])
    await coordinator.apply_batch([SUBMIT])
    assert bus.events()[-1].type == "WorkflowFailed"
    check_history(bus, table)
    assert kept(table) == []
