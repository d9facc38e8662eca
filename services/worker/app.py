"""Wires a worker: consume dispatches of one queue, run them, report, commit.

Every dispatch taken ends in an acknowledged report (the outcome, or a ``TaskFailed``
standing in for one that cannot be sent), after which its offset may be committed; task
code cannot stop the worker, and the poll loop never waits on it (``intake``).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from concurrent.futures import ThreadPoolExecutor

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from headwater import codec
from headwater import events as ev
from headwater.errors import DecodeError
from headwater.sdk import REGISTRY
from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER
from services.common.kafka import ensure_topics, make_producer
from services.worker.intake import Intake
from services.worker.outbox import Outbox, Producer
from services.worker.progress import ProgressReporter
from services.worker.reports import clean_text
from services.worker.runner import now_ms, run_attempt
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")


class Worker:
    """One worker process of one queue's consumer group.

    Args:
        settings: the queue, task modules, concurrency and Kafka settings.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topic = settings.topics.tasks(settings.queue)
        self.executor = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="task")
        self.completed = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.intake: Intake
        self.outbox: Outbox

    async def run(self) -> None:
        """Connect, serve the queue until cancelled, then leave the group and disconnect."""
        self._import_tasks()
        await ensure_topics(self.settings, [self.topic, self.settings.topics.reports,
                                            self.settings.topics.dlq])
        outbox = Outbox(self._connect_producer, self.settings.topics.reports,
                        self.settings.max_output_bytes)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.bootstrap,
            group_id=self.settings.topics.worker_group(self.settings.queue),
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=self.settings.max_message_bytes,
            fetch_max_bytes=self.settings.max_message_bytes * 4,
            max_poll_interval_ms=self.settings.max_poll_interval_ms,
        )
        intake = Intake(consumer, self.settings.concurrency)
        await outbox.start()
        try:
            consumer.subscribe([self.topic], listener=intake.listener)
            await consumer.start()
            try:
                log.info("worker %s serving %s", self.settings.worker_id, self.topic)
                await self.serve(intake, outbox)
            finally:
                await consumer.stop()
        finally:
            await outbox.stop()
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def serve(self, intake: Intake, outbox: Outbox) -> None:
        """Take dispatches, run them, report and commit, until cancelled; then cancel the
        running attempts (their dispatches stay uncommitted) and commit what finished.

        Args:
            intake: over a started consumer subscribed with ``intake.listener``.
            outbox: a started outbox (where reports and dead letters go).
        """
        self.intake = intake
        self.outbox = outbox
        try:
            while True:
                for tp, record in await intake.take():
                    task = asyncio.create_task(self._process(tp, record))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                await intake.commit()
        finally:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await intake.commit()

    async def _connect_producer(self) -> Producer:
        producer = make_producer(self.settings, linger_ms=2)
        try:
            await producer.start()
        except BaseException:
            await producer.stop()
            raise
        return producer  # type: ignore[no-any-return]

    def _import_tasks(self) -> None:
        for module in self.settings.task_modules:
            importlib.import_module(module)
        mine = sorted(n for n, t in REGISTRY.items() if t.queue == self.settings.queue)
        others = sorted(f"{n} ({t.queue})" for n, t in REGISTRY.items()
                        if t.queue != self.settings.queue)
        log.info("tasks for queue %s: %s", self.settings.queue, ", ".join(mine) or "none")
        if others:
            log.warning("tasks declared for other queues, not served here: %s", ", ".join(others))

    async def _process(self, tp: TopicPartition, record: ConsumerRecord) -> None:
        finished = False
        try:
            await self._handle(record)
            finished = True
        except Exception:
            log.exception("could not report on %s offset %d; it stays uncommitted and will "
                          "be delivered again", tp, record.offset)
        finally:
            self.intake.done(tp, record.offset, finished)

    async def _handle(self, record: ConsumerRecord) -> None:
        try:
            dispatch = codec.decode(record.value)
            if not isinstance(dispatch, ev.TaskDispatched):
                raise DecodeError(f"{type(dispatch).__name__} is not a TaskDispatched")
        except DecodeError as e:
            await self._dead_letter(record, str(e))
            return
        base = (dispatch.workflow_id, dispatch.node, dispatch.index, dispatch.attempt)
        await self.outbox.report(ev.TaskStarted(*base, now_ms(), self.settings.worker_id))
        reporter = ProgressReporter(asyncio.get_running_loop(), base, self.outbox.report)
        outcome = await run_attempt(dispatch, reporter.report, self.executor)
        await reporter.drain()
        await self.outbox.report(outcome)
        self.completed += 1

    async def _dead_letter(self, record: ConsumerRecord, reason: str) -> None:
        reason = clean_text(reason)
        log.warning("dead-lettering a record of %s: %s", self.topic, reason)
        headers = [*list(record.headers or ()), (REASON_HEADER, reason.encode()),
                   (SOURCE_TOPIC_HEADER, self.topic.encode())]
        await self.outbox.dead_letter(self.settings.topics.dlq, record.value, record.key,
                                      headers)
