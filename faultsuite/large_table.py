"""The large-table scenario: the coordinator SIGKILLed with many workflows in its table,
and its local store lost at each restart.

Before the batch, the table is filled through the real coordinator (``load.table``):
``finished`` workflows that ended at once, and ``waiting`` ones that wait for the signal
``SIGNAL``, so that a restarted coordinator has a table of real size to recover. Then
the batch runs; once it has recorded ``kill_after_events`` history events the
coordinator is SIGKILLed from outside (``CoordinatorKill``), and each later process is
armed with the next of the plan's schedule (fault points: ``suite.large_table_plan``).
Before each
restart the supervisor deletes the coordinator's data directory (``Supervisor``'s
``lose_store``): the process rebuilds its table from the changelog alone, whatever its
store (``HEADWATER_TABLE_STORE``, passed on to the sandbox when it is set: ``STORE_ENV``).

Once the batch has ended (the restarts done), every waiting workflow is signalled over
HTTP and must succeed with the signal's fields as its output; the verdict audits the
filled workflows with the batch's (``expected``: lost, stuck, the invariants, the
projection). The figures (``TableRun.report``) say how big the table was and, per
restart, how long the coordinators' group took to form again and the new process to
record its first history event after the old one was found dead (``recovery``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from faultsuite.audit import EndState
from faultsuite.batch import Signal
from faultsuite.client import signal_all
from faultsuite.recovery import GroupWatch
from faultsuite.recovery import figures as recovery_figures
from faultsuite.supervisor import Supervisor
from load import workloads
from load.kafka_io import Seen, Tail
from load.table import Fill, Kinds, changelog_size
from ops.sandbox import Sandbox

SIGNAL = "resume"
"""The signal the waiting workflows wait for."""
SIGNAL_FIELDS: dict[str, object] = {}
"""Its fields: a waiting workflow's output is ``{"w": SIGNAL_FIELDS}``."""
KINDS = Kinds("ft-done", "ft-wait", workloads.skipped("fault-table-done"),
              workloads.waiting("fault-table-wait", SIGNAL))
"""What the table is filled with (ids ``bench-ft-done-<hex>`` and ``bench-ft-wait-<hex>``)."""
FINISHED_END = EndState("succeeded", {"a": "skipped"}, {"a": None})
"""How a finished workflow of the fill ended (its one task skipped)."""
WAITING_END = EndState("succeeded", {"w": "succeeded"}, {"w": SIGNAL_FIELDS})
"""How a waiting workflow of the fill must end once signalled."""
STORE_ENV = "HEADWATER_TABLE_STORE"
"""The coordinator's table store setting, passed on from the suite's environment."""


@dataclass(frozen=True)
class LargeTable:
    """The scenario's settings.

    Attributes:
        finished: finished workflows filled before the batch.
        waiting: workflows filled before the batch that wait for ``SIGNAL``.
        kill_after_events: the batch's history events recorded before the SIGKILL.
        window: submissions in flight at once while filling.
        timeout_s: the longest the fill, or the waiting workflows' ends after their
            signals, may take, seconds.
    """

    finished: int = 5000
    waiting: int = 200
    kill_after_events: int = 60
    window: int = 1000
    timeout_s: float = 300.0


def store_env() -> dict[str, str]:
    """``{STORE_ENV: <its value>}`` when the suite's environment sets it, else ``{}``
    (the coordinator's default, ``rocksdb://``)."""
    value = os.environ.get(STORE_ENV, "")
    return {STORE_ENV: value} if value else {}


def expected(finished: Iterable[str], waiting: Iterable[str]) -> dict[str, EndState]:
    """The outcome each filled workflow must reach."""
    return {**dict.fromkeys(finished, FINISHED_END), **dict.fromkeys(waiting, WAITING_END)}


@dataclass
class CoordinatorKill:
    """SIGKILLs the coordinator once the batch has recorded ``after_events`` events.

    Attributes:
        supervisor: owns the coordinator (kills by pid, restarts it).
        events: the batch's history events so far.
        after_events: when to kill.
        ended: whether the batch has ended (then it gives up: the run's ``expect``
            reports a kill that never came).
        killed_at_events: the events count at the kill (None: not yet).
    """

    supervisor: Supervisor
    events: Callable[[], int]
    after_events: int
    ended: Callable[[], bool]
    killed_at_events: int | None = None

    async def run(self) -> None:
        """Wait for the moment, then kill a live coordinator by pid."""
        while self.killed_at_events is None and not self.ended():
            await asyncio.sleep(0.05)
            if self.events() < self.after_events:
                continue
            for name in self.supervisor.pids("coordinator").values():
                if self.supervisor.kill(name) is not None:
                    self.killed_at_events = self.events()
                    break


@dataclass
class TableRun:
    """One run's large table: filled, followed, signalled, reported.

    Attributes:
        plan: the settings.
        finished: the finished workflows' ids.
        waiting: the waiting workflows' ids.
        ended: those of ``waiting`` whose terminal event was seen.
        figures: what the fill measured.
    """

    plan: LargeTable
    finished: list[str]
    waiting: list[str]
    ended: set[str] = field(default_factory=set)
    figures: dict[str, Any] = field(default_factory=dict)
    watch: GroupWatch | None = None
    _waiting: frozenset[str] = field(init=False, repr=False)

    @classmethod
    async def fill(cls, sandbox: Sandbox, plan: LargeTable) -> TableRun:
        """Fill the table (waiting first, then finished), measure its changelog, and
        start watching the coordinators' group (until ``signal_and_wait`` has ended).

        Raises:
            TimeoutError: the fill did not end within ``plan.timeout_s`` each.
            RuntimeError: a filled workflow was dispatched or ended otherwise.
        """
        began = time.monotonic()
        fill = Fill(sandbox, KINDS, plan.window)
        await fill.add_waiting(plan.waiting, plan.timeout_s)
        await fill.add_finished(plan.finished, plan.timeout_s)
        records, held = await changelog_size(sandbox, plan.timeout_s)
        table = cls(plan, fill.ids[KINDS.finished], fill.ids[KINDS.waiting])
        table.figures = {
            "finished": plan.finished, "waiting": plan.waiting,
            "store": sandbox.env.get(STORE_ENV, "rocksdb:// (default)"),
            "fill_s": round(time.monotonic() - began, 1),
            "fill_per_s": round(fill.rate_per_s()),
            "changelog_records": records, "changelog_bytes": held}
        table.watch = GroupWatch(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"],
                                 sandbox.topics.coordinator_app_id)
        table.watch.start()
        return table

    def __post_init__(self) -> None:
        self._waiting = frozenset(self.waiting)

    def on_event(self, seen: Seen) -> None:
        """Note one record of the events topic (a ``Tail``'s ``on_record``)."""
        if seen.value.terminal and seen.value.workflow_id in self._waiting:
            self.ended.add(seen.value.workflow_id)

    def unfinished(self) -> set[str]:
        """The waiting workflows not terminal yet."""
        return set(self._waiting - self.ended)

    def expected(self) -> dict[str, EndState]:
        """The outcome each filled workflow must reach (``expected``)."""
        return expected(self.finished, self.waiting)

    async def signal_and_wait(self, gateway: str, tail: Tail) -> list[str]:
        """Signal every waiting workflow over HTTP and wait until each has ended.

        Returns:
            The signals that were not accepted, one line each (a workflow that did not
            end is left for the caller to report as stuck).
        """
        began = time.monotonic()
        sent = await signal_all(gateway, [
            (wid, Signal(SIGNAL, SIGNAL_FIELDS, 0.0, f"{wid}-{SIGNAL}")) for wid in self.waiting])
        self.figures["signals_s"] = round(time.monotonic() - began, 1)
        refused = {line.split(":", 1)[0] for line in sent.errors}
        with contextlib.suppress(TimeoutError):  # reported as stuck
            await tail.wait_until(lambda: not self.unfinished() - refused,
                                  self.plan.timeout_s, "every signalled workflow terminal")
        self.figures["signalled_ended_s"] = round(time.monotonic() - began, 1)
        if self.watch is not None:
            await self.watch.stop()
        return sent.errors

    def report(self, supervisor: Supervisor, stamps: Iterable[int],
               killer: CoordinatorKill | None) -> dict[str, Any]:
        """The figures: the fill's, and per coordinator death its cause, the bytes of
        local store deleted, and the seconds to the group formed again and to the next
        process's first history record (``recovery.figures``)."""
        deaths = [(life.cause, life.ended_ms or 0, life.store_lost)
                  for life in supervisor.deaths()
                  if life.service.split("-", 1)[0] == "coordinator"]
        return {**self.figures,
                "killed_at_events": killer.killed_at_events if killer else None,
                "recoveries": recovery_figures(deaths, self.watch, stamps)}
