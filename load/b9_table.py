"""B9, table size: how a coordinator's restart time and memory grow with the workflows its
table holds, with the coordinator's default store (``rocksdb://``: a restart reads its
changelog's tail; with ``HEADWATER_TABLE_STORE=memory://`` set in the environment, the
whole changelog before it decides anything).

One deployment, one coordinator. First ``waiting`` workflows that wait for a signal that
never comes (``workloads.waiting``), then finished ones in steps up to each size of
``finished`` (the table only grows): each a task skipped by a false ``when:``
(``workloads.skipped``), which the coordinator finishes in the submission's own step,
with no worker. Both are produced straight to the submissions topic, pipelined
(``load.table``).

At each size, with the coordinator idle (and ``deploy.IDLE_WAIT_S`` later, past its
next trim, so that it has given back the memory its work freed, as it does while idle;
``--quick`` waits less):
its RSS (``VmRSS``), and the changelog's records (end minus begin offsets) and bytes (keys
and values of the records still held). Then the coordinator is SIGKILLed and started
again at once, and one probe workflow (the skipped task again) is produced on every input
partition: kill → the first history record with a later Kafka timestamp (the new
process's first progress), kill → every probe ended, and the RSS once idle again.

With the table at its largest, the coordinator is SIGKILLed once more, its data directory
(the local store) deleted, and started again, probed as above: a fresh node, which reads
its partitions' whole changelog. Then a second coordinator is
started beside the first and takes over half the partitions (``load.takeover``): start →
the group stable with both, → the first history record after that, → every partition
served again.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass

from load import workloads
from load.b7_recovery import Progress
from load.deploy import (
    COORDINATOR,
    IDLE_WAIT_S,
    deployment,
    idle_rss_mib,
    ids_on_every_partition,
    kill,
    ready,
    start_coordinator,
    wait_idle,
)
from load.kafka_io import Tail, end_offsets, producer
from load.metrics import Basis, Metric, keeping
from load.table import Fill, Kinds, changelog_size
from load.takeover import SECOND, takeover
from ops.sandbox import Sandbox
from services.common.clock import now_ms

NAME = "B9"
TITLE = "restart time and RSS by table size"
FINISHED, WAITING, PROBE = "b9-done", "b9-wait", "b9-probe"
"""The id tags (``workloads.new_id``) of the finished, the waiting and the probe
workflows."""
DONE_SPEC, WAIT_SPEC = "bench-b9-done", "bench-b9-wait"
"""The spec names: a finished workflow and a probe (``workloads.skipped``), a waiting
workflow (``workloads.waiting``)."""
KINDS = Kinds(FINISHED, WAITING, workloads.skipped(DONE_SPEC), workloads.waiting(WAIT_SPEC))
"""What B9 fills its table with (``load.table``)."""
log = logging.getLogger("load.b9")


@dataclass(frozen=True)
class Sizes:
    """How much B9 does.

    Attributes:
        finished: finished workflows in the table at each measurement, smallest first.
        waiting: workflows waiting for a signal, filled once before the first size.
        window: submissions in flight at once while filling.
        workers: worker processes (the fill needs none; the deployment wants one).
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``).
        timeout_s: the longest a restart (kill → every probe ended), the takeover (start
            → every partition served again), a wait for the coordinator to be idle, or
            reading the changelog may take, seconds.
        fill_min_per_s: the slowest fill accepted: filling ``n`` workflows may take
            ``timeout_s + n / fill_min_per_s`` seconds.
        idle_wait_s: how long the coordinator is left idle before each idle RSS is read,
            seconds (``deploy.idle_rss_mib``).
    """

    finished: tuple[int, ...]
    waiting: int
    window: int = 1000
    workers: int = 1
    concurrency: int = 8
    timeout_s: float = 300.0
    fill_min_per_s: float = 20.0
    idle_wait_s: float = IDLE_WAIT_S

    def fill_timeout_s(self, count: int) -> float:
        """The longest filling ``count`` workflows may take, seconds."""
        return self.timeout_s + count / self.fill_min_per_s


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures B9 reports for ``sizes.finished``."""
    out = [Metric("fill_per_s", "filling: workflows recorded per second (pipelined "
                  "submissions, no worker)", "/s", Basis.NONE)]
    for n in sizes.finished:
        table = f"{n:,} finished + {sizes.waiting:,} waiting"
        out += [
            Metric(f"restart_first_record_s_{n}", f"{table}: SIGKILL → first new history "
                   "record", "s", Basis.NONE),
            Metric(f"restart_all_probes_s_{n}", f"{table}: SIGKILL → a probe on every "
                   "partition ended", "s", Basis.NONE),
            Metric(f"rss_before_mb_{n}", f"{table}: coordinator RSS, idle, before the kill",
                   "MiB", Basis.NONE),
            Metric(f"rss_after_mb_{n}", f"{table}: coordinator RSS, idle, after the restart",
                   "MiB", Basis.NONE),
            Metric(f"changelog_records_{n}", f"{table}: table changelog records (end minus "
                   "begin offsets)", "count", Basis.NONE),
            Metric(f"changelog_bytes_{n}", f"{table}: table changelog bytes held (keys + "
                   "values)", "bytes", Basis.NONE),
        ]
    return tuple(out) + largest_metrics(sizes)


def largest_metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures measured once, with the table at its largest (none without a size):
    the restart with the local store deleted (a fresh node), then the takeover."""
    if not sizes.finished:
        return ()
    n = sizes.finished[-1]
    table = f"{n:,} finished + {sizes.waiting:,} waiting"
    return (
        Metric(f"wiped_first_record_s_{n}", f"{table}: SIGKILL, local store deleted → "
               "first new history record", "s", Basis.NONE),
        Metric(f"wiped_all_probes_s_{n}", f"{table}: SIGKILL, local store deleted → a "
               "probe on every partition ended", "s", Basis.NONE),
        Metric(f"takeover_group_s_{n}", f"{table}: {SECOND} started → the coordinators' "
               "group stable with both (polled every 0.5 s)", "s", Basis.NONE),
        Metric(f"takeover_first_record_s_{n}", f"{table}: {SECOND} started → first history "
               "record after the group was stable with both", "s", Basis.NONE),
        Metric(f"takeover_all_partitions_s_{n}", f"{table}: {SECOND} started → every "
               "partition served again (its first probe produced after the rebalance "
               "ended)", "s", Basis.NONE),
    )


def run(sizes: Sizes) -> dict[str, float]:
    """Fill one fresh deployment's table size by size, restarting its coordinator at each,
    then add a second coordinator.

    Returns:
        The values of ``metrics(sizes)``.

    Raises:
        PartialResult: a fill, a restart, the takeover or a wait for idleness did not
            finish in time, or a workflow did not end as it should; it holds the figures
            measured before.
        ValueError: ``finished`` is empty or not strictly increasing, or a count is
            negative.
    """
    steps = list(sizes.finished)
    if not steps or steps != sorted(set(steps)) or steps[0] <= 0 or sizes.waiting < 0:
        raise ValueError(f"B9: finished={sizes.finished} must be positive and increasing, "
                         f"waiting={sizes.waiting} at least 0")
    with keeping({}) as out, deployment("b9", sizes.workers, sizes.concurrency,
                                        fresh=True) as sandbox:
        asyncio.run(_measure(sandbox, sizes, out))
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, out: dict[str, float]) -> None:
    await ready(sandbox, coordinators=1, workers=sizes.workers)
    fill = Fill(sandbox, KINDS, sizes.window)
    await fill.add_waiting(sizes.waiting, sizes.fill_timeout_s(sizes.waiting))
    for n in sizes.finished:
        await fill.add_finished(n - fill.finished, sizes.fill_timeout_s(n - fill.finished))
        out["fill_per_s"] = fill.rate_per_s()
        await wait_idle(sandbox, sizes.timeout_s)
        out[f"rss_before_mb_{n}"] = await idle_rss_mib(sandbox, COORDINATOR, sizes.idle_wait_s)
        records, held = await changelog_size(sandbox, sizes.timeout_s)
        out[f"changelog_records_{n}"], out[f"changelog_bytes_{n}"] = records, held
        log.info("B9: %s finished + %s waiting: %.0f/s filling, RSS %.1f MiB, changelog %d "
                 "records, %d bytes", f"{n:,}", f"{sizes.waiting:,}", out["fill_per_s"],
                 out[f"rss_before_mb_{n}"], records, held)
        first_s, all_s = await restart(sandbox, n, sizes.timeout_s)
        out[f"restart_first_record_s_{n}"], out[f"restart_all_probes_s_{n}"] = first_s, all_s
        await wait_idle(sandbox, sizes.timeout_s)
        out[f"rss_after_mb_{n}"] = await idle_rss_mib(sandbox, COORDINATOR, sizes.idle_wait_s)
    n = sizes.finished[-1]
    out[f"wiped_first_record_s_{n}"], out[f"wiped_all_probes_s_{n}"] = await restart(
        sandbox, n, sizes.timeout_s, wipe=True)
    await wait_idle(sandbox, sizes.timeout_s)
    (out[f"takeover_group_s_{n}"], out[f"takeover_first_record_s_{n}"],
     out[f"takeover_all_partitions_s_{n}"]) = await takeover(
        sandbox, workloads.skipped(DONE_SPEC), sizes.timeout_s)
    log.info("B9: %s took over in %.2f s (group stable after %.2f s)", SECOND,
             out[f"takeover_all_partitions_s_{n}"], out[f"takeover_group_s_{n}"])


async def restart(sandbox: Sandbox, finished: int, timeout_s: float,
                  wipe: bool = False) -> tuple[float, float]:
    """SIGKILL the coordinator, start it again at once (with ``wipe``, its data directory,
    the local store, deleted first: a fresh node) and produce one probe workflow on every
    input partition.

    Returns:
        ``(first, all)``: seconds from the killed process being gone to the first history
        record with a later Kafka timestamp, and to the last probe's terminal record.

    Raises:
        TimeoutError: the probes did not all end within ``timeout_s`` of the kill.
        RuntimeError: a probe did not succeed, or nothing was recorded after the kill.
    """
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    parts = len(await end_offsets(bootstrap, sandbox.topics.submissions))
    probes = ids_on_every_partition(PROBE, parts)
    progress = Progress(set(probes))
    tail = Tail(bootstrap, sandbox.topics.events, on_record=progress.see, keep=False)
    await tail.start()
    send = producer(bootstrap)
    await send.start()
    try:
        service = kill(sandbox, COORDINATOR)
        progress.killed_ms = now_ms()
        if wipe:
            shutil.rmtree(sandbox.data_dir(service))
        start_coordinator(sandbox, service)
        await workloads.submit_all(send, sandbox.topics, probes, workloads.skipped(DONE_SPEC),
                                   workloads.SKIP)
        await tail.wait_until(lambda: len(progress.ended_ms) >= len(probes), timeout_s,
                              f"B9: {len(probes)} probes after restarting the coordinator "
                              f"with {finished:,} finished workflows in its table")
    finally:
        await send.stop()
        await tail.stop()
    return restart_figures(progress)


def restart_figures(progress: Progress) -> tuple[float, float]:
    """``(kill → first new history record, kill → last probe ended)``, seconds, from what
    the reader saw.

    Raises:
        RuntimeError: a probe did not succeed, none ended, or nothing was recorded after
            the kill.
    """
    if progress.failed:
        raise RuntimeError(f"B9: {len(progress.failed)} probes did not succeed, e.g. "
                           f"{sorted(progress.failed)[0]}")
    killed, first = progress.killed_ms, progress.first_after_ms
    if killed is None or first is None or not progress.ended_ms:
        raise RuntimeError("B9: no history record after the kill")
    return (first - killed) / 1000, (max(progress.ended_ms.values()) - killed) / 1000

