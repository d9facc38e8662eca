"""One run: a batch on a fresh sandbox while faults are injected, then every check.

    batch = make_batch("b", 7)
    expected = run(Plan("baseline"), batch).outcomes()
    report = run(Plan("coordinator.after_publish", faults="coordinator.after_publish=5",
                      expect=("fault coordinator.after_publish",)), batch, expected)
    assert report.violations == [], report.violations

The sandbox's processes start with ``plan.faults`` in ``HEADWATER_FAULTS`` (each process
reacts to its own points only); the supervisor restarts whatever dies, armed with the
plan's ``schedule``. A plan with an ``outage`` runs on a private broker and database
(``infra``) that the outage takes away mid-batch and gives back (``outage``). After
every workflow is terminal and the coordinators have committed every input, the topics
are read whole and audited (``audit``). The batch is submitted once the gateway knows
a live worker (``wait_for_workers``); a worker killed or restarted meanwhile does not
get its tasks refused (``HEADWATER_UNSERVED_AFTER_S``). The definitions the batch runs
are registered before it is submitted (``client.register``), and each run must record
the definition and version its submission meant (``audit.definition_faults``). A
schedule fires beside the batch until the batch has ended (``schedule``): audited on its
own, its figures reported, it is not compared with the fault-free run. With ``auth``, auth
is on and the runs are a tenant's (``auth``, which says what is checked then).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultsuite import audit as au
from faultsuite.auth import RunAuth, audit_auth, run_auth, sandbox_env
from faultsuite.batch import Submission, needed
from faultsuite.client import SubmitLog, projected, register, submit_batch
from faultsuite.infra import PrivateInfra, private_infra
from faultsuite.outage import Outage
from faultsuite.rebalance import QUEUE, TASKS, Rebalance
from faultsuite.schedule import ScheduleRun, set_apart, with_run_definition
from faultsuite.scripts import Progress, SideScripts
from faultsuite.supervisor import FAULTS_ENV, Supervisor
from faultsuite.topics import Record, read_all, uncommitted
from headwater.core import events as ev
from load.deploy import wait_idle
from load.kafka_io import Seen, Tail
from ops.cli.queues import wait_for_workers
from ops.sandbox import Sandbox, home_kept, start_sandbox, stop_sandbox
from tests.polling import WaitTimeout, scaled, wait_until_async

REPO = Path(__file__).resolve().parents[1]
E2E_DIR = REPO / "tests" / "e2e"
LOG_TAIL_CHARS = 3000


@dataclass(frozen=True)
class Plan:
    """What to inject in one run.

    Attributes:
        name: what the run is called in reports (e.g. the fault point).
        faults: ``HEADWATER_FAULTS`` of every process's first life.
        schedule: per service kind, ``HEADWATER_FAULTS`` of its later lives (see
            ``Supervisor``); none after the last.
        worker_kills: SIGKILLs sent from outside to a worker running attempts.
        kill_gap_s: the least time between two of those, seconds.
        workers: worker processes.
        rebalance: a scaling script to run during the batch, or None.
        expect: causes of death that must each be seen at least once (a prefix such as
            ``"fault coordinator.after_publish"`` or ``"external SIGKILL"``), so that a
            fault that never fired fails the run rather than passing it vacuously.
        submit_gap_s: seconds between two submissions (spreads the batch in time).
        outage: an infrastructure fault (the broker or PostgreSQL lost mid-batch), or
            None; the run then gets a private broker and database (``infra``), and a
            process that exits meanwhile is restarted and counted, not a violation.
        timeout_s: the longest wait for every workflow to be terminal, seconds (scaled by
            ``HEADWATER_TEST_TIME_SCALE``, like every wait of the harness: see
            ``tests/polling.py``).
    """

    name: str
    faults: str = ""
    schedule: Mapping[str, Sequence[str]] = field(default_factory=dict)
    worker_kills: int = 0
    kill_gap_s: float = 3.0
    workers: int = 1
    rebalance: Rebalance | None = None
    expect: tuple[str, ...] = ()
    submit_gap_s: float = 0.05
    outage: Outage | None = None
    timeout_s: float = 240.0


@dataclass
class RunReport:
    """Everything one run measured and every check it failed.

    Attributes:
        plan: the plan's name.
        violations: broken invariants and failed comparisons, one line each (the goal:
            none).
        figures: counts (see ``figures`` in ``run``).
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


def run(plan: Plan, batch: Sequence[Submission],
        expected: Mapping[str, au.EndState] | None = None,
        keep_logs: Path | None = None, auth: bool = False) -> RunReport:
    """Run ``batch`` on a fresh sandbox under ``plan``; check it, compare each workflow's
    outcome with ``expected`` (a fault-free run's), and stop and drop the sandbox.

    Args:
        plan: what to inject.
        batch: the workflows.
        expected: each workflow's outcome in a fault-free run (None: compare nothing).
        keep_logs: a directory to copy the processes' whole logs into (a subdirectory
            per run), or None.
        auth: run with auth on, as tenant ``auth.TENANT`` (``auth.run_auth``).
    """
    home = Path(tempfile.mkdtemp(prefix=f"hw-faults-{plan.name.replace('.', '-')}-"))
    report = RunReport(plan.name)
    began = time.monotonic()
    with home_kept(), run_auth(home, auth) as keys, contextlib.ExitStack() as own:
        infra = None
        try:
            if plan.outage is not None:
                infra = own.enter_context(private_infra(plan.name.replace(".", "-")))
                own.enter_context(infra.pointed_at())
        except RuntimeError as e:
            report.violations.append(f"the private broker and database did not start: {e}")
        else:
            _on_sandbox(_Run(plan, batch, expected, report, keys), home, infra, keep_logs)
    shutil.rmtree(home, ignore_errors=True)
    report.figures["duration_s"] = round(time.monotonic() - began, 1)
    return report


@dataclass(frozen=True)
class _Run:
    """What one run is given, and its report."""

    plan: Plan
    batch: Sequence[Submission]
    expected: Mapping[str, au.EndState] | None
    report: RunReport
    auth: RunAuth | None = None


def _on_sandbox(r: _Run, home: Path, infra: PrivateInfra | None,
                keep_logs: Path | None) -> None:
    """Start the sandbox (on ``infra`` when given), drive the run, stop it again."""
    plan, report = r.plan, r.report
    try:
        sandbox = start_sandbox(home, TASKS, plan.workers, QUEUE, pythonpath=[str(E2E_DIR)],
                                extra_env={FAULTS_ENV: plan.faults, **sandbox_env(r.auth)})
    except RuntimeError as e:
        report.violations.append(f"the sandbox did not start: {e}")
        return
    supervisor = Supervisor(sandbox, plan.schedule)
    try:
        asyncio.run(_drive(r, sandbox, supervisor, infra))
    except Exception as e:  # the run could not finish: that is a finding too
        report.violations.append(f"run aborted: {type(e).__name__}: {e}")
    finally:
        supervisor.close()
        report.deaths = [f"{life.service}: {life.cause}" for life in supervisor.deaths()]
        _check_deaths(plan, supervisor, report)
        if report.violations:
            report.logs = sandbox.logs(LOG_TAIL_CHARS) + (
                "\n" + infra.logs(LOG_TAIL_CHARS) if infra is not None else "")
        # A private broker and database are deleted whole: nothing to drop.
        stop_sandbox(sandbox, drop=infra is None)
        if keep_logs is not None:
            shutil.copytree(home / "logs", keep_logs / home.name, dirs_exist_ok=True)
            if infra is not None:
                shutil.copytree(infra.home / "kafka" / "logs",
                                keep_logs / home.name / "broker", dirs_exist_ok=True)


async def _drive(r: _Run, sandbox: Sandbox, supervisor: Supervisor,
                 infra: PrivateInfra | None) -> None:
    plan, batch, report = r.plan, r.batch, r.report
    # The gateway refuses (400, final here) a task no live worker serves: the batch waits
    # until the sandbox's workers announced themselves, before any fault is injected.
    await asyncio.to_thread(wait_for_workers, sandbox.gateway, QUEUE, scaled(60))
    registered = await register(sandbox.gateway, with_run_definition(needed(batch)))
    report.violations += registered.errors
    report.figures["definitions"] = registered.figures()
    progress = Progress({s.id for s in batch})
    schedule = ScheduleRun(sandbox.gateway)

    def on_event(seen: Seen) -> None:
        progress.on_event(seen)
        schedule.on_event(seen)

    tail = Tail(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"], sandbox.topics.events,
                on_record=on_event)
    await tail.start()
    await schedule.put()  # fires beside the batch until deleted once it has ended
    side = await SideScripts.start(sandbox, supervisor, progress, plan, infra,
                                   [s.id for s in batch])
    began = time.monotonic()
    try:
        submitted = await submit_batch(sandbox.gateway, batch, gap_s=plan.submit_gap_s)
        report.violations += submitted.errors
        with contextlib.suppress(TimeoutError):  # listed below, with their last events
            await tail.wait_until(progress.done, scaled(plan.timeout_s),
                                  "every workflow terminal")
        report.figures["batch_s"] = round(time.monotonic() - began, 1)
        await side.finish()
        await schedule.delete_and_wait(tail.wait_until, 120.0)
    finally:
        await side.stop()
        await tail.stop()
    report.violations += _stuck(progress.ids - progress.terminal, tail) + schedule.errors
    await _settle(sandbox, supervisor, report)
    await _check(batch, sandbox, (submitted, schedule), r.expected, report)
    figures, violations = await audit_auth(sandbox, r.auth, report.audits)
    report.figures.update(figures)
    report.violations += violations
    figures, report.steps, violations = side.report()
    report.figures.update(figures)
    report.violations += violations


def _stuck(ids: set[str], tail: Tail) -> list[str]:
    last: dict[str, ev.HistoryEvent] = {}
    for seen in tail.records:
        if seen.value.workflow_id in ids:
            last[seen.value.workflow_id] = seen.value
    return [f"{wid}: not terminal (stuck); last event: "
            f"{last[wid].seq} {last[wid].type}" if wid in last else f"{wid}: no event at all"
            for wid in sorted(ids)]


async def _settle(sandbox: Sandbox, supervisor: Supervisor, report: RunReport) -> None:
    """Wait for the restarts to be done and the coordinators to have committed every
    input: no replay can add records to what is read next."""
    with contextlib.suppress(WaitTimeout):  # the idle check follows either way
        await wait_until_async(supervisor.all_running, 60, "every supervised service running",
                               interval_s=0.2)
    try:
        await wait_idle(sandbox, timeout_s=scaled(120))
    except TimeoutError as e:
        behind = await uncommitted(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"],
                                   sandbox.topics.coordinator_app_id, sandbox.topics.inputs)
        report.violations.append(f"not idle after the batch: {e}: {'; '.join(behind)}")


async def _check(batch: Sequence[Submission], sandbox: Sandbox,
                 answered: tuple[SubmitLog, ScheduleRun],
                 expected: Mapping[str, au.EndState] | None, report: RunReport) -> None:
    submitted, schedule = answered
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    topics = sandbox.topics
    events = await read_all(bootstrap, topics.events)
    dupes = au.count_duplicates(await read_all(bootstrap, topics.tasks(QUEUE)),
                                await read_all(bootstrap, topics.reports),
                                await read_all(bootstrap, topics.submissions))
    audits, found = set_apart(schedule.workflow_id, events, au.audit_events(events))
    report.audits = audits
    if found is not None:  # the schedule's own checks and figures, not compared
        report.violations += found.violations
        report.evidence.update(found.evidence)
        report.figures["schedule"] = {**found.figures(), "http": schedule.answers}
    ids = [s.id for s in batch]
    parent_of = au.descendants(events, set(ids))
    _check_histories(ids, sorted(parent_of), events, report)
    report.violations += au.definition_faults(batch, parent_of, audits)
    outcomes = {wid: audits[wid].outcome for wid in [*ids, *sorted(parent_of)]
                if wid in audits}
    mismatched = au.compare(dict(expected), outcomes) if expected is not None else []
    report.violations += [f"differs from the fault-free run: {m}" for m in mismatched]
    shown, behind = await projected(sandbox.gateway, {w: audits[w].events for w in outcomes})
    report.violations += behind
    report.violations += [f"projection differs from the history: {m}" for m in au.compare(
        {w: o for w, o in outcomes.items() if o is not None and shown.get(w) is not None},
        {w: o for w, o in shown.items()})]
    mine = [audits[w] for w in ids if w in audits]
    report.figures.update({
        "workflows": len(ids),
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


def _check_histories(ids: Sequence[str], children: Sequence[str], events: Sequence[Record],
                     report: RunReport) -> None:
    """The invariants of each submitted workflow's history and of each child's, and no
    history of a workflow never submitted (``report.audits`` holds the audits)."""
    audits = report.audits
    for wid in ids:
        broken = audits[wid].violations() if wid in audits else [
            f"{wid}: accepted over HTTP but no history (lost)"]
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


def _check_deaths(plan: Plan, supervisor: Supervisor, report: RunReport) -> None:
    """Deaths as violations and figures: ``kills`` (by cause, with those the run's
    scripts made), ``restarts`` (by the supervisor, per service kind), ``exits``
    (unexpected ones, per service kind: a violation, except under an infrastructure
    fault, where a process that gives up and is restarted is allowed and counted)."""
    deaths = supervisor.deaths()
    causes = [life.cause for life in deaths]
    exits = [life for life in deaths if life.cause == "unexpected exit"]
    if plan.outage is None:
        report.violations += [f"{life.service} (pid {life.pid}) exited unexpectedly"
                              for life in exits]
    for want in plan.expect:
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
