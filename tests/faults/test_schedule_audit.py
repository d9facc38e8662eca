"""The schedule audit of the fault runs (``faultsuite.schedule``) on histories made up
here: it finds a fire time recorded twice, a cron time missing, a skipped fire, a run
accepted twice and a run no fire started, and keeps the schedule's workflows out of
the batch's audits. No services needed."""

from __future__ import annotations

from faultsuite.audit import EndState, WorkflowAudit
from faultsuite.schedule import RUN_DEFINITION, ScheduleAudit, set_apart
from faultsuite.topics import Record
from headwater.core import events as ev

SCHEDULE = "schedule:fault-tick:1"
T = 1_800_000_000_000
"""A fire time of the every-2-s cron (a whole multiple of 2 s)."""
BATCH_ID = "fb-chain-000"


def _record(wid: str, seq: int, body: ev.Body) -> Record:
    return Record(0, 0, wid, ev.HistoryEvent(wid, seq, body), b"")


def _ended(wid: str, status: str = "succeeded",
           definition: str | None = RUN_DEFINITION) -> WorkflowAudit:
    return WorkflowAudit(wid, events=3, terminals=1, definition=definition,
                         outcome=EndState(status, {}, None, definition))


def _audit(fires: list[tuple[int, str]], accepted_twice: tuple[int, ...] = (),
           unstarted_run: bool = False) -> tuple[list[str], ScheduleAudit]:
    """Audit a schedule whose fires are ``(fire_ms, outcome)``, each started fire's run
    accepted once (twice for the fire numbers in ``accepted_twice``)."""
    records: list[Record] = []
    audits = {SCHEDULE: _ended(SCHEDULE, "cancelled", None), BATCH_ID: _ended(BATCH_ID)}
    for k, (ms, outcome) in enumerate(fires, 1):
        run_id = f"{SCHEDULE}:fire.{k - 1}:1" if outcome == "started" else None
        records.append(_record(SCHEDULE, k, ev.ScheduleFired(SCHEDULE, "fire", ms + 300, ms,
                                                             outcome, run_id)))
        if run_id is not None:
            records.append(_record(run_id, 1, ev.WorkflowAccepted(run_id, ms, {}, {})))
            records.append(_record(run_id, 2, ev.ParentLinked(run_id, SCHEDULE, "fire",
                                                              k - 1, 1, ms)))
            if k - 1 in accepted_twice:
                records.append(_record(run_id, 3, ev.WorkflowAccepted(run_id, ms, {}, {})))
            audits.setdefault(run_id, _ended(run_id))
    if unstarted_run:
        stray = f"{SCHEDULE}:fire.9:1"
        records.append(_record(stray, 1, ev.ParentLinked(stray, SCHEDULE, "fire", 9, 1, T)))
        audits[stray] = _ended(stray)
    kept, found = set_apart(SCHEDULE, records, audits)
    assert found is not None
    assert sorted(kept) == [BATCH_ID]
    return found.violations, found


def test_consecutive_started_fires_keep_every_invariant() -> None:
    violations, found = _audit([(T, "started"), (T + 2000, "started"), (T + 4000, "started")])
    assert violations == []
    assert found.figures() == {"fires": 3, "runs": 3, "outcomes": {"started": 3},
                               "latest_fire_s": 0.3}


def test_a_fire_time_recorded_twice_is_a_violation() -> None:
    violations, _ = _audit([(T, "started"), (T, "started")])
    assert violations == [f"{SCHEDULE}: 1 fire times recorded more than once: [{T}]"]


def test_a_missing_cron_time_is_a_violation() -> None:
    violations, _ = _audit([(T, "started"), (T + 4000, "started")])
    assert violations == [f"{SCHEDULE}: cron times missing between fires "
                          f"['{T}->{T + 4000}']"]


def test_a_skipped_fire_is_a_violation() -> None:
    violations, _ = _audit([(T, "started"), (T + 2000, "skipped_missed")])
    assert violations == [f"{SCHEDULE}: fires skipped ({{'skipped_missed': 1}}) though "
                          "overlap allow, catchup all"]


def test_a_run_accepted_twice_or_never_started_is_a_violation() -> None:
    violations, _ = _audit([(T, "started")], accepted_twice=(0,), unstarted_run=True)
    assert violations == [f"{SCHEDULE}: run {SCHEDULE}:fire.9:1 exists but no fire started it",
                          f"{SCHEDULE}:fire.0:1: 2 WorkflowAccepted (expected 1)"]
