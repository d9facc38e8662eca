"""What a fault-injection run found (``RunReport``), and the checks that fill it once the
batch has ended: every history audited against the invariants, each outcome compared
with the fault-free run's and with the projection, the duplicates counted, and the
processes' deaths matched with the faults that were meant to fire.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from faultsuite import audit as au
from faultsuite import limits
from faultsuite.batch import Submission
from faultsuite.caches import cache_faults
from faultsuite.client import SubmitLog, projected
from faultsuite.code import code_figures, replay_differences
from faultsuite.rebalance import QUEUE
from faultsuite.schedule import ScheduleRun, set_apart
from faultsuite.supervisor import Supervisor
from faultsuite.topics import Record, read_all, read_dispatches
from headwater.topics import Topics
from ops.sandbox import Sandbox

LIMITER_SETTLE_S = 15.0
"""How long the limiters have to apply the releases of the runs' ends, seconds."""


@dataclass
class RunReport:
    """Everything one run measured and every check it failed.

    Attributes:
        plan: the plan's name.
        violations: broken invariants and failed comparisons, one line each (the goal:
            none).
        figures: counts (see ``check`` and ``figures``).
        audits: per workflow, what its history says.
        deaths: ``service: cause`` of each process that died.
        steps: the rebalance steps, if any.
        evidence: the events-topic timeline of each workflow whose history is unsound.
        logs: the processes' log tails when there were violations.
    """

    plan: str
    violations: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    audits: dict[str, au.WorkflowAudit] = field(default_factory=dict)
    deaths: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, list[str]] = field(default_factory=dict)
    logs: str = ""

    def outcomes(self) -> dict[str, au.EndState]:
        """Each workflow's outcome as its history folds (for a baseline)."""
        return {wid: a.outcome for wid, a in self.audits.items() if a.outcome is not None}

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the JSON summary (without per-workflow audits and logs)."""
        return {"plan": self.plan, "violations": self.violations, "figures": self.figures,
                "deaths": self.deaths, "rebalance_steps": self.steps}


async def check(batch: Sequence[Submission], sandbox: Sandbox,
                 answered: tuple[SubmitLog, ScheduleRun],
                 expected: Mapping[str, au.EndState] | None, report: RunReport,
                 filled: Mapping[str, au.EndState] | None = None) -> None:
    """Audit every history, compare the outcomes and fill ``report``.

    Args:
        batch: the workflows submitted over HTTP.
        sandbox: the run's deployment.
        answered: the batch's HTTP answers and the schedule beside it.
        expected: each workflow's outcome in a fault-free run (None: compare nothing).
        report: filled with the figures and violations.
        filled: workflows produced straight to Kafka before the batch (a large table,
            ``large_table``) with the outcome each must reach: audited, counted and
            compared like the batch's.
    """
    submitted, schedule = answered
    filled = filled or {}
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    topics = sandbox.topics
    events = await read_all(bootstrap, topics.events)
    dupes = await _duplicates(bootstrap, topics, report)
    audits, found = set_apart(schedule.workflow_id, events,
                              limits.set_apart(au.audit_events(events)))
    report.audits = audits
    await _limiters(bootstrap, topics, events, report)
    if found is not None:  # the schedule's own checks and figures, not compared
        report.violations += found.violations
        report.evidence.update(found.evidence)
        report.figures["schedule"] = {**found.figures(), "http": schedule.answers}
    ids = [s.id for s in batch] + list(filled)
    parent_of = au.descendants(events, set(ids))
    _check_histories(ids, sorted(parent_of), events, report)
    report.violations += au.definition_faults(batch, parent_of, audits)
    outcomes = {wid: audits[wid].outcome for wid in [*ids, *sorted(parent_of)]
                if wid in audits}
    mismatched = au.compare({**(expected or {}), **filled}, outcomes) \
        if expected is not None or filled else []
    report.violations += [f"differs from the fault-free run: {m}" for m in mismatched]
    shown, behind = await projected(sandbox.gateway, {w: audits[w].events for w in outcomes})
    report.violations += behind
    report.violations += [f"projection differs from the history: {m}" for m in au.compare(
        {w: o for w, o in outcomes.items() if o is not None and shown.get(w) is not None},
        {w: o for w, o in shown.items()})]
    await _check_code(batch, parent_of, events, sandbox, report)
    mine = [audits[w] for w in ids if w in audits]
    report.figures.update({
        "workflows": len(ids),
        "filled_workflows": len(filled),
        "child_workflows": len(parent_of),
        **_figures(mine, dupes, submitted),
        "lost": {
            "submissions": sum(1 for w in ids if w not in audits),
            "stuck": sum(1 for a in mine if a.terminals == 0),
            "mismatched": len(mismatched),
        },
        "statuses": _count(o.status for o in outcomes.values() if o is not None),
        "definitions_run": _count(o.definition for o in outcomes.values()
                                  if o is not None and o.definition is not None),
    })


async def _duplicates(bootstrap: str, topics: Topics, report: RunReport) -> au.Duplicates:
    """The repeated records of the queue's dispatch topics (``tasks.<queue>`` and its
    lanes), of the reports and of the submissions; the dispatch records of each of the
    queue's topics go in the figures (``dispatch_records``)."""
    dispatches = await read_dispatches(bootstrap, topics, QUEUE)
    report.figures["dispatch_records"] = {
        "queue": len(dispatches.get(topics.tasks(QUEUE), [])),
        "lanes": {t[len(topics.lane_head(QUEUE)):]: len(rs) for t, rs in dispatches.items()
                  if t != topics.tasks(QUEUE)}}
    return au.count_duplicates([r for rs in dispatches.values() for r in rs],
                               await read_all(bootstrap, topics.reports),
                               await read_all(bootstrap, topics.submissions))


async def _check_code(batch: Sequence[Submission], parent_of: Mapping[str, str],
                      events: Sequence[Record], sandbox: Sandbox, report: RunReport) -> None:
    """``headwater replay`` of every code run and its children (their histories,
    tables and projections agree: ``code.replay_differences``), and their figures."""
    runs = {s.id for s in batch if s.shape == "code"}
    runs |= {c for c, p in parent_of.items() if p in runs}
    replayed, differences = await replay_differences(sandbox, runs)
    report.violations += differences
    report.figures["code"] = {**code_figures(events, runs), "replayed": replayed,
                              "replay_differences": len(differences)}


async def _limiters(bootstrap: str, topics: Topics, events: Sequence[Record],
                    report: RunReport) -> None:
    """The limiters' and the caches' faults and figures (``limits``, ``caches``) into
    ``report``. A limiter (a cache) applies a run's last release after the run's end:
    while a permit, a request or a lookup looks left behind, the events are read again,
    for up to ``LIMITER_SETTLE_S``."""
    found = limits.limiter_faults(events)
    cached = cache_faults(events)
    deadline = time.monotonic() + LIMITER_SETTLE_S
    while (any(limits.LEFT_BEHIND in f for f in found[0] + cached[0])
           and time.monotonic() < deadline):
        await asyncio.sleep(0.5)
        events = await read_all(bootstrap, topics.events)
        found, cached = limits.limiter_faults(events), cache_faults(events)
    report.violations += found[0] + cached[0]
    report.figures["limits"] = found[1]
    report.figures["caches"] = cached[1]


def _check_histories(ids: Sequence[str], children: Sequence[str], events: Sequence[Record],
                     report: RunReport) -> None:
    """The invariants of each submitted workflow's history and of each child's, and no
    history of a workflow never submitted (``report.audits`` holds the audits)."""
    audits = report.audits
    for wid in ids:
        broken = audits[wid].violations() if wid in audits else [
            f"{wid}: submitted but no history (lost)"]
        report.violations += broken
        if broken and wid in audits:
            report.evidence[wid] = au.timeline(wid, events)
    for wid in children:
        report.violations += audits[wid].violations() if wid in audits else []
    stray = sorted(set(audits) - set(ids) - set(children))
    if stray:
        report.violations.append(f"histories of workflows never submitted: {stray[:10]}")


def _figures(mine: Sequence[au.WorkflowAudit], dupes: au.Duplicates,
             submitted: SubmitLog) -> dict[str, Any]:
    """The figures of the submitted workflows' histories, the duplicates on the other
    topics and the submissions' HTTP answers."""
    return {
        "tasks": sum(a.tasks for a in mine),
        "attempts_dispatched": sum(a.dispatched for a in mine),
        "attempts_started": sum(a.started for a in mine),
        "attempts_lost_to_faults": sum(a.lost_attempts for a in mine),
        "runs_restarted": sum(a.restarts for a in mine),
        "duplicates": {
            "events_identical": sum(a.duplicates for a in mine),
            "reports_discarded": sum(a.discarded for a in mine),
            "dispatch_records": dupes.dispatch_records,
            "started_reports": dupes.started_reports,
            "outcome_reports": dupes.outcome_reports,
            "submission_records": dupes.submissions,
            "http_same_run_after_connection_error": submitted.same_run_after_error(),
        },
        "http": {"statuses": submitted.statuses(),
                 "connection_errors": submitted.connection_errors(),
                 "created_after_connection_error": submitted.created_after_error(),
                 "sent_again_after_connection_error": submitted.retried()},
        "undecodable_records": dupes.undecodable,
    }


def check_deaths(expect: Sequence[str], outage: bool, supervisor: Supervisor,
                 report: RunReport) -> None:
    """Deaths as violations and figures: ``kills`` (by cause, with those the run's
    scripts made), ``restarts`` (by the supervisor, per service kind), ``exits``
    (unexpected ones, per service kind: a violation, except under an infrastructure
    fault (``outage``), where a process that gives up and is restarted is allowed and counted)."""
    deaths = supervisor.deaths()
    causes = [life.cause for life in deaths]
    exits = [life for life in deaths if life.cause == "unexpected exit"]
    if not outage:
        report.violations += [f"{life.service} (pid {life.pid}) exited unexpectedly"
                              for life in exits]
    for want in expect:
        if not any(c.startswith(want) for c in causes):
            report.violations.append(f"the fault never fired: no death by {want!r} "
                                     f"(deaths: {causes or 'none'})")
    kills = _count(c.split(" (hit")[0] for c in causes if c != "unexpected exit")
    for cause, n in report.figures.get("kills", {}).items():
        kills[cause] = kills.get(cause, 0) + n
    report.figures["kills"] = kills
    report.figures["restarts"] = _count(life.service.split("-", 1)[0] for life in deaths)
    report.figures["exits"] = _count(life.service.split("-", 1)[0] for life in exits)
    _restarts_in_place(supervisor, report)


def _restarts_in_place(supervisor: Supervisor, report: RunReport) -> None:
    in_place = [r for life in supervisor.lives for r in life.restarts_in_place]
    report.figures["restarts_in_place"] = len(in_place)
    report.figures["restart_in_place_reasons"] = _count(
        r.split(" ", 2)[2].split(" (")[0] for r in in_place)
    report.figures["restarts_in_place_at"] = sorted(r.split(" (")[0] for r in in_place)


def _count(values: Iterable[Any]) -> dict[str, int]:
    return dict(Counter(values))
