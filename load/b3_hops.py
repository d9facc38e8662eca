"""B3, hop latency: chains of noop tasks submitted a little apart; for each step of a
chain, the time from the worker's success report of task k to

- the start of task k+1 (``TaskStarted.at_ms`` minus ``TaskSucceeded.at_ms``, both stamped
  by workers), and
- its dispatch (the dispatch record's Kafka timestamp on ``tasks.cpu``).

Measured twice in one deployment: under light load (chains ``gap_s`` apart, a fraction of
B2's capacity) and then loaded (``loaded_gap_s`` apart, which offers about as many tasks
per second as B2 completes, so the hops include queueing).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field

from headwater.core import events as ev
from load import stats, workloads
from load.deploy import QUEUE, deployment, ready, wait_idle
from load.kafka_io import Seen, Tail, producer
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B3"
TITLE = "hop latency, success → next task"
METRICS = (
    Metric("hop_p50_ms", "success report → next task started, p50", "ms", Basis.RTT),
    Metric("hop_p95_ms", "success → next started, p95", "ms", Basis.RTT),
    Metric("hop_p99_ms", "success → next started, p99", "ms", Basis.RTT),
    Metric("dispatch_p50_ms", "success report → next dispatch record, p50", "ms", Basis.RTT),
    Metric("dispatch_p95_ms", "success → next dispatch, p95", "ms", Basis.RTT),
    Metric("dispatch_p99_ms", "success → next dispatch, p99", "ms", Basis.RTT),
    Metric("turnaround_p50_ms", "TaskStarted report → its history record (coordinator per "
           "input), p50", "ms", Basis.RTT),
    *(Metric(f"loaded_hop_p{q}_ms", f"success → next started, p{q}, loaded", "ms", Basis.RTT)
      for q in stats.PERCENTILES),
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


@dataclass
class _Times:
    """Per workflow and node: success (worker clock), start (worker clock), dispatch
    (record timestamp), all ms."""

    ids: set[str]
    succeeded: dict[tuple[str, str], int] = field(default_factory=dict)
    started: dict[tuple[str, str], int] = field(default_factory=dict)
    dispatched: dict[tuple[str, str], int] = field(default_factory=dict)
    turnaround: list[int] = field(default_factory=list)
    finished: int = 0
    failed: int = 0

    def see_event(self, seen: Seen) -> None:
        event = seen.value
        if event.workflow_id not in self.ids:
            return
        body = event.body
        if isinstance(body, ev.TaskSucceeded):
            self.succeeded.setdefault((body.workflow_id, body.node), body.at_ms)
        elif isinstance(body, ev.TaskStarted):
            self.started.setdefault((body.workflow_id, body.node), body.at_ms)
            self.turnaround.append(seen.timestamp_ms - body.at_ms)
        elif event.terminal:
            self.finished += 1
            self.failed += event.type != "WorkflowSucceeded"

    def see_dispatch(self, seen: Seen) -> None:
        body = seen.value
        if isinstance(body, ev.TaskDispatched) and body.workflow_id in self.ids:
            self.dispatched.setdefault((body.workflow_id, body.node), seen.timestamp_ms)


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
    out.update(await _phase(sandbox, sizes, sizes.gap_s))
    await wait_idle(sandbox, sizes.timeout_s)
    loaded = await _phase(sandbox, sizes, sizes.loaded_gap_s)
    out.update({f"loaded_{k}": v for k, v in loaded.items() if k.startswith("hop_")})


async def _phase(sandbox: Sandbox, sizes: Sizes, gap_s: float) -> dict[str, float]:
    """Submit ``sizes.chains`` chains ``gap_s`` apart and measure their hops."""
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    ids = [workloads.new_id("b3") for _ in range(sizes.chains)]
    times = _Times(set(ids))
    events = Tail(bootstrap, sandbox.topics.events, on_record=times.see_event)
    tasks = Tail(bootstrap, sandbox.topics.tasks(QUEUE), on_record=times.see_dispatch)
    await events.start()
    await tasks.start()
    send = producer(bootstrap)
    await send.start()
    try:
        spec = workloads.chain(sizes.length, "bench-b3")
        for wid in ids:
            await workloads.submit(send, sandbox.topics, wid, spec)
            await asyncio.sleep(gap_s)
        await events.wait_until(lambda: times.finished >= len(ids), sizes.timeout_s,
                                f"B3: {len(ids)} chains {gap_s * 1000:.0f} ms apart")
        await tasks.wait_until(lambda: len(times.dispatched) >= len(ids) * sizes.length, 10,
                               "B3: every dispatch record")
    finally:
        await send.stop()
        await events.stop()
        await tasks.stop()
    if times.failed:
        raise RuntimeError(f"B3: {times.failed} of {len(ids)} workflows did not succeed")
    return _hops(times, ids, sizes.length)


def _hops(times: _Times, ids: list[str], length: int) -> dict[str, float]:
    samples: dict[str, list[float]] = defaultdict(list)
    for wid in ids:
        for k in range(length - 1):
            done, nxt = (wid, f"n{k}"), (wid, f"n{k + 1}")
            samples["hop"].append(times.started[nxt] - times.succeeded[done])
            samples["dispatch"].append(times.dispatched[nxt] - times.succeeded[done])
    turnaround = stats.percentile(times.turnaround, 50)
    return {**stats.summary("hop", samples["hop"]),
            **stats.summary("dispatch", samples["dispatch"]), "turnaround_p50_ms": turnaround}
