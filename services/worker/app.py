"""Wires a worker: consume dispatches of one queue, run them, report, commit; and follow
the coordinator's cancels.

A taken dispatch is skipped without running when its attempt was cancelled already, or
runs or ran here; otherwise it runs (``lifecycle``): its offset becomes committable
once its ``TaskStarted`` is acknowledged (committed in the background, ``commits``),
and its slot is freed when the attempt has ended. Task code cannot stop the worker, and
the poll loop never waits on it nor on a commit (``intake``), which takes the waiting
dispatch of the highest priority first (``held``).
Besides ``tasks.<queue>``, it reads its priority topics, lanes and selector topics
(``subscriptions``). Values over the blob threshold go by reference
(``payloads``), through one ``Claims`` per worker, whose store opens on the first such
value. A second consumer, without a group, reads ``worker-control`` (``control``) and
stops the attempts the coordinator cancelled. :meth:`Worker.stop` drains (``drain``);
cancelling ``run`` stops at once. What task code logs and prints goes to its attempt's
log too (``task_logs``), sent to the ``logs`` topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from headwater import codec
from headwater.announcement import AnnouncedWorkflow
from headwater.core import events as ev
from headwater.errors import DecodeError
from headwater.log_lines import TaskLogLines
from headwater.sdk import REGISTRY
from headwater.topics import REASON_HEADER, SOURCE_TOPIC_HEADER
from services.common.blobs.claims import Claims
from services.common.kafka.client import ensure_topics, make_producer, started
from services.common.kafka.security import aiokafka_security
from services.common.logs_topic import ensure_logs_topic
from services.common.metrics import DEAD_LETTERS
from services.common.probes import PROBES
from services.worker.announce import Announcer, ensure_workers_topic
from services.worker.attempt import Attempt, AttemptKey, attempt_key
from services.worker.control import ControlListener, RecentAttempts
from services.worker.drain import drain
from services.worker.held import Ranking
from services.worker.intake import Intake
from services.worker.lanes import Lanes, own_versions
from services.worker.lifecycle import live
from services.worker.outbox import Outbox, Producer
from services.worker.reports import clean_text
from services.worker.selectors import Selectors
from services.worker.settings import Settings
from services.worker.subscriptions import Subscriptions
from services.worker.task_logs import capture
from services.worker.task_logs.attempt_log import AttemptLog
from services.worker.workflows import pin_children, served_workflows

log = logging.getLogger("headwater.worker")


class Worker:
    """One worker process of one queue's consumer group.

    Args:
        settings: the queue, task modules, concurrency and Kafka settings.

    Attributes:
        running: the attempts running here, by ``(workflow_id, node, index, attempt)``.
        cancelled: attempts the coordinator cancelled lately.
        finished: attempts that ended here lately, their outcome acknowledged.
        completed: attempts that ended with a reported outcome.
        serving: True once :meth:`serve` takes dispatches.
        stopping: True once :meth:`stop` was called.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topic = settings.topics.tasks(settings.queue)
        self.executor = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="task")
        self.completed = 0
        self.running: dict[AttemptKey, Attempt] = {}
        self.cancelled = RecentAttempts()
        self.finished = RecentAttempts()
        self.unsettled: dict[AttemptKey, list[tuple[TopicPartition, int]]] = {}
        """Attempts running here whose dispatch still needs redelivery (their
        ``TaskStarted`` not acknowledged yet) -> the copies of it delivered since
        (a rebalance), committable with it and not before."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.serving = False
        self.stopping = False
        self.intake: Intake
        self.outbox: Outbox
        self.announcer: Announcer | None = None
        self.workflows: tuple[AnnouncedWorkflow, ...] = ()
        self.claims = Claims.from_settings(settings)
        """Where values over the blob threshold go (``payloads``): the store is opened
        on the first one."""

    async def run(self) -> None:
        """Connect, serve the queue until :meth:`stop` (drained) or cancelled (at once),
        then leave the group and disconnect."""
        self._import_tasks()
        self.workflows = served_workflows(self.settings.queue, self.settings.code_version)
        pin_children(self.settings.code_version)  # a wf.call's child runs on this code
        own = own_versions(self.workflows)
        reads = Subscriptions(self.settings, self.topic,
                              Lanes(self.settings, own) if own else None,
                              Selectors(self.settings) if self.settings.tags else None)
        await ensure_topics(self.settings, [self.topic, self.settings.topics.reports,
                                            self.settings.topics.dlq,
                                            self.settings.topics.worker_control])
        await ensure_workers_topic(self.settings)
        await ensure_logs_topic(self.settings)
        outbox = Outbox(self._connect_producer, self.settings.topics.reports,
                        self.settings.max_output_bytes)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.bootstrap,
            **aiokafka_security(self.settings.kafka_security),
            group_id=self.settings.topics.worker_group(self.settings.queue),
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=self.settings.max_message_bytes,
            fetch_max_bytes=self.settings.max_message_bytes * 4,
            max_poll_interval_ms=self.settings.max_poll_interval_ms,
            fetch_max_wait_ms=self.settings.fetch_wait_ms,
        )
        intake = Intake(consumer, self.settings.concurrency,
                        Ranking(self.settings.topics, self.settings.priority_aging_s),
                        fetch_wait_ms=self.settings.fetch_wait_ms)
        intake.part = PROBES.part(f"worker {self.settings.queue}")
        await outbox.start()
        uncapture = capture.install()
        try:
            # Announced before its lanes are created: a peer that finds a lane finds
            # its workers' announcement too (``lanes``).
            async with self._following_cancels(), self._announcing(), reads.watching():
                reading = reads.reading()
                consumer.subscribe(reading, listener=intake.listener)
                async with started(consumer):
                    log.info("worker %s serving %s", self.settings.worker_id,
                             ", ".join(reading))
                    async with reads.adopting(intake, lambda: self.stopping):
                        await self.serve(intake, outbox)
        finally:
            uncapture()
            await outbox.stop()
            with contextlib.suppress(Exception):
                await self.claims.close()
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def serve(self, intake: Intake, outbox: Outbox) -> None:
        """Take dispatches, run them, report and commit, until :meth:`stop` or a cancel.

        Offsets are committed in the background meanwhile (``commits``), and once more,
        awaited, at the end.

        After :meth:`stop`, drain (``drain``): take nothing more, leave the group, let
        the running attempts end for up to ``settings.drain_s``. Then, or at once when
        cancelled, stop the attempts still running (reporting the started ones as
        failed) and commit.

        Args:
            intake: over a started consumer subscribed with ``intake.listener``.
            outbox: a started outbox (where reports and dead letters go).

        Raises:
            asyncio.CancelledError: cancelled (stopped at once).
        """
        self.intake = intake
        self.outbox = outbox
        self.serving = True
        try:
            async with intake.committing():  # in the background: the loop never waits
                while not self.stopping:
                    for tp, record in await intake.take():
                        taken_at_s = time.monotonic()  # its timeout counts from here
                        task = asyncio.create_task(self._process(tp, record, taken_at_s))
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
                await drain(intake, set(self._tasks), self.settings.drain_s,
                            self.settings.worker_id)
        finally:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await intake.commit()

    def stop(self) -> None:
        """Drain and stop (SIGTERM): :meth:`serve` takes nothing more and returns once
        the running attempts ended or the drain window is over."""
        self.stopping = True
        PROBES.drain(f"worker {self.settings.queue} draining")
        if self.announcer is not None:
            self.announcer.mark_stopping()
        if self.serving:
            self.intake.stop_taking()  # wakes a poll loop waiting for a free slot

    def cancel(self, cancelled: ev.TaskCancelled) -> None:
        """Stop the attempt ``cancelled`` names if it runs here, and remember it, so that
        its dispatch is skipped if it comes later."""
        key = attempt_key(cancelled)
        self.cancelled.add(key)
        attempt = self.running.get(key)
        if attempt is not None and attempt.cancel(cancelled.reason):
            log.info("stopping %s (%s): cancelled by the coordinator%s",
                     attempt.dispatch.dispatch_id, attempt.dispatch.task,
                     f" ({cancelled.reason})" if cancelled.reason else "")

    @contextlib.asynccontextmanager
    async def _following_cancels(self) -> AsyncIterator[None]:
        """Read ``worker-control`` (from its end now) in the background meanwhile."""
        consumer = AIOKafkaConsumer(bootstrap_servers=self.settings.bootstrap,
                                    **aiokafka_security(self.settings.kafka_security),
                                    group_id=None, enable_auto_commit=False,
                                    auto_offset_reset="latest")
        await consumer.start()
        try:
            listener = ControlListener(consumer, self.settings.topics.worker_control,
                                       self.cancel)
            await listener.start()
            reader = asyncio.create_task(listener.run())
            try:
                yield
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        finally:
            await consumer.stop()

    @contextlib.asynccontextmanager
    async def _announcing(self) -> AsyncIterator[None]:
        """Announce this worker on the workers topic meanwhile (``announce``)."""
        served = [n for n, t in REGISTRY.items() if t.queue == self.settings.queue]
        self.announcer = Announcer(self.settings, served, lambda: len(self.running),
                                   self.workflows)
        try:
            async with self.announcer:
                yield
        finally:
            self.announcer = None

    async def _connect_producer(self) -> Producer:
        # No linger: each report is awaited before the attempt moves on (TaskStarted
        # before the task runs, its outcome before its slot frees), so a linger is paid
        # on every one; under load reports still share requests, since aiokafka
        # gathers what comes while its request to the broker is in flight.
        producer = make_producer(self.settings)
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

    async def _process(self, tp: TopicPartition, record: ConsumerRecord,
                       taken_at_s: float) -> None:
        try:
            await self._handle(tp, record, taken_at_s)
        except Exception:
            log.exception("could not report on %s offset %d; unless its TaskStarted was "
                          "acknowledged, it stays uncommitted and will be delivered again",
                          tp, record.offset)
        finally:
            self.intake.release()

    async def _handle(self, tp: TopicPartition, record: ConsumerRecord,
                      taken_at_s: float) -> None:
        def committable() -> None:
            self.intake.committable(tp, record.offset)

        try:
            dispatch = codec.decode(record.value)
            if not isinstance(dispatch, ev.TaskDispatched):
                raise DecodeError(f"{type(dispatch).__name__} is not a TaskDispatched")
        except DecodeError as e:
            await self._dead_letter(record, str(e))
            committable()
            return
        if self._skipped(dispatch):
            self._skip(attempt_key(dispatch), tp, record.offset)
            return
        attempt = Attempt(dispatch, self.outbox.report, self.executor,
                          self.settings.max_output_bytes, taken_at_s)
        attempt.claims = self.claims
        attempt.trace(record.headers, record.topic)  # the dispatch's trace, if any
        attempt.log = AttemptLog(attempt.key, self.settings.task_log, self._ship_log)
        self.running[attempt.key] = attempt
        copies: list[tuple[TopicPartition, int]] = []
        self.unsettled[attempt.key] = copies
        try:
            await live(attempt, self.settings.worker_id,
                       lambda: self._settled(attempt.key, copies, committable))
        finally:
            if self.running.get(attempt.key) is attempt:
                del self.running[attempt.key]
            if self.unsettled.get(attempt.key) is copies:
                del self.unsettled[attempt.key]  # left uncommitted: delivered again
        if not attempt.cancelled:
            self.completed += 1
            self.finished.add(attempt.key)  # its outcome (or a stand-in) was acknowledged

    def _skip(self, key: AttemptKey, tp: TopicPartition, offset: int) -> None:
        """A skipped dispatch's offset becomes committable: at once, or, for a copy of
        one whose attempt runs here and still needs it delivered again (a rebalance
        gave it back before its ``TaskStarted`` was acknowledged), with that attempt's
        own (``_settled``). Committed at once, a worker dying then would leave the
        attempt started nowhere and its dispatch delivered to no other worker."""
        copies = self.unsettled.get(key)
        if copies is not None and key not in self.cancelled:
            copies.append((tp, offset))
        else:
            self.intake.committable(tp, offset)

    def _settled(self, key: AttemptKey, copies: list[tuple[TopicPartition, int]],
                 committable: Callable[[], None]) -> None:
        """The dispatch of attempt ``key`` needs no redelivery: its offset and those of
        its copies taken since (``_skip``) become committable."""
        committable()
        if self.unsettled.get(key) is copies:
            del self.unsettled[key]
        for tp, offset in copies:
            self.intake.committable(tp, offset)

    async def _ship_log(self, lines: TaskLogLines) -> None:
        await self.outbox.log_lines(self.settings.topics.logs, lines)

    def _skipped(self, dispatch: ev.TaskDispatched) -> bool:
        """Whether not to run ``dispatch`` at all (logged): its attempt was cancelled, or
        it already runs or ran here (a redelivery)."""
        if attempt_key(dispatch) in self.cancelled:
            log.info("skipping %s (%s): cancelled by the coordinator",
                     dispatch.dispatch_id, dispatch.task)
            return True
        if attempt_key(dispatch) in self.running:
            # Delivered again after a rebalance, before its offset was committed.
            log.info("skipping %s (%s): it is already running here",
                     dispatch.dispatch_id, dispatch.task)
            return True
        if attempt_key(dispatch) in self.finished:
            # Delivered again (a rebalance, or a coordinator that carried out its last
            # batch again after a crash): the coordinator has, or will have, its outcome.
            log.info("skipping %s (%s): it already ran here", dispatch.dispatch_id,
                     dispatch.task)
            return True
        # Not compared: the dispatch's deadline (the coordinator's clock) with this
        # machine's clock, which may be minutes off. An attempt whose deadline passed on
        # the queue is told to stop in answer to its TaskStarted (fencing.stop_for).
        return False

    async def _dead_letter(self, record: ConsumerRecord, reason: str) -> None:
        reason = clean_text(reason)
        log.warning("dead-lettering a record of %s: %s", record.topic, reason)
        headers = [*list(record.headers or ()), (REASON_HEADER, reason.encode()),
                   (SOURCE_TOPIC_HEADER, record.topic.encode())]
        DEAD_LETTERS.labels(self.topic).inc()  # the queue's: one label for its lanes too
        await self.outbox.dead_letter(self.settings.topics.dlq, record.value, record.key,
                                      headers)
