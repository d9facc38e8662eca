"""Filling a deployment's table with many workflows, cheaply but through the real
coordinator, and measuring its changelog (B9, ``load.b9_table``; the fault suite's
large-table scenario, ``faultsuite.table``).

Two kinds of workflows (``Kinds``): finished ones, each a task skipped by a false
``when:`` (``workloads.skipped``), which the coordinator finishes in the submission's
own step, with no worker; and waiting ones, a wait for a signal (``workloads.waiting``)
that stays in the table unfinished until it is sent. Both are produced straight to the
submissions topic, pipelined (``workloads.submit_all``), then waited for on the events
topic until each reached its state (``Filled``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from load import workloads
from load.deploy import changelog
from load.kafka_io import Seen, Tail, begin_offsets, end_offsets, producer, range_bytes
from ops.sandbox import Sandbox
from services.common.clock import now_ms

FINISHED_EVENT, WAITING_EVENT = "WorkflowSucceeded", "WaitStarted"
"""The history event at which a finished and a waiting workflow reached its state."""


@dataclass(frozen=True)
class Kinds:
    """The two kinds of workflows of a fill.

    Attributes:
        finished: the id tag (``workloads.new_id``) of the finished workflows.
        waiting: the id tag of the waiting workflows.
        finished_spec: their spec (``workloads.skipped``: submitted with
            ``workloads.SKIP``, it finishes at once).
        waiting_spec: their spec (``workloads.waiting``).
    """

    finished: str
    waiting: str
    finished_spec: workloads.Spec
    waiting_spec: workloads.Spec

    def reached(self, tag: str | None) -> str | None:
        """The history event type at which a workflow of ``tag`` reached its state, or
        None (not a tag of this fill)."""
        return {self.finished: FINISHED_EVENT, self.waiting: WAITING_EVENT}.get(tag or "")


@dataclass
class Filled:
    """What the events reader saw of the fill.

    Attributes:
        kinds: the fill's kinds.
        counts: tag -> workflows of it that reached their state (``Kinds.reached``).
        last_ms: the latest Kafka timestamp among those records, ms since the epoch.
        wrong: the first records that should not be there (a dispatch or another end of
            a finished workflow; any end of a waiting one), as ``"<id> <type>"``.
    """

    kinds: Kinds
    counts: Counter[str] = field(default_factory=Counter)
    last_ms: int = 0
    wrong: list[str] = field(default_factory=list)

    def see(self, seen: Seen) -> None:
        """Note one history record (a ``Tail``'s ``on_record``)."""
        event = seen.value
        tag = tag_of(event.workflow_id)
        reached = self.kinds.reached(tag)
        if tag is None or reached is None:
            return
        if event.type == reached:
            self.counts[tag] += 1
            self.last_ms = max(self.last_ms, seen.timestamp_ms)
        elif (event.terminal or event.type == "TaskDispatched") and len(self.wrong) < 10:
            self.wrong.append(f"{event.workflow_id} {event.type}")


def tag_of(workflow_id: str) -> str | None:
    """The tag of a ``workloads.new_id`` id (``bench-<tag>-<hex>``), or None."""
    head, _, _ = workflow_id.rpartition("-")
    return head.removeprefix("bench-") if head.startswith("bench-") else None


class Fill:
    """Fills a deployment's table: submissions produced pipelined, then waited for on
    the events topic until each workflow reached its state (``Filled``).

    Attributes:
        sandbox: the deployment.
        kinds: what it fills with.
        window: submissions in flight at once.
        seen: what the events reader saw.
        ids: tag -> the ids submitted so far, in order.
        spent_ms: milliseconds of filling so far (first submission → last record, per
            step).
    """

    def __init__(self, sandbox: Sandbox, kinds: Kinds, window: int) -> None:
        self.sandbox = sandbox
        self.kinds = kinds
        self.window = window
        self.seen = Filled(kinds)
        self.ids: dict[str, list[str]] = {kinds.finished: [], kinds.waiting: []}
        self.spent_ms = 0

    @property
    def finished(self) -> int:
        """The finished workflows filled so far."""
        return self.seen.counts[self.kinds.finished]

    def rate_per_s(self) -> float:
        """Workflows filled per second of filling so far (first submission → last
        record of each step)."""
        return sum(self.seen.counts.values()) * 1000 / max(self.spent_ms, 1)

    async def add_finished(self, count: int, timeout_s: float) -> None:
        """Add ``count`` workflows that finish at once (``Kinds.finished_spec``)."""
        await self._add(self.kinds.finished, self.kinds.finished_spec, count, timeout_s)

    async def add_waiting(self, count: int, timeout_s: float) -> None:
        """Add ``count`` workflows that wait for a signal (``Kinds.waiting_spec``)."""
        await self._add(self.kinds.waiting, self.kinds.waiting_spec, count, timeout_s)

    async def _add(self, tag: str, spec: workloads.Spec, count: int, timeout_s: float) -> None:
        """Submit ``count`` workflows of ``tag`` and wait until each reached its state.

        Raises:
            TimeoutError: not all did within ``timeout_s``.
            RuntimeError: a workflow was dispatched or ended otherwise.
        """
        if count <= 0:
            return
        bootstrap = self.sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
        seen = self.seen
        target = seen.counts[tag] + count
        ids = [workloads.new_id(tag) for _ in range(count)]
        self.ids[tag] += ids
        tail = Tail(bootstrap, self.sandbox.topics.events, on_record=seen.see, keep=False)
        await tail.start()
        send = producer(bootstrap, linger_ms=5)
        await send.start()
        started = now_ms()
        try:
            await workloads.submit_all(send, self.sandbox.topics, ids, spec,
                                       workloads.SKIP if tag == self.kinds.finished else None,
                                       self.window)
            await tail.wait_until(lambda: seen.counts[tag] >= target or bool(seen.wrong),
                                  timeout_s, f"filling {count:,} {tag} workflows")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; {seen.counts[tag]:,} of {target:,} recorded") from e
        finally:
            await send.stop()
            await tail.stop()
        if seen.wrong:
            raise RuntimeError(f"filling {tag} workflows, unexpected records: "
                               f"{', '.join(seen.wrong)}")
        self.spent_ms += seen.last_ms - started


async def changelog_size(sandbox: Sandbox, timeout_s: float) -> tuple[int, int]:
    """The table changelog's size: records between its begin and end offsets (those
    compaction removed within the range included), and the key and value bytes of the
    records it still holds (what a restarted coordinator reads).

    Raises:
        TimeoutError: the topic was not read within ``timeout_s``.
    """
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    topic = changelog(sandbox)
    begin = await begin_offsets(bootstrap, topic, timeout_s)
    end = await end_offsets(bootstrap, topic, timeout_s)
    held, _ = await range_bytes(bootstrap, topic, begin, end, timeout_s)
    return sum(end.values()) - sum(begin.values()), held
