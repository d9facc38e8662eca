"""B5, submission: ``POST /v1/workflows`` against producing ``WorkflowSubmitted`` straight
to Kafka, and the time from submitting to the first dispatch.

Sequential submissions (paced ``gap_s`` apart, so the coordinator is not the bottleneck)
give the latencies; bursts (HTTP ``parallel`` at a time, Kafka without waiting) give the
rates. Every workflow is one noop task.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import httpx
from aiokafka import AIOKafkaProducer

from headwater.core import events as ev
from load import stats, workloads
from load.deploy import QUEUE, deployment, ready, wait_idle
from load.kafka_io import Seen, Tail, producer
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox
from services.common.clock import now_ms

NAME = "B5"
TITLE = "submission"


def _percentiles(prefix: str, label: str) -> tuple[Metric, ...]:
    return tuple(Metric(f"{prefix}_p{q}_ms", f"{label}, p{q}", "ms", Basis.RTT)
                 for q in stats.PERCENTILES)


METRICS = (
    *_percentiles("http", "POST /v1/workflows, sequential"),
    Metric("http_per_s", "POST /v1/workflows per second, 32 at a time", "/s", Basis.RATE),
    *_percentiles("kafka", "produce a submission until acked, sequential"),
    Metric("kafka_per_s", "submissions produced and acked per second, burst", "/s", Basis.RATE),
    *_percentiles("http_to_dispatch", "POST sent → first dispatch record"),
    *_percentiles("kafka_to_dispatch", "produce sent → first dispatch record"),
)
SPEC = workloads.chain(1, "bench-b5")


@dataclass(frozen=True)
class Sizes:
    """How much B5 does.

    Attributes:
        sequential: submissions timed one at a time, per path.
        burst: submissions in each rate run, per path.
        parallel: HTTP requests in flight at once in the rate run.
        gap_s: pause between sequential submissions, seconds.
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``; 8 is the default).
        timeout_s: the longest one phase may take, seconds.
    """

    sequential: int
    burst: int
    parallel: int = 32
    gap_s: float = 0.05
    workers: int = 1
    concurrency: int = 8
    timeout_s: float = 120.0


@dataclass
class _Dispatches:
    """The first dispatch record's Kafka timestamp per workflow, ms."""

    first: dict[str, int] = field(default_factory=dict)

    def see(self, seen: Seen) -> None:
        if isinstance(seen.value, ev.TaskDispatched):
            self.first.setdefault(seen.value.workflow_id, seen.timestamp_ms)

    def covers(self, ids: Iterable[str]) -> Callable[[], bool]:
        """A condition: every one of ``ids`` has been dispatched."""
        wanted = set(ids)
        return lambda: wanted <= self.first.keys()


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS

def run(sizes: Sizes) -> dict[str, float]:
    """Run B5 in a fresh deployment.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: the gateway refused a submission, or a phase did not finish within
            ``sizes.timeout_s``; it holds the figures measured before.
    """
    with keeping({}) as out, deployment("b5", sizes.workers, sizes.concurrency) as sandbox:
        asyncio.run(_measure(sandbox, sizes, out))
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, out: dict[str, float]) -> None:
    await ready(sandbox, coordinators=1, workers=sizes.workers)
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    dispatches = _Dispatches()
    tasks = Tail(bootstrap, sandbox.topics.tasks(QUEUE), on_record=dispatches.see)
    await tasks.start()
    send = producer(bootstrap)
    await send.start()
    client = httpx.AsyncClient(base_url=sandbox.gateway, timeout=30)
    try:
        for path, submit in (("http", _via_http(client)), ("kafka", _via_kafka(send, sandbox))):
            sent = await _sequential(submit, sizes)
            out.update(stats.summary(path, [ms for _, ms in sent.values()]))
            await tasks.wait_until(dispatches.covers(sent.keys()), sizes.timeout_s,
                                   f"B5: dispatches of the {path} submissions")
            out.update(stats.summary(f"{path}_to_dispatch",
                                     [dispatches.first[w] - at for w, (at, _) in sent.items()]))
            await wait_idle(sandbox, sizes.timeout_s)
        out["http_per_s"] = await _http_rate(client, sizes)
        await wait_idle(sandbox, sizes.timeout_s)
        out["kafka_per_s"] = await _kafka_rate(send, sandbox, sizes)
        await wait_idle(sandbox, sizes.timeout_s)
    finally:
        await client.aclose()
        await send.stop()
        await tasks.stop()


Submit = Callable[[str], Awaitable[None]]


def _via_http(client: httpx.AsyncClient) -> Submit:
    async def submit(workflow_id: str) -> None:
        response = await client.post("/v1/workflows", json={"id": workflow_id, "workflow": SPEC})
        if response.status_code != 202:
            raise RuntimeError(f"B5: POST answered {response.status_code}: {response.text}")
    return submit


def _via_kafka(send: AIOKafkaProducer, sandbox: Sandbox) -> Submit:
    async def submit(workflow_id: str) -> None:
        await send.send_and_wait(sandbox.topics.submissions,
                                 workloads.submission(workflow_id, SPEC), key=workflow_id.encode())
    return submit


async def _sequential(submit: Submit, sizes: Sizes) -> dict[str, tuple[int, float]]:
    """Submit one at a time; workflow id -> (sent at, ms since the epoch; latency, ms)."""
    sent: dict[str, tuple[int, float]] = {}
    for _ in range(sizes.sequential):
        wid = workloads.new_id("b5")
        at, start = now_ms(), time.perf_counter()
        await submit(wid)
        sent[wid] = (at, (time.perf_counter() - start) * 1000)
        await asyncio.sleep(sizes.gap_s)
    return sent


async def _http_rate(client: httpx.AsyncClient, sizes: Sizes) -> float:
    """POSTs per second with ``sizes.parallel`` requests in flight."""
    submit = _via_http(client)
    ids = iter([workloads.new_id("b5") for _ in range(sizes.burst)])

    async def lane() -> None:
        for wid in ids:  # the lanes share one iterator, so each id is sent once
            await submit(wid)

    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*[lane() for _ in range(sizes.parallel)]),
                           sizes.timeout_s)
    return sizes.burst / (time.perf_counter() - start)


async def _kafka_rate(send: AIOKafkaProducer, sandbox: Sandbox, sizes: Sizes) -> float:
    """Submissions per second produced without waiting in between, until all are acked."""
    start = time.perf_counter()
    acks = []
    for _ in range(sizes.burst):
        wid = workloads.new_id("b5")
        acks.append(await send.send(sandbox.topics.submissions,
                                    workloads.submission(wid, SPEC), key=wid.encode()))
    await asyncio.wait_for(asyncio.gather(*acks), sizes.timeout_s)
    return sizes.burst / (time.perf_counter() - start)
