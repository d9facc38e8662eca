"""The invariants a run must keep, checked on what the topics recorded.

Per workflow, on the events topic (docs/architecture.md §3): ``seq`` 1..n without gaps, exactly one
terminal event, no two records with one ``seq`` and different bodies (identical copies
are the at-least-once duplicates readers absorb), at most one ``TaskSucceeded`` per
task and generation (a ``WorkflowRestarted`` starts the next, whose tasks run again), at
most one ``TaskDispatched`` per task attempt, none while the run is paused, and a
history that folds through
``headwater.core.evolve``. The fold gives the workflow's ``EndState`` (status, node statuses,
output, the definition it ran), which a run under faults must share with a fault-free run;
``definition_faults`` checks that each run recorded the definition version it was meant
to run (``WorkflowAccepted.definition`` and ``definition_version``).

On the other topics, duplicates that the coordinator had to absorb are counted: dispatch
records sent twice, reports sent twice for one attempt, submissions produced twice.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faultsuite.batch import Submission
from faultsuite.topics import Record
from headwater.core import events as ev
from headwater.core.evolve import evolve
from headwater.core.ids import task_key
from headwater.core.state import IllegalTransition, WorkflowState

LOST_ERROR_TYPES = ("HeartbeatTimeout", "WorkerStopped")
"""``TaskFailed.error_type`` of attempts that ended with their worker, not their code."""


@dataclass(frozen=True)
class EndState:
    """How a workflow ended, as compared between runs.

    Attributes:
        status: ``succeeded``, ``failed``, ``cancelled`` (or ``running``: not terminal).
        nodes: node id -> node status.
        output: the workflow's output (None unless it succeeded).
        definition: ``name@version`` of the registered definition it ran, or None (an
            inline spec).
    """

    status: str
    nodes: dict[str, str]
    output: Any
    definition: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON)."""
        return {"status": self.status, "nodes": self.nodes, "output": self.output,
                "definition": self.definition}


def definition_ref(name: str | None, version: int | None) -> str | None:
    """``name@version`` (``name@?`` without a version), or None without a name."""
    if name is None:
        return None
    return f"{name}@{'?' if version is None else version}"


@dataclass
class WorkflowAudit:
    """What one workflow's history says.

    Attributes:
        workflow_id: the workflow.
        events: distinct events (by ``seq``).
        duplicates: further records identical to one already read (absorbed).
        conflicts: ``seq`` numbers recorded twice with different bodies.
        gaps: ``seq`` numbers missing below the highest one.
        terminals: distinct terminal events.
        double_successes: task keys with more than one ``TaskSucceeded`` in one
            generation (``<generation>:<key>``).
        double_dispatches: ``key/attempt`` with more than one ``TaskDispatched``.
        discarded: ``ReportDiscarded`` events (late or repeated outcomes absorbed).
        dispatched: distinct ``TaskDispatched`` (attempts sent to workers).
        started: distinct ``TaskStarted`` (attempts that ran).
        tasks: distinct task keys dispatched (tasks run, whatever their attempts).
        lost_attempts: attempts failed as lost or stopped (``HeartbeatTimeout``,
            ``WorkerStopped``) rather than by their task code.
        restarts: ``WorkflowRestarted`` events (lost attempts that restarted the run,
            ``restart_on_failure``).
        dispatched_paused: ``key/attempt`` dispatched while the run was paused (between
            a ``WorkflowPaused`` and its ``WorkflowResumed``: none may be).
        fold_error: why the history does not fold (``""`` when it does).
        outcome: the folded state's outcome (None without a history).
        definition: ``name@version`` that its ``WorkflowAccepted`` records, or None
            (an inline spec, or no ``WorkflowAccepted``).
        tenant: the tenant its ``WorkflowAccepted`` records (None: none named, or no
            ``WorkflowAccepted``).
    """

    workflow_id: str
    events: int = 0
    duplicates: int = 0
    conflicts: list[int] = field(default_factory=list)
    gaps: list[int] = field(default_factory=list)
    terminals: int = 0
    double_successes: list[str] = field(default_factory=list)
    double_dispatches: list[str] = field(default_factory=list)
    discarded: int = 0
    dispatched: int = 0
    started: int = 0
    tasks: int = 0
    lost_attempts: int = 0
    restarts: int = 0
    dispatched_paused: list[str] = field(default_factory=list)
    fold_error: str = ""
    outcome: EndState | None = None
    definition: str | None = None
    tenant: str | None = None

    def violations(self) -> list[str]:
        """Each broken invariant, one line each (empty when the history is sound)."""
        wid, out = self.workflow_id, []
        if self.events == 0:
            return [f"{wid}: no history"]
        if self.conflicts:
            out.append(f"{wid}: seq {self.conflicts} recorded with different bodies")
        if self.gaps:
            out.append(f"{wid}: seq {self.gaps} missing")
        if self.terminals != 1:
            out.append(f"{wid}: {self.terminals} terminal events")
        if self.double_successes:
            out.append(f"{wid}: tasks {self.double_successes} succeeded more than once")
        if self.double_dispatches:
            out.append(f"{wid}: attempts {self.double_dispatches} dispatched more than once")
        if self.dispatched_paused:
            out.append(f"{wid}: attempts {self.dispatched_paused} dispatched while paused")
        if self.fold_error:
            out.append(f"{wid}: history does not fold: {self.fold_error}")
        return out


def audit_history(workflow_id: str, records: Iterable[ev.HistoryEvent]) -> WorkflowAudit:
    """Check one workflow's records (in log order) and fold them."""
    a = WorkflowAudit(workflow_id)
    first = _first_by_seq(a, records)
    if not first:
        return a
    a.events = len(first)
    a.gaps = [s for s in range(1, max(first) + 1) if s not in first]
    history = [first[s] for s in sorted(first)]
    successes, dispatches = _count_bodies(a, history)
    a.dispatched = sum(dispatches.values())
    a.tasks = len({k.rsplit("/", 1)[0] for k in dispatches})
    a.double_successes = sorted(k for k, n in successes.items() if n > 1)
    a.double_dispatches = sorted(k for k, n in dispatches.items() if n > 1)
    a.dispatched_paused = _dispatched_paused(history)
    if not a.gaps:
        state, a.fold_error = _fold(history)
        a.outcome = outcome_of(state) if state is not None else None
    return a


def _first_by_seq(a: WorkflowAudit, records: Iterable[ev.HistoryEvent],
                  ) -> dict[int, ev.HistoryEvent]:
    """The first record of each seq; counts the later ones in ``a`` (``duplicates`` when
    equal, ``conflicts`` when not)."""
    first: dict[int, ev.HistoryEvent] = {}
    for r in records:
        kept = first.setdefault(r.seq, r)
        if kept is not r:
            if kept == r:
                a.duplicates += 1
            else:
                a.conflicts.append(r.seq)
    return first


def _count_bodies(a: WorkflowAudit, history: list[ev.HistoryEvent],
                  ) -> tuple[Counter[str], Counter[str]]:
    """Count terminals, starts, discarded reports, lost attempts and restarts in ``a``;
    return the ``TaskSucceeded`` per ``generation:key`` and the ``TaskDispatched`` per
    ``key/attempt``."""
    successes: Counter[str] = Counter()
    dispatches: Counter[str] = Counter()
    for e in history:
        b = e.body
        a.terminals += e.terminal
        if isinstance(b, ev.TaskSucceeded):
            successes[f"{a.restarts + 1}:{task_key(b.node, b.index)}"] += 1
        elif isinstance(b, ev.WorkflowRestarted):
            a.restarts += 1
        elif isinstance(b, ev.TaskDispatched):
            dispatches[f"{task_key(b.node, b.index)}/{b.attempt}"] += 1
        elif isinstance(b, ev.TaskStarted):
            a.started += 1
        elif isinstance(b, ev.ReportDiscarded):
            a.discarded += 1
        elif isinstance(b, ev.TaskFailed) and b.error_type in LOST_ERROR_TYPES:
            a.lost_attempts += 1
        elif isinstance(b, ev.WorkflowAccepted):
            a.definition = definition_ref(b.definition, b.definition_version)
            a.tenant = b.tenant
    return successes, dispatches


def _dispatched_paused(history: list[ev.HistoryEvent]) -> list[str]:
    """``key/attempt`` of each ``TaskDispatched`` recorded while the run was paused."""
    out, paused = [], False
    for e in history:
        b = e.body
        if isinstance(b, ev.WorkflowPaused | ev.WorkflowResumed):
            paused = isinstance(b, ev.WorkflowPaused)
        elif paused and isinstance(b, ev.TaskDispatched):
            out.append(f"{task_key(b.node, b.index)}/{b.attempt}")
    return out


def _fold(history: list[ev.HistoryEvent]) -> tuple[WorkflowState | None, str]:
    state: WorkflowState | None = None
    for e in history:
        try:
            state = evolve(state, e)
        except IllegalTransition as error:
            return state, f"seq {e.seq} ({e.type}): {error}"
    return state, ""


def outcome_of(state: WorkflowState) -> EndState:
    """The outcome of a folded state."""
    return EndState(state.status.value, {n: s.status.value for n, s in state.nodes.items()},
                   state.output, definition_ref(state.definition, state.definition_version))


def timeline(workflow_id: str, records: Iterable[Record]) -> list[str]:
    """One line per record of the workflow on the events topic, in log order: offset,
    seq, type and the fields that tell two bodies apart (evidence for a violation)."""
    out = []
    for r in records:
        e = r.value
        if isinstance(e, ev.HistoryEvent) and e.workflow_id == workflow_id:
            fields = {k: v for k, v in vars(e.body).items()
                      if k not in ("workflow_id", "spec", "input", "output", "checkpoint")}
            out.append(f"p{r.partition}@{r.offset} seq {e.seq} {e.type} {fields}")
    return out


def audit_events(records: Iterable[Record]) -> dict[str, WorkflowAudit]:
    """Audit every workflow found on the events topic."""
    per: dict[str, list[ev.HistoryEvent]] = defaultdict(list)
    for r in records:
        if isinstance(r.value, ev.HistoryEvent):
            per[r.value.workflow_id].append(r.value)
    return {wid: audit_history(wid, events) for wid, events in per.items()}


@dataclass
class Duplicates:
    """Records a consumer saw more than once, beyond the first (each absorbed, or a
    violation shows up in the history).

    Attributes:
        dispatch_records: dispatch records on ``tasks.<queue>`` and its lanes naming an
            attempt already sent.
        started_reports: ``TaskStarted`` reports for an attempt already started.
        outcome_reports: ``TaskSucceeded``/``TaskFailed`` reports for an attempt already
            reported.
        submissions: submission records for a workflow id already submitted.
        undecodable: records of these topics that did not decode.
    """

    dispatch_records: int = 0
    started_reports: int = 0
    outcome_reports: int = 0
    submissions: int = 0
    undecodable: int = 0


def count_duplicates(dispatches: Iterable[Record], reports: Iterable[Record],
                     submissions: Iterable[Record]) -> Duplicates:
    """Count the repeated records of the tasks, reports and submissions topics."""
    d = Duplicates()
    sent: Counter[str] = Counter()
    for r in dispatches:
        if isinstance(r.value, ev.TaskDispatched):
            sent[r.value.dispatch_id] += 1
        else:
            d.undecodable += 1
    started: Counter[tuple[str, str, int | None, int]] = Counter()
    outcomes: Counter[tuple[str, str, int | None, int]] = Counter()
    for r in reports:
        v = r.value
        if v is None:
            d.undecodable += 1
            continue
        key = (v.workflow_id, v.node, v.index, v.attempt)
        if isinstance(v, ev.TaskStarted):
            started[key] += 1
        elif isinstance(v, ev.TaskSucceeded | ev.TaskFailed):
            outcomes[key] += 1
    submitted: Counter[str] = Counter()
    for r in submissions:
        if r.value is None:
            d.undecodable += 1
        else:
            submitted[r.value.workflow_id] += 1
    d.dispatch_records = sum(n - 1 for n in sent.values())
    d.started_reports = sum(n - 1 for n in started.values())
    d.outcome_reports = sum(n - 1 for n in outcomes.values())
    d.submissions = sum(n - 1 for n in submitted.values())
    return d


def compare(expected: dict[str, EndState], got: dict[str, EndState | None]) -> list[str]:
    """Workflows whose outcome differs from the expected one, one line each."""
    out = []
    for wid, want in sorted(expected.items()):
        have = got.get(wid)
        if have is None:
            out.append(f"{wid}: no outcome (expected {want.status})")
            continue
        diffs = [name for name in ("status", "nodes", "output", "definition")
                 if getattr(want, name) != getattr(have, name)]
        if diffs:
            detail = "; ".join(f"{n}: expected {getattr(want, n)!r}, got {getattr(have, n)!r}"
                               for n in diffs)
            out.append(f"{wid}: {detail[:600]}")
    return out


def descendants(records: Iterable[Record], roots: set[str]) -> dict[str, str]:
    """The child workflows (at any depth) of ``roots``, by their ``ParentLinked``.

    Returns:
        Child workflow id -> its parent's id.
    """
    parent_of = {r.value.workflow_id: r.value.body.parent_id for r in records
                 if isinstance(r.value, ev.HistoryEvent)
                 and isinstance(r.value.body, ev.ParentLinked)}
    found: dict[str, str] = {}
    for child in parent_of:
        seen, up = {child}, parent_of[child]
        while up in parent_of and up not in seen:
            seen.add(up)
            up = parent_of[up]
        if up in roots:
            found[child] = parent_of[child]
    return found


def definition_faults(batch: Iterable[Submission], parent_of: Mapping[str, str],
                      audits: Mapping[str, WorkflowAudit]) -> list[str]:
    """Runs whose ``WorkflowAccepted`` records another definition and version than the
    batch meant them to run, one line each: a submission its ``runs`` (None: none, an
    inline spec), a child workflow of a submission that submission's ``children_run``.

    Args:
        batch: the submissions.
        parent_of: child workflow id -> its parent's id (``descendants``).
        audits: what the histories say (a workflow without one is reported elsewhere).
    """
    by_id = {s.id: s for s in batch}
    want = {**{wid: s.runs for wid, s in by_id.items()},
            **{c: by_id[p].children_run for c, p in parent_of.items() if p in by_id}}
    out = []
    for wid, expected in sorted(want.items()):
        audit = audits.get(wid)
        if audit is not None and audit.events and audit.definition != expected:
            out.append(f"{wid}: ran definition {audit.definition or 'none (inline spec)'}, "
                       f"expected {expected or 'none (inline spec)'}")
    return out
