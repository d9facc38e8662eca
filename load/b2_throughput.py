"""B2, throughput: many small workflows (a chain of noop tasks) submitted at once straight
to Kafka; tasks completed per second at steady state, with one and with two coordinator
processes.

Completed tasks are the ``TaskSucceeded`` history records on the events topic, timed by
their Kafka timestamps; the first and last 10% of the window are dropped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from headwater.core.kinds.code.continuation import is_continued
from load import stats, window, workloads
from load.deploy import deployment, ready
from load.kafka_io import Seen, Tail, producer
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B2"
TITLE = "throughput, 3-task chains"
METRICS = (
    Metric("tasks_per_s_1_coordinator", "tasks completed per second, 1 coordinator", "/s",
           Basis.RATE),
    Metric("tasks_per_s_2_coordinators", "tasks completed per second, 2 coordinators", "/s",
           Basis.RATE),
    Metric("scaling_2_vs_1", "2 coordinators ÷ 1 coordinator", "x", Basis.NONE),
    Metric("history_records_per_task", "history records per task (1 coordinator)", "",
           Basis.NONE),
)


@dataclass(frozen=True)
class Run:
    """What one run of chains measured.

    Attributes:
        rate: noop tasks completed per second at steady state.
        per_task: history records per noop task.
        continued: of a code chain's activations after its first, the share a
            continuation decided (no dispatch; 0 for a spec chain).
    """

    rate: float
    per_task: float
    continued: float = 0.0


@dataclass(frozen=True)
class Sizes:
    """How much B2 does.

    Attributes:
        workflows: chains submitted per run.
        length: tasks per chain.
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``).
        timeout_s: the longest one run may take, seconds.
    """

    workflows: int
    length: int = 3
    workers: int = 2
    concurrency: int = 64
    timeout_s: float = 180.0


@dataclass
class _Count:
    """What the events reader has seen of this run's workflows."""

    ids: set[str]
    succeeded_at: list[int]
    finished: int = 0
    failed: int = 0
    records: int = 0
    activations: int = 0
    continued: int = 0

    def see(self, seen: Seen) -> None:
        event = seen.value
        if event.workflow_id not in self.ids:
            return
        self.records += 1
        body = event.body
        if event.type == "TaskSucceeded" and workloads.is_step(body.index):
            self.succeeded_at.append(seen.timestamp_ms)
        elif event.type == "TaskDispatched" and body.index and not workloads.is_step(
                body.index):  # a code chain's activation after its first
            self.activations += 1
            self.continued += is_continued(body)
        elif event.terminal:
            self.finished += 1
            self.failed += event.type != "WorkflowSucceeded"


_KIND = {False: "spec", True: "code"}


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS

def run(sizes: Sizes) -> dict[str, float]:
    """Run B2 with one, then two coordinators, each in a fresh deployment.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: a workflow did not succeed, or a run did not finish within
            ``sizes.timeout_s``; it holds the figures measured before.
    """
    with keeping({}) as out:
        for coordinators, key in ((1, "tasks_per_s_1_coordinator"),
                                  (2, "tasks_per_s_2_coordinators")):
            with deployment(f"b2-{coordinators}", sizes.workers, sizes.concurrency,
                            coordinators) as sandbox:
                measured = asyncio.run(measure(sandbox, sizes, coordinators))
            out[key] = measured.rate
            out.setdefault("history_records_per_task", measured.per_task)
        one, two = out["tasks_per_s_1_coordinator"], out["tasks_per_s_2_coordinators"]
        out["scaling_2_vs_1"] = two / one
    return out


async def measure(sandbox: Sandbox, sizes: Sizes, coordinators: int,
                  code: bool = False) -> Run:
    """One run in a fresh deployment: ``sizes.workflows`` chains submitted at once.

    Args:
        sandbox: the deployment, not yet made ready.
        sizes: how many chains, how long.
        coordinators: its coordinator processes.
        code: run the chain in code (``load.noop_tasks.chain``), whose activations are
            not counted as tasks, instead of as a spec.

    Returns:
        The steady rate, the records per task and the share of activations continued.
    """
    await ready(sandbox, coordinators, sizes.workers)
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    ids = [workloads.new_id("b2") for _ in range(sizes.workflows)]
    count = _Count(set(ids), [])
    tail = Tail(bootstrap, sandbox.topics.events, on_record=count.see)
    await tail.start()
    send = producer(bootstrap, linger_ms=5)
    await send.start()
    try:
        spec = workloads.code_chain() if code else workloads.chain(sizes.length, "bench-b2")
        given = workloads.code_input(sizes.length) if code else None
        what = f"B2 with {coordinators} coordinator(s): {len(ids)} {_KIND[code]} chains"
        with window.measured(sandbox, f"B2-{_KIND[code]}-{coordinators}-coordinator"):
            acks = [await send.send(sandbox.topics.submissions,
                                    workloads.submission(wid, spec, given), key=wid.encode())
                    for wid in ids]
            await asyncio.gather(*acks)
            await tail.wait_until(lambda: count.finished >= len(ids), sizes.timeout_s, what)
    finally:
        await send.stop()
        await tail.stop()
    if count.failed:
        raise RuntimeError(f"{what}: {count.failed} did not succeed")
    tasks = len(ids) * sizes.length
    return Run(stats.steady_rate(count.succeeded_at), count.records / tasks,
               count.continued / count.activations if count.activations else 0.0)
