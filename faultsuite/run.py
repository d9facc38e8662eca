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
is on and the runs are a tenant's (``auth``, which says what is checked then). A plan
with a ``table`` fills the coordinator's table before the batch, loses its local store
at each restart, and signals the waiting workflows it filled once the batch has ended
(``large_table``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from faultsuite import audit as au
from faultsuite import bulk
from faultsuite.auth import RunAuth, audit_auth, client_headers, run_auth, sandbox_env
from faultsuite.batch import Submission, needed
from faultsuite.bulk import BulkCancel, bulk_cancel
from faultsuite.client import register, submit_batch
from faultsuite.code import kills_during_code
from faultsuite.infra import PrivateInfra, private_infra
from faultsuite.large_table import LargeTable, TableRun, store_env
from faultsuite.outage import Outage
from faultsuite.rebalance import QUEUE, TASKS, Rebalance
from faultsuite.schedule import ScheduleRun, with_run_definition
from faultsuite.scripts import Progress, SideScripts
from faultsuite.supervisor import FAULTS_ENV, Supervisor
from faultsuite.topics import read_all, uncommitted
from faultsuite.verdict import RunReport, check, check_deaths
from headwater.core import events as ev
from load.deploy import wait_idle
from load.kafka_io import Seen, Tail
from ops.cli.queues import wait_for_workers
from ops.localstack import Service
from ops.sandbox import (
    Sandbox,
    empty_sandbox,
    home_kept,
    start_sandbox,
    start_services,
    stop_sandbox,
)
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
        table: a large table filled before the batch, its coordinator SIGKILLed and its
            local store lost at each restart (``large_table``), or None.
        serve: the deployment is one ``headwater serve`` process (the gateway, a
            coordinator, the projector and the workers in one) instead of a process per
            service; ``worker_kills`` then SIGKILL it whole.
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
    table: LargeTable | None = None
    serve: bool = False


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
        env = {FAULTS_ENV: plan.faults, "HEADWATER_OPERATIONS_LEASE_S": str(bulk.LEASE_S),
               **sandbox_env(r.auth), **store_env()}
        sandbox = start_services(empty_sandbox(home, [str(E2E_DIR)], env),
                                 [serve_service()]) if plan.serve else start_sandbox(
            home, TASKS, plan.workers, QUEUE, pythonpath=[str(E2E_DIR)], extra_env=env)
    except RuntimeError as e:
        report.violations.append(f"the sandbox did not start: {e}")
        return
    supervisor = Supervisor(sandbox, plan.schedule,
                            lose_store=("coordinator",) if plan.table is not None else ())
    try:
        asyncio.run(_drive(r, sandbox, supervisor, infra))
    except Exception as e:  # the run could not finish: that is a finding too
        report.violations.append(f"run aborted: {type(e).__name__}: {e}")
    finally:
        supervisor.close()
        report.deaths = [f"{life.service}: {life.cause}" for life in supervisor.deaths()]
        check_deaths(plan.expect, plan.outage is not None, supervisor, report)
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


def serve_service() -> Service:
    """``headwater serve`` of the suite's queue and tasks, as one supervised process."""
    tasks = tuple(arg for module in TASKS for arg in ("--tasks", module))
    return Service("serve", (sys.executable, "-m", "services.serve", "--queue", QUEUE,
                             *tasks))


async def _prepare(r: _Run, sandbox: Sandbox) -> TableRun | None:
    """Before any fault: wait for the workers, register the definitions, fill the large
    table if the plan has one (returned)."""
    # The gateway refuses (400, final here) a task no live worker serves: the batch waits
    # until the sandbox's workers announced themselves, before any fault is injected.
    await asyncio.to_thread(wait_for_workers, sandbox.gateway, QUEUE, scaled(60))
    registered = await register(sandbox.gateway, with_run_definition(needed(r.batch)))
    r.report.violations += registered.errors
    r.report.figures["definitions"] = registered.figures()
    return await TableRun.fill(sandbox, r.plan.table) if r.plan.table is not None else None


async def _drive(r: _Run, sandbox: Sandbox, supervisor: Supervisor,
                 infra: PrivateInfra | None) -> None:
    plan, batch, report = r.plan, r.batch, r.report
    table = await _prepare(r, sandbox)
    progress = Progress({s.id for s in batch})
    schedule = ScheduleRun(sandbox.gateway)

    def on_event(seen: Seen) -> None:
        progress.on_event(seen)
        schedule.on_event(seen)
        if table is not None:
            table.on_event(seen)

    tail = Tail(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"], sandbox.topics.events,
                on_record=on_event)
    await tail.start()
    await schedule.put()  # fires beside the batch until deleted once it has ended
    side = await SideScripts.start(sandbox, supervisor, progress, plan, infra,
                                   [s.id for s in batch])
    began = time.monotonic()
    cancel = bulk_cancel(sandbox.gateway, batch, client_headers())
    cancelling = asyncio.create_task(cancel.run())
    try:
        submitted = await submit_batch(sandbox.gateway, batch, gap_s=plan.submit_gap_s)
        report.violations += submitted.errors
        with contextlib.suppress(TimeoutError):  # listed below, with their last events
            await tail.wait_until(progress.done, scaled(plan.timeout_s),
                                  "every workflow terminal")
        report.figures["batch_s"] = round(time.monotonic() - began, 1)
        await cancelling
        await side.finish()
        if table is not None:
            report.violations += await table.signal_and_wait(sandbox.gateway, tail)
        await schedule.delete_and_wait(tail.wait_until, 120.0)
    finally:
        cancelling.cancel()
        await side.stop()
        await tail.stop()
    unfinished = table.unfinished() if table is not None else set()
    report.violations += _stuck((progress.ids - progress.terminal) | unfinished, tail) \
        + schedule.errors
    await _settle(sandbox, supervisor, report)
    await check(batch, sandbox, (submitted, schedule), r.expected, report,
                table.expected() if table is not None else {})
    await _audit_bulk(cancel, sandbox, report)
    await _report_more(r, sandbox, supervisor, table, tail, side)


async def _report_more(r: _Run, sandbox: Sandbox, supervisor: Supervisor,
                       table: TableRun | None, tail: Tail, side: SideScripts) -> None:
    """What the run's report gets beside the checks of every history: the large table's
    recoveries, the kills that came while code runs were in flight, the tenants' audit
    (auth on) and the side scripts' figures and findings."""
    report = r.report
    if table is not None:
        report.figures["table"] = table.report(
            supervisor, (seen.timestamp_ms for seen in tail.records), side.coordinator_kill)
    report.figures["kills_during_code"] = kills_during_code(
        (s.id for s in r.batch if s.shape == "code"), tail.records, supervisor.deaths())
    figures, violations = await audit_auth(sandbox, r.auth, report.audits)
    report.figures.update(figures)
    report.violations += violations
    figures, report.steps, violations = side.report()
    report.figures.update(figures)
    report.violations += violations


async def _audit_bulk(cancel: BulkCancel, sandbox: Sandbox, report: RunReport) -> None:
    """The bulk cancel's audit (``faultsuite.bulk``), on the topics read whole."""
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    figures, violations = cancel.audit(await read_all(bootstrap, sandbox.topics.events),
                                       await read_all(bootstrap, sandbox.topics.control))
    report.figures["bulk"] = figures
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
