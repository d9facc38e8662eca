"""B2, throughput: many small workflows (a chain of noop tasks) submitted at once straight
to Kafka; tasks completed per second at steady state, with one, two and (in the full plan)
four coordinator processes, each in a fresh deployment.

Completed tasks are the ``TaskSucceeded`` history records on the events topic, timed by
their Kafka timestamps; the first and last 10% of the window are dropped. Beside the rate,
each phase records how many input partitions each coordinator held (the consumer group's
assignment) and the CPU time its processes used from the first submission to the last
workflow's end (``load.cpu``), so that a capacity model can give tasks per second per
partition and per core (docs/capacity.md).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from headwater.core.kinds.code.continuation import is_continued
from load import stats, window, workloads
from load.cpu import ROLES, cpu_by_role, cpu_used
from load.deploy import deployment, ready
from load.kafka_io import Seen, Tail, partitions_per_member, producer
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B2"
TITLE = "throughput, 3-task chains"


def _rate_key(n: int) -> str:
    return "tasks_per_s_1_coordinator" if n == 1 else f"tasks_per_s_{n}_coordinators"


def _coordinators(n: int) -> str:
    return "1 coordinator" if n == 1 else f"{n} coordinators"


def phase_metrics(n: int) -> tuple[Metric, ...]:
    """The figures of the phase with ``n`` coordinators (beside its rate and scaling)."""
    c = _coordinators(n)
    return (
        Metric(f"partitions_max_{n}c", f"{c}: most input partitions one coordinator held",
               "count", Basis.NONE),
        Metric(f"partitions_min_{n}c", f"{c}: fewest input partitions one coordinator held",
               "count", Basis.NONE),
        Metric(f"cpu_s_coordinators_{n}c", f"{c}: CPU time of the coordinators, first "
               "submission → last workflow ended", "s", Basis.NONE),
        Metric(f"cpu_s_workers_{n}c", f"{c}: CPU time of the workers, same window", "s",
               Basis.NONE),
        Metric(f"cpu_s_others_{n}c", f"{c}: CPU time of the gateway and the projector, "
               "same window", "s", Basis.NONE),
        Metric(f"tasks_per_cpu_s_{n}c", f"{c}: tasks per CPU second of all Headwater's "
               "processes", "", Basis.NONE),
        Metric(f"tasks_per_coordinator_cpu_s_{n}c", f"{c}: tasks per CPU second of the "
               "coordinators", "", Basis.NONE),
    )


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures B2 reports for ``sizes.coordinators``: the keys of one and two
    coordinators and ``scaling_2_vs_1`` are those of results before four were measured."""
    out = [Metric(_rate_key(n), f"tasks completed per second, {_coordinators(n)}", "/s",
                  Basis.RATE) for n in sizes.coordinators]
    out += [Metric(f"scaling_{n}_vs_1", f"{_coordinators(n)} ÷ 1 coordinator", "x",
                   Basis.NONE) for n in sizes.coordinators if n > 1]
    out += [Metric("history_records_per_task", "history records per task (1 coordinator)",
                   "", Basis.NONE),
            Metric("input_partitions", "partitions of each input topic", "count",
                   Basis.NONE)]
    for n in sizes.coordinators:
        out += phase_metrics(n)
    return tuple(out)


@dataclass(frozen=True)
class Run:
    """What one run of chains measured.

    Attributes:
        rate: noop tasks completed per second at steady state.
        per_task: history records per noop task.
        continued: of a code chain's activations after its first, the share a
            continuation decided (no dispatch; 0 for a spec chain).
        tasks: noop tasks completed.
        cpu_s: CPU time by role (``load.cpu.ROLES``) from the first submission to the
            last workflow's end, seconds.
    """

    rate: float
    per_task: float
    continued: float = 0.0
    tasks: int = 0
    cpu_s: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Sizes:
    """How much B2 does.

    Attributes:
        workflows: chains submitted per run.
        length: tasks per chain.
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``).
        coordinators: coordinator processes of each phase, 1 first, increasing (B2c
            takes none of them: it always runs one).
        timeout_s: the longest one run may take, seconds.
    """

    workflows: int
    length: int = 3
    workers: int = 2
    concurrency: int = 64
    coordinators: tuple[int, ...] = (1, 2)
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


def run(sizes: Sizes) -> dict[str, float]:
    """Run B2 with each number of ``sizes.coordinators``, each in a fresh deployment.

    Returns:
        The values of ``metrics(sizes)``.

    Raises:
        ValueError: ``sizes.coordinators`` does not start at 1 or does not increase.
        PartialResult: a workflow did not succeed, or a run did not finish within
            ``sizes.timeout_s``; it holds the figures measured before.
    """
    steps = list(sizes.coordinators)
    if not steps or steps[0] != 1 or steps != sorted(set(steps)):
        raise ValueError(f"B2: coordinators={sizes.coordinators} must start at 1 and increase")
    with keeping({}) as out:
        for n in steps:
            with deployment(f"b2-{n}", sizes.workers, sizes.concurrency, n) as sandbox:
                measured = asyncio.run(measure(sandbox, sizes, n))
                held = asyncio.run(partitions_per_member(
                    sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"],
                    sandbox.topics.coordinator_app_id, sandbox.topics.submissions))
            out.update(phase_values(n, measured, held))
            out.setdefault("history_records_per_task", measured.per_task)
            out.setdefault("input_partitions", sum(held))
            if n > 1:
                out[f"scaling_{n}_vs_1"] = out[_rate_key(n)] / out[_rate_key(1)]
    return out


def phase_values(n: int, measured: Run, held: list[int]) -> dict[str, float]:
    """The rate and ``phase_metrics(n)`` of one phase.

    Args:
        n: its coordinators.
        measured: what ``measure`` returned.
        held: the input partitions each coordinator held (``partitions_per_member``).

    Raises:
        RuntimeError: the group did not have ``n`` members, or no CPU time was used.
    """
    if len(held) != n:
        raise RuntimeError(f"B2: the coordinators' group had {len(held)} members, not {n}")
    cpu = {role: measured.cpu_s.get(role, 0.0) for role in ROLES}
    total = sum(cpu.values())
    if cpu["coordinators"] <= 0:
        raise RuntimeError(f"B2 with {_coordinators(n)}: no CPU time measured ({cpu})")
    return {
        _rate_key(n): measured.rate,
        f"partitions_max_{n}c": max(held),
        f"partitions_min_{n}c": min(held),
        f"cpu_s_coordinators_{n}c": cpu["coordinators"],
        f"cpu_s_workers_{n}c": cpu["workers"],
        f"cpu_s_others_{n}c": cpu["others"],
        f"tasks_per_cpu_s_{n}c": measured.tasks / total,
        f"tasks_per_coordinator_cpu_s_{n}c": measured.tasks / cpu["coordinators"],
    }


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
        The steady rate, the records per task, the share of activations continued, the
        tasks done and the CPU time used from the first submission to the last end.
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
        cpu_before = cpu_by_role(sandbox)
        with window.measured(sandbox, f"B2-{_KIND[code]}-{coordinators}-coordinator"):
            acks = [await send.send(sandbox.topics.submissions,
                                    workloads.submission(wid, spec, given), key=wid.encode())
                    for wid in ids]
            await asyncio.gather(*acks)
            await tail.wait_until(lambda: count.finished >= len(ids), sizes.timeout_s, what)
        cpu_s = cpu_used(cpu_before, cpu_by_role(sandbox))
    finally:
        await send.stop()
        await tail.stop()
    if count.failed:
        raise RuntimeError(f"{what}: {count.failed} did not succeed")
    tasks = len(ids) * sizes.length
    return Run(stats.steady_rate(count.succeeded_at), count.records / tasks,
               count.continued / count.activations if count.activations else 0.0,
               tasks, cpu_s)
