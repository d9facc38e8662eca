"""What runs beside a batch in one run: the worker killer (``killer``), the scaling
script (``rebalance``), the infrastructure fault (``outage``) and the large table's
coordinator kill (``large_table.CoordinatorKill``), started together,
awaited together, and reported into the run's figures.

``Progress`` follows the batch on the events topic: how many of its history events have
been recorded and which of its workflows are terminal; the scripts decide when to act
from it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from faultsuite.infra import PrivateInfra
from faultsuite.killer import WorkerKiller
from faultsuite.large_table import CoordinatorKill, LargeTable
from faultsuite.outage import Outage, OutageScript
from faultsuite.rebalance import Rebalance, Script
from faultsuite.supervisor import Supervisor
from load.kafka_io import Seen
from ops.sandbox import Sandbox


@dataclass
class Progress:
    """The batch as its history events show it.

    Attributes:
        ids: the batch's workflow ids.
        terminal: those whose terminal event was seen.
        events: history events of the batch seen (duplicates included).
    """

    ids: set[str]
    terminal: set[str] = field(default_factory=set)
    events: int = 0

    def on_event(self, seen: Seen) -> None:
        """Count one record of the events topic (a ``Tail``'s ``on_record``)."""
        if seen.value.workflow_id in self.ids:
            self.events += 1
            if seen.value.terminal:
                self.terminal.add(seen.value.workflow_id)

    def share(self) -> float:
        """The share of the batch terminal."""
        return len(self.terminal) / len(self.ids) if self.ids else 1.0

    def now(self) -> tuple[int, float]:
        """Events seen and the share terminal (``outage.Progress``)."""
        return self.events, self.share()

    def done(self) -> bool:
        """Whether every workflow of the batch is terminal."""
        return self.terminal >= self.ids


@dataclass
class SideScripts:
    """The scripts of one run; ``start``, then ``finish`` (or ``stop`` on failure)."""

    killer: WorkerKiller | None = None
    scaling: Script | None = None
    outage: OutageScript | None = None
    coordinator_kill: CoordinatorKill | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    async def start(cls, sandbox: Sandbox, supervisor: Supervisor, progress: Progress,
                    plan: _SidePlan, infra: PrivateInfra | None,
                    read_ids: Sequence[str]) -> SideScripts:
        """Start what ``plan`` asks for.

        Raises:
            ValueError: the plan has an outage but no private infrastructure was given.
        """
        side = cls()
        bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
        if plan.worker_kills:
            side.killer = WorkerKiller(supervisor, bootstrap, sandbox.topics.reports,
                                       plan.worker_kills, plan.kill_gap_s,
                                       target="serve" if plan.serve else "worker")
            await side.killer.start()
        if plan.rebalance is not None:
            side.scaling = Script(plan.rebalance, sandbox, supervisor, progress.share)
            side._tasks.append(asyncio.create_task(side.scaling.run()))
        if plan.outage is not None:
            if infra is None:
                raise ValueError("an infrastructure fault needs a private broker and database")
            side.outage = OutageScript(plan.outage, infra, sandbox.gateway, progress.now,
                                       read_ids[0])
            side._tasks.append(asyncio.create_task(side.outage.run()))
        if plan.table is not None:
            side.coordinator_kill = CoordinatorKill(supervisor, lambda: progress.events,
                                                    plan.table.kill_after_events, progress.done)
            side._tasks.append(asyncio.create_task(side.coordinator_kill.run()))
        return side

    async def finish(self) -> None:
        """Wait for the scaling script and the outage to end (the outage has put back
        what it took away)."""
        for task in self._tasks:
            await task

    async def stop(self) -> None:
        """Stop the killer; cancel whatever has not ended (an outage restores first)."""
        if self.killer is not None:
            await self.killer.stop()
        for task in self._tasks:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def report(self) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
        """The figures they add, the scaling steps, and the outage's violations."""
        figures: dict[str, Any] = {
            "worker_kills": [k.__dict__ for k in self.killer.done] if self.killer else []}
        violations: list[str] = []
        if self.outage is not None:
            figures.update(self.outage.log.figures())
            figures["outage"] = {k: v for k, v in self.outage.log.__dict__.items()
                                 if k != "violations"}
            violations = self.outage.log.violations
        steps = [s.__dict__ for s in self.scaling.steps] if self.scaling else []
        return figures, steps, violations


class _SidePlan(Protocol):
    """What ``SideScripts.start`` reads of a ``run.Plan`` (``run`` imports this module)."""

    @property
    def worker_kills(self) -> int: ...
    @property
    def kill_gap_s(self) -> float: ...
    @property
    def serve(self) -> bool: ...
    @property
    def rebalance(self) -> Rebalance | None: ...
    @property
    def outage(self) -> Outage | None: ...
    @property
    def table(self) -> LargeTable | None: ...
