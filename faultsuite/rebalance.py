"""Rebalances during a batch: coordinators 1 -> 2 -> 1 and workers 1 -> N -> 1.

Each step starts or stops processes (stopped ones get SIGTERM, by pid) and then waits
for the consumer group to settle at its new size, so that every step really moves
partitions while workflows run. The steps are recorded with the share of the batch that
was terminal at the time: a scale-down after the batch ended would prove nothing.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiokafka.admin import AIOKafkaAdminClient

from faultsuite.supervisor import Supervisor
from ops import localstack
from ops.sandbox import Sandbox
from tests.polling import scaled

QUEUE = "cpu"
TASKS = ("e2e_tasks", "fault_flows")
"""The task modules of the fault suite's workers (``tests/e2e/e2e_tasks.py``, and the
code shape's ``@workflow``s, ``tests/e2e/fault_flows.py``)."""


@dataclass(frozen=True)
class Rebalance:
    """The scaling script.

    Attributes:
        coordinators: coordinators at the peak (from 1).
        workers: workers at the peak (from 1).
        start_s: seconds after the first submission before the first step.
        hold_s: seconds at the peak.
        settle_s: the longest wait for a group to reach its new size, seconds (scaled,
            see ``tests/polling.py``).
    """

    coordinators: int = 2
    workers: int = 3
    start_s: float = 3.0
    hold_s: float = 8.0
    settle_s: float = 60.0


@dataclass
class Step:
    """One scaling step.

    Attributes:
        what: e.g. ``"coordinators 1 -> 2"``.
        at_s: seconds since the script started.
        settled_s: how long the group took to reach its new size (None: it did not).
        terminal_share: the share of the batch terminal when the step began.
    """

    what: str
    at_s: float
    settled_s: float | None
    terminal_share: float


@dataclass
class Script:
    """Runs a ``Rebalance`` on a sandbox through its supervisor."""

    plan: Rebalance
    sandbox: Sandbox
    supervisor: Supervisor
    terminal_share: Callable[[], float]
    steps: list[Step] = field(default_factory=list)

    async def run(self) -> None:
        """Scale up and down again, step by step (see the module's docstring)."""
        began = time.monotonic()
        await asyncio.sleep(self.plan.start_s)
        py = sys.executable
        coordinators = [localstack.Service(f"coordinator-{i}", (py, "-m", "services.coordinator"))
                        for i in range(2, self.plan.coordinators + 1)]
        workers = localstack.default_services(TASKS, self.plan.workers, QUEUE)[3:]
        topics = self.sandbox.topics
        group_c, group_w = topics.coordinator_app_id, topics.worker_group(QUEUE)
        n_c, n_w = 1 + len(coordinators), 1 + len(workers)
        up, down = self.supervisor.start, self.supervisor.retire
        await self._step(f"coordinators 1 -> {n_c}", began, group_c, n_c, up, coordinators)
        await self._step(f"workers 1 -> {n_w}", began, group_w, n_w, up, workers)
        await asyncio.sleep(self.plan.hold_s)
        await self._step(f"coordinators {n_c} -> 1", began, group_c, 1, down, coordinators)
        await self._step(f"workers {n_w} -> 1", began, group_w, 1, down, workers)

    async def _step(self, what: str, began: float, group: str, size: int,
                    action: Callable[[localstack.Service], object],
                    services: list[localstack.Service]) -> None:
        at = time.monotonic()
        share = self.terminal_share()
        await asyncio.gather(*(asyncio.to_thread(action, s) for s in services))
        settled = await wait_group_size(self.sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"], group,
                                        size, scaled(self.plan.settle_s))
        self.steps.append(Step(what, round(at - began, 2),
                               None if settled is None else round(settled - at, 2),
                               round(share, 3)))


async def wait_group_size(bootstrap: str, group: str, size: int,
                          timeout_s: float) -> float | None:
    """Wait until ``group`` is ``Stable`` with exactly ``size`` members; return when
    (``time.monotonic()``), or None after ``timeout_s``."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            # One group per request: aiokafka 0.14 garbles answers about several.
            for response in await admin.describe_consumer_groups([group]):
                for g in response.groups:
                    if g[1] == group and g[2] == "Stable" and len(g[5]) == size:
                        return time.monotonic()
            await asyncio.sleep(0.25)
        return None
    finally:
        await admin.close()
