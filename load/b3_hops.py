"""B3, hop latency: chains of noop tasks submitted a little apart; for each step of a
chain, the time from the worker's success report of task k to

- the ``TaskStarted`` report of task k+1 (the hop), and
- the dispatch record of task k+1 on ``tasks.cpu``,

all as Kafka timestamps of those records (``load.chains``: the producer's CreateTime, the
worker's for reports and the coordinator's for dispatches; not the ``at_ms`` inside the
records, which the coordinator restamps as it applies them).

Measured twice in one deployment: under light load (chains ``gap_s`` apart, a fraction of
B2's capacity) and then loaded (``loaded_gap_s`` apart, which offers about as many tasks
per second as B2 completes, so the hops include queueing).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from load import stats, window
from load.chains import Batch, Chains, run_chains, samples
from load.deploy import deployment, ready, wait_idle
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B3"
TITLE = "hop latency, success → next task"
METRICS = (
    Metric("hop_p50_ms", "success report → next TaskStarted report (record times), p50", "ms",
           Basis.RTT),
    Metric("hop_p95_ms", "success → next started report, p95", "ms", Basis.RTT),
    Metric("hop_p99_ms", "success → next started report, p99", "ms", Basis.RTT),
    Metric("dispatch_p50_ms", "success report → next dispatch record, p50", "ms", Basis.RTT),
    Metric("dispatch_p95_ms", "success → next dispatch, p95", "ms", Basis.RTT),
    Metric("dispatch_p99_ms", "success → next dispatch, p99", "ms", Basis.RTT),
    Metric("turnaround_p50_ms", "TaskStarted report → its history record (coordinator per "
           "input), p50", "ms", Basis.RTT),
    *(Metric(f"loaded_hop_p{q}_ms", f"success → next started report, p{q}, loaded", "ms",
             Basis.RTT) for q in stats.PERCENTILES),
)


@dataclass(frozen=True)
class Sizes:
    """How much B3 does.

    Attributes:
        chains: workflows submitted in each phase.
        length: tasks per chain.
        gap_s: pause between submissions under light load, seconds.
        loaded_gap_s: pause between submissions in the loaded phase, seconds.
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``; 8 is the default).
        timeout_s: the longest one phase may take, seconds.
    """

    chains: int
    length: int = 4
    gap_s: float = 0.1
    loaded_gap_s: float = 0.02
    workers: int = 1
    concurrency: int = 8
    timeout_s: float = 120.0


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS


def run(sizes: Sizes) -> dict[str, float]:
    """Run B3 in a fresh deployment.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: a workflow did not succeed, or a phase did not finish within
            ``sizes.timeout_s``; it holds the figures measured before.
    """
    with keeping({}) as out, deployment("b3", sizes.workers, sizes.concurrency) as sandbox:
        asyncio.run(_measure(sandbox, sizes, out))
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, out: dict[str, float]) -> None:
    await ready(sandbox, coordinators=1, workers=sizes.workers)
    with window.measured(sandbox, "B3-light"):
        light = await run_chains(sandbox, Batch(sizes.chains, sizes.length, sizes.gap_s),
                                 sizes.timeout_s, "b3")
    out.update(hop_figures(light))
    await wait_idle(sandbox, sizes.timeout_s)
    with window.measured(sandbox, "B3-loaded"):
        loaded = await run_chains(sandbox, Batch(sizes.chains, sizes.length,
                                                 sizes.loaded_gap_s), sizes.timeout_s, "b3")
    out.update({f"loaded_{k}": v for k, v in hop_figures(loaded).items()
                if k.startswith("hop_")})


def hop_figures(chains: Chains) -> dict[str, float]:
    """B3's figures of one phase: ``hop_p*_ms``, ``dispatch_p*_ms``, ``turnaround_p50_ms``."""
    found = samples(chains)
    return {**stats.summary("hop", found["hop"]), **stats.summary("dispatch", found["dispatch"]),
            "turnaround_p50_ms": stats.percentile(found["turnaround"], 50)}
