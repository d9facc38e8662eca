"""B8, worker scaling: B4's widest map (one map over ``width`` noop items, run as B4 runs
it: ``load.b4_width.one_map``) with 1, 2 and 4 workers of the same concurrency, in one
deployment that gains workers between the runs.

For each worker count: the total and per-task time, the speed-up over one worker, and
how the map's attempts spread over the pool: the share of the map's ``TaskStarted``
reports (on the reports topic) that each worker sent, by the ``worker`` id in them,
busiest first. Dispatches are keyed by dispatch id, so a map's items spread over every
partition of the queue and so over every worker.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass

from headwater.core import events as ev
from load import workloads
from load.b4_width import one_map
from load.deploy import add_workers, deployment, ready
from load.kafka_io import Seen, Tail
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B8"
TITLE = "worker scaling, one map"
REPORTS_WAIT_S = 10.0
"""How long after the map's end its ``TaskStarted`` reports may still be arriving."""


@dataclass(frozen=True)
class Sizes:
    """How much B8 does.

    Attributes:
        width: the map's items.
        workers: the worker counts to run it with, ascending, starting at 1.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``; B4's).
        timeout_s: the longest one map may take, seconds.
    """

    width: int
    workers: tuple[int, ...] = (1, 2, 4)
    concurrency: int = 64
    timeout_s: float = 240.0


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures B8 reports for ``sizes.workers``."""
    out: list[Metric] = []
    items = f"{sizes.width:,} items"
    for n in sizes.workers:
        pool = f"{n} worker{'s' if n > 1 else ''}"
        out += [Metric(f"total_ms_{n}w", f"{items}, {pool}: submit → WorkflowSucceeded", "ms",
                       Basis.NONE),
                Metric(f"per_task_ms_{n}w", f"{items}, {pool}: time per task", "ms",
                       Basis.PER_RECORD)]
    for n in sizes.workers[1:]:
        out.append(Metric(f"speedup_{n}_vs_1", f"speed-up, {n} workers ÷ 1 (time per task, "
                          f"1 worker ÷ {n})", "x", Basis.NONE))
        out += [Metric(f"share_{n}w_{k}", f"{n} workers: the {_rank(k)} worker's share of "
                       "the TaskStarted reports", "%", Basis.NONE) for k in range(1, n + 1)]
    return tuple(out)


def _rank(k: int) -> str:
    return "busiest" if k == 1 else f"{k}{'nd' if k == 2 else 'rd' if k == 3 else 'th'} busiest"


def run(sizes: Sizes) -> dict[str, float]:
    """Run the map once per worker count, fewest first, in one fresh deployment.

    Returns:
        The values of ``metrics(sizes)``.

    Raises:
        PartialResult: a map did not succeed or did not finish within ``sizes.timeout_s``;
            it holds the figures of the smaller pools.
        ValueError: ``sizes.workers`` does not start at 1 or is not ascending.
    """
    if sizes.workers[0] != 1 or list(sizes.workers) != sorted(set(sizes.workers)):
        raise ValueError(f"workers={sizes.workers} must ascend from 1")
    with keeping({}) as out, deployment("b8", 1, sizes.concurrency) as sandbox:
        asyncio.run(_measure(sandbox, sizes, out))
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, out: dict[str, float]) -> None:
    for n in sizes.workers:
        add_workers(sandbox, n)
        await ready(sandbox, coordinators=1, workers=n)
        total_ms, started_by = await _map(sandbox, sizes)
        out[f"total_ms_{n}w"] = total_ms
        out[f"per_task_ms_{n}w"] = total_ms / sizes.width
        if n > 1:
            out[f"speedup_{n}_vs_1"] = out["per_task_ms_1w"] / out[f"per_task_ms_{n}w"]
            out.update(_shares(n, started_by))


async def _map(sandbox: Sandbox, sizes: Sizes) -> tuple[float, Counter[str]]:
    """Run one map; returns its total ms and its ``TaskStarted`` reports per worker id."""
    wid = workloads.new_id(f"b8-{sizes.width}")
    started_by: Counter[str] = Counter()

    def on_report(seen: Seen) -> None:
        if isinstance(seen.value, ev.TaskStarted) and seen.value.workflow_id == wid:
            started_by[seen.value.worker] += 1

    tail = Tail(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"], sandbox.topics.reports,
                on_record=on_report)
    await tail.start()
    try:
        total_ms, _ = await one_map(sandbox, sizes.width, sizes.timeout_s, wid)
        await tail.wait_until(lambda: started_by.total() >= sizes.width, REPORTS_WAIT_S,
                              f"B8: the TaskStarted reports of the map of {sizes.width}")
    finally:
        await tail.stop()
    return total_ms, started_by


def _shares(n: int, started_by: Counter[str]) -> dict[str, float]:
    """``share_<n>w_<k>``: the k-th busiest worker's percentage of the reports; a worker
    of the pool that sent none has a share of 0.

    Raises:
        RuntimeError: more workers sent reports than the pool has.
    """
    if len(started_by) > n:
        raise RuntimeError(f"B8: {len(started_by)} worker ids in the reports of a pool of "
                           f"{n}: {sorted(started_by)}")
    counts = sorted(started_by.values(), reverse=True) + [0] * (n - len(started_by))
    total = sum(counts)
    return {f"share_{n}w_{k}": 100 * c / total for k, c in enumerate(counts, start=1)}
