"""Fakes of the worker's Kafka clients, and dispatch records, for the worker's unit tests."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import MessageSizeTooLargeError

from headwater import codec, task
from headwater.core import events as ev
from services.common.clock import now_ms
from services.worker.app import Worker
from services.worker.attempt import Attempt
from services.worker.intake import Intake
from services.worker.outbox import Outbox
from services.worker.settings import Settings

QUEUE = "unit"
TOPIC = f"t.tasks.{QUEUE}"
TP0, TP1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
GATE = threading.Event()
"""Holds ``unit.gated`` tasks until set."""


@task(name="unit.ok", queue=QUEUE)
def ok(n: int = 0) -> int:
    """Return ``n``."""
    return n


@task(name="unit.gated", queue=QUEUE)
def gated(n: int) -> int:
    """Wait (in its thread) until ``GATE`` is set, then return ``n``."""
    GATE.wait(10)
    return n


def settings(concurrency: int = 4, **overrides: Any) -> Settings:
    """Worker settings for queue ``unit`` under prefix ``t``."""
    return Settings(prefix="t", queue=QUEUE, concurrency=concurrency, worker_id="w1",
                    **overrides)


def dispatch(task: str, input: Any = None, attempt: int = 1, node: str = "n",
             workflow_id: str = "wf", timeout_s: float | None = None,
             heartbeat_timeout_s: float | None = None, checkpoint: Any = None,
             at_ms: int | None = None) -> ev.TaskDispatched:
    """A dispatch of ``task`` on queue ``unit``, dispatched now (or at ``at_ms``)."""
    return ev.TaskDispatched(workflow_id, node, None, attempt, task, QUEUE, input,
                             now_ms() if at_ms is None else at_ms, timeout_s,
                             heartbeat_timeout_s, checkpoint)


@dataclass
class Record:
    """The fields of aiokafka's ``ConsumerRecord`` that the worker reads."""

    offset: int
    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    topic: str = "t.tasks.cpu"
    timestamp: int = 0


def records(*dispatches: ev.TaskDispatched, start: int = 0, topic: str = "t.tasks.cpu",
            ) -> list[Record]:
    """Encoded records of ``dispatches`` at consecutive offsets from ``start``, each
    stamped with its dispatch's time."""
    return [Record(start + i, codec.encode(d), d.workflow_id.encode(), topic=topic,
                   timestamp=d.at_ms)
            for i, d in enumerate(dispatches)]


@dataclass
class FakeConsumer:
    """An assigned consumer over fixed records per partition, honouring pause and seek;
    ``stop`` leaves the group (``left``), after which it must not be polled."""

    log: dict[TopicPartition, list[Record]]
    position: dict[TopicPartition, int] = field(default_factory=dict)
    paused_tps: set[TopicPartition] = field(default_factory=set)
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    commit_errors: list[BaseException] = field(default_factory=list)
    polls: int = 0
    polls_while_paused: int = 0
    unpause_during_next_poll: set[TopicPartition] = field(default_factory=set)
    left: bool = False

    def assignment(self) -> set[TopicPartition]:
        return set(self.log)

    def paused(self) -> set[TopicPartition]:
        return set(self.paused_tps)

    def pause(self, *tps: TopicPartition) -> None:
        self.paused_tps |= set(tps)

    def resume(self, *tps: TopicPartition) -> None:
        self.paused_tps -= set(tps)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.position[tp] = offset

    async def getmany(self, timeout_ms: int = 0,
                      max_records: int | None = None) -> dict[TopicPartition, list[Record]]:
        assert not self.left, "polled after leaving the group"
        self.polls += 1
        self.paused_tps -= self.unpause_during_next_poll  # as a rebalance would
        self.unpause_during_next_poll = set()
        if self.paused_tps and self.paused_tps >= self.assignment():
            self.polls_while_paused += 1
        budget = max_records or 1_000_000
        out: dict[TopicPartition, list[Record]] = {}
        for tp, recs in self.log.items():
            if tp in self.paused_tps or budget <= 0:
                continue
            start = self.position.get(tp, 0)
            taken = [r for r in recs if r.offset >= start][:budget]
            if taken:
                out[tp] = taken
                self.position[tp] = taken[-1].offset + 1
                budget -= len(taken)
        if not out:
            await asyncio.sleep(timeout_ms / 1000)
        return out

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        await asyncio.sleep(0)
        assert not self.left, "committed after leaving the group"
        if self.commit_errors:
            raise self.commit_errors.pop(0)
        self.committed.update(offsets)

    async def stop(self) -> None:
        await asyncio.sleep(0)
        self.left = True


@dataclass
class FakeProducer:
    """Keeps what is produced; refuses values over ``max_bytes`` like aiokafka does."""

    max_bytes: int = 16 * 1024 * 1024
    errors: list[BaseException] = field(default_factory=list)
    sent: list[tuple[str, bytes | None, bytes | None]] = field(default_factory=list)
    stopped: bool = False

    async def send_and_wait(self, topic: str, value: bytes | None = None,
                            key: bytes | None = None, partition: int | None = None,
                            timestamp_ms: int | None = None,
                            headers: Any = None) -> None:
        await asyncio.sleep(0)
        if self.errors:
            raise self.errors.pop(0)
        if value is not None and len(value) > self.max_bytes:
            raise MessageSizeTooLargeError(f"The message is {len(value)} bytes")
        self.sent.append((topic, value, key))

    async def stop(self) -> None:
        self.stopped = True

    def reports(self) -> list[Any]:
        """The decoded records sent to the reports topic."""
        return [codec.decode(v) for t, v, _ in self.sent if t.endswith(".reports")]


async def outbox(producer: FakeProducer, max_output_bytes: int = 1024 * 1024,
                 *more: FakeProducer) -> Outbox:
    """A started outbox over ``producer`` (then ``more`` when it is replaced), to
    ``t.reports``, with millisecond backoffs."""
    producers = iter([producer, *more])

    async def connect() -> FakeProducer:
        return next(producers)

    box = Outbox(connect, "t.reports", max_output_bytes, backoff_s=0.001, max_backoff_s=0.004)
    await box.start()
    return box


async def wait_until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll ``check`` on the loop until it holds. Raises ``AssertionError`` on timeout."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def serving(worker: Worker, consumer: FakeConsumer,
                  producer: FakeProducer) -> AsyncIterator[asyncio.Task[None]]:
    """Run ``worker.serve`` over the fakes in the background; at the end, check that it
    is still running, then stop it."""
    box = await outbox(producer, worker.settings.max_output_bytes)
    intake = Intake(consumer, worker.settings.concurrency)  # type: ignore[arg-type]
    served = asyncio.create_task(worker.serve(intake, box))
    try:
        yield served
        assert not served.done(), served  # the worker is alive
    finally:
        served.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await served


class Sent(list[ev.Report]):
    """The reports an attempt sent (the ``send`` of :func:`make_attempt`)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__()
        self.delay_s = delay_s

    async def __call__(self, report: ev.Report) -> bool:
        await asyncio.sleep(self.delay_s)
        codec.encode(report)  # it must fit its schema
        self.append(report)
        return True

    def of(self, kind: type[Any]) -> list[Any]:
        """The sent reports of type ``kind``."""
        return [r for r in self if isinstance(r, kind)]


def make_attempt(d: ev.TaskDispatched, executor: Executor, sent: Sent | None = None,
                 max_output_bytes: int = 1024 * 1024) -> Attempt:
    """An attempt of ``d`` whose reports go to ``sent`` (a fresh :class:`Sent` if None)."""
    return Attempt(d, sent if sent is not None else Sent(), executor, max_output_bytes)


def started(producer: FakeProducer) -> list[str]:
    """Workflow ids of the ``TaskStarted`` reports, in order."""
    return [r.workflow_id for r in producer.reports() if isinstance(r, ev.TaskStarted)]


def outcomes(producer: FakeProducer) -> dict[str, Any]:
    """Workflow id -> its outcome report."""
    return {r.workflow_id: r for r in producer.reports()
            if isinstance(r, ev.TaskSucceeded | ev.TaskFailed)}
