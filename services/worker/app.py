"""Wires a worker: consume dispatches of one queue, run them, report, commit."""

from __future__ import annotations

import asyncio
import importlib
import logging
from concurrent.futures import ThreadPoolExecutor

from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    TopicPartition,
)

from headwater import codec
from headwater import events as ev
from headwater.errors import DecodeError
from headwater.sdk import REGISTRY
from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER
from services.common.kafka import AVRO_HEADERS, ensure_topics, make_producer
from services.worker.offsets import OffsetTracker
from services.worker.progress import ProgressReporter
from services.worker.runner import now_ms, run_attempt
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")


class Worker:
    """One worker process of one queue's consumer group."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topic = settings.topics.tasks(settings.queue)
        self.tracker: OffsetTracker[TopicPartition] = OffsetTracker()
        self.slots = asyncio.Semaphore(settings.concurrency)
        self.executor = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="task")
        self.completed = 0
        self.running = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.producer: AIOKafkaProducer
        self.consumer: AIOKafkaConsumer

    async def run(self) -> None:
        """Serve the queue until cancelled."""
        for module in self.settings.task_modules:
            importlib.import_module(module)
        mine = sorted(n for n, t in REGISTRY.items() if t.queue == self.settings.queue)
        others = sorted(f"{n} ({t.queue})" for n, t in REGISTRY.items()
                        if t.queue != self.settings.queue)
        log.info("tasks for queue %s: %s", self.settings.queue, ", ".join(mine) or "none")
        if others:
            log.warning("tasks declared for other queues, not served here: %s", ", ".join(others))
        await ensure_topics(self.settings, [self.topic, self.settings.topics.reports,
                                            self.settings.topics.dlq])
        self.producer = make_producer(self.settings, linger_ms=2)
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.bootstrap,
            group_id=self.settings.topics.worker_group(self.settings.queue),
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=self.settings.max_message_bytes,
            fetch_max_bytes=self.settings.max_message_bytes * 4,
        )
        await self.producer.start()
        self.consumer.subscribe([self.topic], listener=_Revoked(self))
        await self.consumer.start()
        log.info("worker %s serving %s", self.settings.worker_id, self.topic)
        try:
            while True:
                await self.slots.acquire()  # wait for a free slot before fetching
                self.slots.release()
                free = self.settings.concurrency - self.running
                batches = await self.consumer.getmany(timeout_ms=100, max_records=max(free, 1))
                for tp, records in batches.items():
                    for record in records:
                        await self.slots.acquire()
                        self.running += 1
                        self.tracker.started(tp, record.offset)
                        task = asyncio.create_task(self._process(tp, record))
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
                await self._commit()
        finally:
            for task in list(self._tasks):
                task.cancel()
            await self.consumer.stop()
            await self.producer.stop()
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def _commit(self) -> None:
        offsets = self.tracker.committable()
        if offsets:
            await self.consumer.commit(offsets)
            self.tracker.mark_committed(offsets)

    async def _process(self, tp: TopicPartition, record: object) -> None:
        try:
            await self._handle(record)
        except Exception:
            log.exception("failed to handle a dispatch; it will be redelivered")
            return  # not marked finished: the offset stays uncommitted
        finally:
            self.running -= 1
            self.slots.release()
        self.tracker.finished(tp, record.offset)  # type: ignore[attr-defined]

    async def _handle(self, record: object) -> None:
        value: bytes = record.value  # type: ignore[attr-defined]
        try:
            dispatch = codec.decode(value)
            if not isinstance(dispatch, ev.TaskDispatched):
                raise DecodeError(f"{type(dispatch).__name__} is not a TaskDispatched")
        except DecodeError as e:
            await self._dead_letter(record, str(e))
            return
        base = (dispatch.workflow_id, dispatch.node, dispatch.index, dispatch.attempt)
        await self._report(ev.TaskStarted(*base, now_ms(), self.settings.worker_id))
        reporter = ProgressReporter(asyncio.get_running_loop(), base, self._report)
        outcome = await run_attempt(dispatch, reporter.report, self.executor)
        await reporter.drain()
        await self._report(outcome)
        self.completed += 1

    async def _report(self, report: ev.Report) -> None:
        await self.producer.send_and_wait(
            self.settings.topics.reports, codec.encode(report),
            key=report.workflow_id.encode(), headers=AVRO_HEADERS)

    async def _dead_letter(self, record: object, reason: str) -> None:
        log.warning("dead-lettering a record of %s: %s", self.topic, reason)
        headers = [*list(record.headers or ()), (REASON_HEADER, reason.encode()),  # type: ignore[attr-defined]
                   (SOURCE_TOPIC_HEADER, self.topic.encode())]
        await self.producer.send_and_wait(
            self.settings.topics.dlq, record.value, key=record.key,  # type: ignore[attr-defined]
            headers=headers)


class _Revoked(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        await self.worker._commit()
        self.worker.tracker.forget(list(revoked))

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        return None
