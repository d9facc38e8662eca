"""A second coordinator taking over half of a running one's partitions (B9's last figure).

A coordinator is started beside the running one, as a static group member of its own,
and from that moment one probe workflow (a task skipped by a false ``when:``, which the
coordinator ends in the submission's own step) is produced on every input partition
every ``PROBE_EVERY_S``. The group then rebalances: every partition pauses (faust's
assignor revokes them all), the newcomer reads its half of the table's changelog, and
only then are its partitions served again.

Probes that end before the group has rebalanced prove nothing (the new process is still
importing, and the old one serves every partition as before), so a partition counts as
taken over at the terminal record of its first probe produced after the group was seen
``Stable`` with both coordinators. The figures, from the start of the second process:
the group stable with both, the first history record after that (the first partition
served again), and every partition served again (the honest figure: a rebalance pauses
them all, and the last one back is when the deployment works as a whole).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from aiokafka import AIOKafkaProducer

from load import workloads
from load.deploy import add_coordinator, ids_on_every_partition, wait_groups
from load.kafka_io import Seen, Tail, end_offsets, producer
from ops.sandbox import Sandbox
from services.common.clock import now_ms
from services.common.partitioning import partition_for

SECOND = "coordinator-2"
"""The service name (and static member id) of the coordinator that takes over."""
PROBE_EVERY_S = 0.2
"""The pause between two rounds of probes, seconds."""
PROBE = "b9-take"
"""The id tag (``workloads.new_id``) of the probes."""


@dataclass
class Takeover:
    """What an events reader saw while a second coordinator joined.

    Attributes:
        partitions: the input partitions, each of which must be served again.
        started_ms: when the second process was started, ms since the epoch.
        stable_ms: when the group was first seen ``Stable`` with both coordinators, ms
            since the epoch (None: not yet).
        first_after_ms: the Kafka timestamp of the first history record later than
            ``stable_ms`` (None: none yet).
        served_ms: partition -> the Kafka timestamp of the terminal record of its first
            probe produced after ``stable_ms``.
        failed: the probes whose end was not ``WorkflowSucceeded``.
    """

    partitions: int
    started_ms: int = 0
    stable_ms: int | None = None
    first_after_ms: int | None = None
    served_ms: dict[int, int] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)
    _probes: dict[str, tuple[int, bool]] = field(default_factory=dict)

    def sent(self, workflow_id: str, partition: int) -> None:
        """Note a probe about to be produced on ``partition`` (after the group's
        rebalance or not, as ``stable_ms`` says now)."""
        self._probes[workflow_id] = (partition, self.stable_ms is not None)

    def unserved(self) -> set[int]:
        """The partitions not yet served again after the rebalance."""
        return set(range(self.partitions)) - set(self.served_ms)

    def done(self) -> bool:
        """Whether every partition was served again, or a probe failed."""
        return not self.unserved() or bool(self.failed)

    def see(self, seen: Seen) -> None:
        """Note one history record (a ``Tail``'s ``on_record``)."""
        if (self.stable_ms is not None and self.first_after_ms is None
                and seen.timestamp_ms > self.stable_ms):
            self.first_after_ms = seen.timestamp_ms
        event = seen.value
        probe = self._probes.get(event.workflow_id)
        if probe is None or not event.terminal:
            return
        if event.type != "WorkflowSucceeded":
            self.failed.add(event.workflow_id)
        partition, after = probe
        if after:
            self.served_ms.setdefault(partition, seen.timestamp_ms)


def takeover_figures(seen: Takeover) -> tuple[float, float, float]:
    """``(group, first, all)``, seconds from the second process's start: to the group
    seen stable with both coordinators, to the first history record after that, and to
    the last partition's first post-rebalance probe ended.

    Raises:
        RuntimeError: a probe did not succeed, or the takeover was not seen through.
    """
    if seen.failed:
        raise RuntimeError(f"B9: {len(seen.failed)} takeover probes did not succeed, e.g. "
                           f"{sorted(seen.failed)[0]}")
    stable, first = seen.stable_ms, seen.first_after_ms
    if stable is None or first is None or seen.unserved():
        raise RuntimeError(f"B9: the takeover was not seen through (group stable: {stable}, "
                           f"partitions not served again: {sorted(seen.unserved())})")
    start = seen.started_ms
    return ((stable - start) / 1000, (first - start) / 1000,
            (max(seen.served_ms.values()) - start) / 1000)


async def takeover(sandbox: Sandbox, spec: workloads.Spec, timeout_s: float,
                   probe_input: object = workloads.SKIP) -> tuple[float, float, float]:
    """Start a second coordinator beside the running one and probe every partition until
    each is served again after the rebalance.

    Args:
        sandbox: a ready deployment with one coordinator (``deploy.COORDINATOR``).
        spec: the probes' spec, a workflow that ends without a worker
            (``workloads.skipped``).
        timeout_s: the longest from the start to every partition served again, seconds.
        probe_input: the probes' input (``workloads.SKIP``).

    Returns:
        ``takeover_figures``: seconds from the start to the group stable with both, to
        the first history record after that, and to every partition served again.

    Raises:
        TimeoutError: the group did not settle, or a partition was not served again,
            within ``timeout_s``.
        RuntimeError: a probe did not succeed.
    """
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    seen = Takeover(len(await end_offsets(bootstrap, sandbox.topics.submissions)))
    tail = Tail(bootstrap, sandbox.topics.events, on_record=seen.see, keep=False)
    await tail.start()
    send = producer(bootstrap)
    await send.start()
    tasks: list[asyncio.Task[None]] = []
    try:
        seen.started_ms = now_ms()
        add_coordinator(sandbox, SECOND)
        tasks += [asyncio.create_task(_group(sandbox, seen, timeout_s)),
                  asyncio.create_task(_probe(send, sandbox, seen, spec, probe_input))]
        try:
            await tail.wait_until(lambda: seen.done() or any(t.done() for t in tasks),
                                  timeout_s, f"B9: every partition served again after "
                                  f"{SECOND} started")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; group stable with both: {seen.stable_ms is not None}, "
                               f"partitions not served again: {sorted(seen.unserved())}") from e
        for t in tasks:  # a failed group wait or probe loop is the error to report
            if t.done():
                t.result()
    finally:
        for t in tasks:
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # raised above
                await t
        await send.stop()
        await tail.stop()
    return takeover_figures(seen)


async def _group(sandbox: Sandbox, seen: Takeover, timeout_s: float) -> None:
    """Note when the coordinators' group is first seen stable with both members; runs
    on (idle) until cancelled, so that its ending means it failed."""
    await wait_groups(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"],
                      {sandbox.topics.coordinator_app_id: 2}, timeout_s)
    seen.stable_ms = now_ms()
    await asyncio.Event().wait()


async def _probe(send: AIOKafkaProducer, sandbox: Sandbox, seen: Takeover,
                 spec: workloads.Spec, probe_input: object) -> None:
    """Produce one probe on every partition not yet served again, every
    ``PROBE_EVERY_S``, until cancelled."""
    while True:
        ids = [wid for wid in ids_on_every_partition(PROBE, seen.partitions)
               if _partition(wid, seen.partitions) in seen.unserved()]
        for wid in ids:
            seen.sent(wid, _partition(wid, seen.partitions))
        await workloads.submit_all(send, sandbox.topics, ids, spec, probe_input)
        await asyncio.sleep(PROBE_EVERY_S)


def _partition(workflow_id: str, partitions: int) -> int:
    """The input partition of ``workflow_id`` (murmur2 of its key, as Kafka's)."""
    return partition_for(workflow_id.encode(), partitions)
