"""Audit one workflow: its history against the coordinator's table and the projection.

The history on the events topic is the truth (docs/architecture.md §3, invariant 1). The
table is a snapshot of it and the PostgreSQL projection a view of it; both may trail the
log for a moment.
A store that is behind is compared with the history folded up to the store's ``seq`` (it
holds a prefix of the history), and its lag is a note, not a difference, while it is
allowed:

- the table: the coordinator writes it right after publishing a batch's events, so it
  may trail the log only briefly; lag is allowed while the first event it lacks is
  younger than a grace period;
- the projection: it is allowed to trail the log as far as the projector has not
  consumed it yet (its consumer group's committed offset); missing events the projector
  has already committed past are a difference.

Everything here is pure: the caller reads the log, the table and the projection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from headwater.core.state import WorkflowState
from ops.expected_rows import ProjectionRows, diff_rows, expected_rows
from ops.history import Conflict, Fold, Recorded, dedupe, fold
from ops.jsondiff import ABSENT, diff_json
from services.coordinator.snapshot import dump_state


@dataclass(frozen=True)
class Difference:
    """Something a store holds that the history does not say.

    Attributes:
        where: ``"log"``, ``"table"`` or ``"projection"``.
        path: what differs, e.g. ``"tasks.m[1].status"`` or ``"tasks[m[1]].attempt"``.
        expected: what the history says (``ABSENT``: nothing there).
        actual: what the store holds (``ABSENT``: nothing there).
        message: a sentence, for differences that are not one value.
    """

    where: str
    path: str
    expected: Any = None
    actual: Any = None
    message: str = ""

    def describe(self) -> str:
        """One line for people."""
        if self.message:
            return f"{self.where}: {self.message}"
        return (f"{self.where}: {self.path}: the log says {_show(self.expected)}, "
                f"the {self.where} has {_show(self.actual)}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``ABSENT`` as the string ``"<absent>"``)."""
        return {"where": self.where, "path": self.path, "expected": _plain(self.expected),
                "actual": _plain(self.actual), "message": self.describe()}


def _plain(value: Any) -> Any:
    return "<absent>" if value is ABSENT else value


def _show(value: Any) -> str:
    if value is ABSENT:
        return "nothing"
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= 120 else text[:119] + "…"


@dataclass
class StoreCheck:
    """How one store compares with the history.

    Attributes:
        store: ``"table"`` or ``"projection"``.
        held: whether the store has anything of the workflow (an entry, a row).
        seq: the store's ``seq`` for the workflow (0: nothing recorded).
        compared_at: the history ``seq`` it was compared with (its own, when behind).
        behind: it trails the log, within what is allowed (a note, not a difference).
        notes: remarks that are not differences.
        differences: what does not match.
    """

    store: str
    held: bool = False
    seq: int = 0
    compared_at: int = 0
    behind: bool = False
    notes: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)


def diff_states(folded: WorkflowState, stored: WorkflowState,
                where: str = "table") -> list[Difference]:
    """Field-level differences between two states, by canonical snapshot.

    Args:
        folded: the state the history gives.
        stored: the state a store holds.
        where: the store's name, for the differences.

    Returns:
        One difference per differing path (empty when the snapshot bytes are equal).
    """
    a, b = dump_state(folded), dump_state(stored)
    if a == b:
        return []
    found = [Difference(where, path, exp, act)
             for path, exp, act in diff_json(orjson.loads(a), orjson.loads(b))]
    return found or [Difference(where, "", message="the snapshots differ in encoding only")]


def check_table(events: Sequence[Recorded], table: WorkflowState | None, table_error: str,
                now_ms: int, grace_ms: int) -> StoreCheck:
    """Compare the table's state with the history.

    Args:
        events: the deduplicated history, in ``seq`` order (may be empty).
        table: the state decoded from the table's entries, or None if it has none.
        table_error: why the entries could not be decoded (``""`` if they could).
        now_ms: the current time, ms since the epoch.
        grace_ms: how long the table may lack an event, ms.

    Returns:
        The comparison.
    """
    check = StoreCheck("table", held=table is not None or bool(table_error))
    if table_error:
        check.differences.append(Difference("table", "", message=table_error))
        return check
    check.seq = table.seq if table is not None else 0
    _judge_lag(check, events, allowed_from=_young_from(events, now_ms, grace_ms),
               why=f"the coordinator has not written it yet (allowed for {grace_ms / 1000:g} s)")
    if table is None or check.differences:
        return check
    state = fold([r.event for r in events], check.compared_at).state
    if state is not None:
        check.differences += diff_states(state, table)
    return check


def check_projection(events: Sequence[Recorded], rows: ProjectionRows,
                     committed_offset: int | None) -> StoreCheck:
    """Compare the projection's rows with the history.

    Args:
        events: the deduplicated history, in ``seq`` order (may be empty).
        rows: what the projection holds for the workflow.
        committed_offset: the projector's committed offset on the workflow's partition of
            the events topic (None: unknown; any lag is then allowed).

    Returns:
        The comparison.
    """
    check = StoreCheck("projection", held=rows.held, seq=rows.seq)
    allowed_from = 1 if committed_offset is None else next(
        (r.event.seq for r in events if r.offset >= committed_offset), len(events) + 1)
    _judge_lag(check, events, allowed_from,
               why="the projector has not consumed it yet (eventually consistent)"
               if committed_offset is not None else "the projector's position is unknown")
    if check.differences:
        return check
    state = fold([r.event for r in events], check.compared_at).state
    prefix = [r.event for r in events if r.event.seq <= check.compared_at]
    expected = expected_rows(state, prefix)
    check.differences += [Difference("projection", path, exp, act)
                          for path, exp, act in diff_rows(expected, rows)]
    return check


def _young_from(events: Sequence[Recorded], now_ms: int, grace_ms: int) -> int:
    """The first ``seq`` recorded less than ``grace_ms`` ago (past the end if none)."""
    for r in events:
        recorded = r.timestamp_ms or r.event.body.at_ms
        if now_ms - recorded < grace_ms:
            return r.event.seq
    return len(events) + 1


def _judge_lag(check: StoreCheck, events: Sequence[Recorded], allowed_from: int,
               why: str) -> None:
    """Set ``compared_at``; note allowed lag, record lag beyond it and a store ahead."""
    log_seq = events[-1].event.seq if events else 0
    check.compared_at = min(check.seq, log_seq)
    if check.seq > log_seq:
        check.differences.append(Difference(
            check.store, "seq", log_seq, check.seq,
            f"it is at seq {check.seq}, ahead of the log (seq {log_seq})"))
    elif check.seq < log_seq:
        if check.seq + 1 >= allowed_from:
            check.behind = True
            check.notes.append(f"the {check.store} is behind the log (seq {check.seq} of "
                               f"{log_seq}): {why}; compared with the history up to seq "
                               f"{check.seq}")
        else:
            held = f"is at seq {check.seq}" if check.seq else "has nothing of the workflow"
            check.differences.append(Difference(
                check.store, "seq", log_seq, check.seq,
                f"it {held} but should have at least seq {allowed_from - 1} (the log has "
                f"{log_seq})"))


@dataclass
class Report:
    """Everything ``headwater replay`` found for one workflow.

    Attributes:
        workflow_id: the workflow.
        events: its deduplicated history.
        conflicts: duplicates of one ``seq`` with different bodies.
        fold: the state the history folds to, and why folding stopped early if it did.
        table: the table's comparison.
        projection: the projection's comparison.
        log_problems: records of the workflow that could not be decoded.
    """

    workflow_id: str
    events: list[Recorded]
    conflicts: list[Conflict]
    fold: Fold
    table: StoreCheck
    projection: StoreCheck
    log_problems: list[str] = field(default_factory=list)

    @property
    def known(self) -> bool:
        """Whether the log, the table or the projection has anything of the workflow."""
        return bool(self.events or self.table.held or self.projection.held)

    @property
    def differences(self) -> list[Difference]:
        """Every difference: the log's own (conflicts, a history that does not fold)
        first, then the table's and the projection's."""
        own = [Difference("log", "", message=p) for p in self.log_problems]
        own += [Difference("log", f"seq {c.seq}", message=c.describe()) for c in self.conflicts]
        if self.fold.error:
            own.append(Difference("log", "", message=f"the history does not fold: "
                                  f"{self.fold.error}"))
        return [*own, *self.table.differences, *self.projection.differences]

    @property
    def notes(self) -> list[str]:
        """Remarks that are not differences (a store behind the log)."""
        return [*self.table.notes, *self.projection.notes]


@dataclass(frozen=True)
class Observed:
    """What was read of one workflow for ``audit``: the log, the table, the projection.

    Attributes:
        records: its records from the events topic, in log order, duplicates included.
        table: the state decoded from the table (None: no entry).
        table_error: why the table's entries could not be decoded, or ``""``.
        rows: the projection's rows for the workflow.
        committed_offset: the projector's committed offset on the workflow's events
            partition (None: unknown).
        log_problems: records of the workflow that could not be decoded, one line each.
    """

    records: Sequence[Recorded] = ()
    table: WorkflowState | None = None
    table_error: str = ""
    rows: ProjectionRows = field(default_factory=ProjectionRows)
    committed_offset: int | None = None
    log_problems: Sequence[str] = ()


def audit(workflow_id: str, observed: Observed, now_ms: int, grace_ms: int) -> Report:
    """Deduplicate and fold the history, then compare the table and the projection.

    Args:
        workflow_id: the workflow.
        observed: what the log, the table and the projection hold of it.
        now_ms: the current time, ms since the epoch.
        grace_ms: how long the table may lack an event, ms.

    Returns:
        The report. Stores are not compared when the history does not fold.
    """
    table, rows, log_problems = observed.table, observed.rows, observed.log_problems
    events, conflicts = dedupe(observed.records)
    folded = fold([r.event for r in events])
    if folded.error:
        skipped = "not compared: the history does not fold"
        return Report(workflow_id, events, conflicts, folded,
                      StoreCheck("table", table is not None, table.seq if table else 0,
                                 notes=[skipped]),
                      StoreCheck("projection", rows.held, rows.seq, notes=[skipped]),
                      list(log_problems))
    return Report(workflow_id, events, conflicts, folded,
                  check_table(events, table, observed.table_error, now_ms, grace_ms),
                  check_projection(events, rows, observed.committed_offset),
                  list(log_problems))


def past_retention(report: Report, marker: dict[str, Any]) -> Report:
    """``report`` for a workflow the coordinator purged after its retention
    (``services.coordinator.retention``; ``marker`` its fields,
    ``headwater.core.retention.load_marker``): the table holds nothing to compare, which
    is no difference, and a note says so plainly.
    """
    ended = marker.get("status", "ended")
    note = (f"past retention: {report.workflow_id} ended ({ended}, seq "
            f"{marker.get('seq', '?')}) and the coordinator purged its table entries "
            "(HEADWATER_RETENTION_S); only a marker is kept, so the table is not compared")
    report.table = StoreCheck("table", held=True, seq=int(marker.get("seq") or 0),
                              notes=[note])
    return report


def verdict(report: Report) -> str:
    """The audit's outcome in one line, for the top of a summary: unknown, no
    differences (naming a store compared behind the log), or how many differences and
    where."""
    if not report.known:
        return (f"unknown workflow {report.workflow_id}: nothing in the log, the table or "
                "the projection")
    differences = report.differences
    if differences:
        where = Counter(d.where for d in differences)
        return (f"{len(differences)} difference{'s' * (len(differences) != 1)} in "
                f"{report.workflow_id}: " + ", ".join(f"{n} in the {w}" for w, n in where.items()))
    seq = report.events[-1].event.seq if report.events else 0
    behind = [c.store for c in (report.table, report.projection) if c.behind]
    why = (f"; the {' and the '.join(behind)} behind the log, compared up to "
           f"{'its' if len(behind) == 1 else 'their'} own seq" if behind else "")
    return f"no differences: the stores agree with the history of {report.workflow_id} " \
           f"(seq {seq}){why}"


def event_counts(report: Report) -> list[tuple[str, int]]:
    """How many events of each type the history holds, most first (ties by name)."""
    counts = Counter(r.event.type for r in report.events)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def node_counts(report: Report) -> list[tuple[str, int]]:
    """How many of the folded state's nodes are in each status, most first (none when the
    history does not fold)."""
    state = report.fold.state
    if state is None:
        return []
    counts = Counter(n.status.value for n in state.nodes.values())
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))
