"""B7, recovery: a stream of small workflows (diamonds, ``gap_s`` apart) on a deployment
with one coordinator; after ``kill_after`` submissions the coordinator is SIGKILLed by
its pid and started again at once, with the same settings (its static group member id
included: ``load.deploy.coordinator_env``), while the stream goes on.

From the moment the killed process is gone: the first history record on the events topic
with a later Kafka timestamp (only a coordinator writes there, so this is the new
process's first progress), and the last workflow's terminal record (the whole stream
done). The goal: first progress within 5 s.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from load import workloads
from load.deploy import COORDINATOR, deployment, kill, ready, start_coordinator
from load.kafka_io import Seen, Tail, producer
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox
from services.common.clock import now_ms

NAME = "B7"
TITLE = "recovery, coordinator SIGKILLed mid-stream"
METRICS = (
    Metric("recovery_first_progress_s", "SIGKILL → first new history record (target ≤ 5 s)",
           "s", Basis.NONE),
    Metric("recovery_all_done_s", "SIGKILL → every workflow of the stream done", "s",
           Basis.NONE),
    Metric("done_before_kill", "workflows done before the kill", "count", Basis.NONE),
)
log = logging.getLogger("load.b7")


@dataclass(frozen=True)
class Sizes:
    """How much B7 does.

    Attributes:
        workflows: diamonds submitted (four noop tasks each).
        kill_after: submissions made before the kill; the rest follow it.
        gap_s: pause between submissions, seconds.
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``; 8 is the default).
        timeout_s: the longest the stream may take after the kill, seconds.
    """

    workflows: int
    kill_after: int
    gap_s: float = 0.05
    workers: int = 1
    concurrency: int = 8
    timeout_s: float = 120.0


@dataclass
class Progress:
    """What an events reader saw around a coordinator's kill (B7's, and B9's probes).

    Attributes:
        ids: the workflows whose ends are awaited.
        killed_ms: when the killed process was gone, ms since the epoch (None: not yet).
        first_after_ms: the Kafka timestamp of the first history record later than the
            kill (only a coordinator writes there: the new process's first progress).
        ended_ms: workflow id -> its first terminal record's Kafka timestamp.
        failed: the workflows whose end was not ``WorkflowSucceeded``.
    """

    ids: set[str]
    killed_ms: int | None = None
    first_after_ms: int | None = None
    ended_ms: dict[str, int] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)

    def see(self, seen: Seen) -> None:
        """Note one history record (a ``Tail``'s ``on_record``)."""
        if (self.killed_ms is not None and self.first_after_ms is None
                and seen.timestamp_ms > self.killed_ms):
            self.first_after_ms = seen.timestamp_ms
        event = seen.value
        if event.workflow_id in self.ids and event.terminal:
            self.ended_ms.setdefault(event.workflow_id, seen.timestamp_ms)
            if event.type != "WorkflowSucceeded":
                self.failed.add(event.workflow_id)


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures this benchmark reports (the same for every size)."""
    return METRICS


def run(sizes: Sizes) -> dict[str, float]:
    """Run B7 in a fresh deployment with one coordinator.

    Returns:
        The values of ``METRICS``.

    Raises:
        PartialResult: the coordinator could not be killed or started, a workflow did not
            succeed, or the stream was not done within ``sizes.timeout_s`` of the kill.
        ValueError: ``kill_after`` is not within the stream.
    """
    if not 0 < sizes.kill_after < sizes.workflows:
        raise ValueError(f"kill_after={sizes.kill_after} must be in 1..{sizes.workflows - 1}")
    with keeping({}) as out, deployment("b7", sizes.workers, sizes.concurrency) as sandbox:
        asyncio.run(_measure(sandbox, sizes, out))
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, out: dict[str, float]) -> None:
    await ready(sandbox, coordinators=1, workers=sizes.workers)
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    ids = [workloads.new_id("b7") for _ in range(sizes.workflows)]
    progress = Progress(set(ids))
    tail = Tail(bootstrap, sandbox.topics.events, on_record=progress.see)
    await tail.start()
    send = producer(bootstrap)
    await send.start()
    try:
        spec = workloads.diamond("bench-b7")
        for i, wid in enumerate(ids):
            if i == sizes.kill_after:
                service = kill(sandbox, COORDINATOR)
                progress.killed_ms = now_ms()
                start_coordinator(sandbox, service)
            await workloads.submit(send, sandbox.topics, wid, spec)
            await asyncio.sleep(sizes.gap_s)
        await tail.wait_until(lambda: len(progress.ended_ms) >= len(ids), sizes.timeout_s,
                              f"B7: {len(ids)} diamonds, the coordinator killed after "
                              f"{sizes.kill_after}")
    finally:
        await send.stop()
        await tail.stop()
    out.update(_figures(progress))


def _figures(progress: Progress) -> dict[str, float]:
    """The values of ``METRICS`` from what the reader saw.

    Raises:
        RuntimeError: a workflow did not succeed, or nothing was recorded after the kill.
    """
    if progress.failed:
        raise RuntimeError(f"B7: {len(progress.failed)} workflows did not succeed, e.g. "
                           f"{sorted(progress.failed)[0]}")
    killed, first = progress.killed_ms, progress.first_after_ms
    if killed is None or first is None:
        raise RuntimeError("B7: no history record after the kill")
    return {
        "recovery_first_progress_s": (first - killed) / 1000,
        "recovery_all_done_s": (max(progress.ended_ms.values()) - killed) / 1000,
        "done_before_kill": float(sum(1 for t in progress.ended_ms.values() if t <= killed)),
    }
