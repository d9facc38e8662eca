"""B4, width scaling: one map over N noop items, for several N. For each: the total time
(submission → the ``WorkflowSucceeded`` record's Kafka timestamp), the time per task, the
bytes appended to the coordinator's table changelog per task, and the coordinator's
highest RSS while the map ran (sampled every ``RSS_EVERY_S``) against its RSS idle
before the first map (``deploy.idle_rss_mib``).

The changelog bytes are the keys and values of the records between the changelog's end
offsets before the submission and after the coordinator went idle again. The issue's goal
is that neither the time nor the bytes per task grow more than 1.5x from the narrowest to
the widest map.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
from dataclasses import dataclass

from load import workloads
from load.deploy import (
    COORDINATOR,
    IDLE_WAIT_S,
    changelog,
    deployment,
    idle_rss_mib,
    ready,
    rss_mib,
    wait_idle,
)
from load.kafka_io import Seen, Tail, end_offsets, producer, range_bytes
from load.metrics import Basis, Metric, keeping
from ops.sandbox import Sandbox

NAME = "B4"
TITLE = "width scaling, one map"
log = logging.getLogger("load.b4")
RSS_EVERY_S = 0.25
"""How often the coordinator's RSS is sampled while a map runs, seconds."""


@dataclass(frozen=True)
class Sizes:
    """How much B4 does.

    Attributes:
        widths: map sizes, narrowest first.
        repeats: maps run per width below ``repeat_below`` (the median is reported: small
            maps take well under a second and vary by a third from run to run).
        repeat_below: widths from this one on run once.
        workers: worker processes.
        concurrency: attempts per worker at once (``HEADWATER_CONCURRENCY``).
        timeout_s: the longest a map of no width may take, seconds (the start-up part
            of ``map_timeout_s``).
        min_per_s: the slowest map accepted: a map of ``n`` items may take
            ``timeout_s + n / min_per_s`` seconds (B9's fill timeouts scale the same way);
            200 tasks/s is a quarter of the rate of a full run's 10,000-item map (1.27 ms
            per task).
        idle_wait_s: how long the coordinator is left idle before its idle RSS is read,
            seconds (``deploy.idle_rss_mib``).
    """

    widths: tuple[int, ...]
    repeats: int = 3
    repeat_below: int = 10_000
    workers: int = 2
    concurrency: int = 64
    timeout_s: float = 240.0
    min_per_s: float = 200.0
    idle_wait_s: float = IDLE_WAIT_S

    def map_timeout_s(self, width: int) -> float:
        """The longest a map of ``width`` items, the coordinator's going idle after it,
        or reading what it appended to the changelog may each take, seconds."""
        return self.timeout_s + width / self.min_per_s


def metrics(sizes: Sizes) -> tuple[Metric, ...]:
    """The figures B4 reports for ``sizes.widths``."""
    out: list[Metric] = []
    for n in sizes.widths:
        runs = sizes.repeats if n < sizes.repeat_below else 1
        median = f" (median of {runs})" if runs > 1 else ""
        out += [Metric(f"total_ms_{n}", f"{n:,} items: submit → WorkflowSucceeded{median}", "ms",
                       Basis.NONE),
                Metric(f"per_task_ms_{n}", f"{n:,} items: time per task", "ms",
                       Basis.PER_RECORD),
                Metric(f"changelog_bytes_per_task_{n}", f"{n:,} items: changelog bytes per task",
                       "bytes", Basis.RECORD_BYTES),
                Metric(f"rss_peak_mb_{n}", f"{n:,} items: coordinator RSS, highest while the "
                       f"map ran{median}", "MiB", Basis.NONE)]
    lo, hi = sizes.widths[0], sizes.widths[-1]
    out += [Metric("per_task_ratio", f"time per task, {hi:,} ÷ {lo:,} items (goal ≤ 1.5)", "x",
                   Basis.NONE),
            Metric("changelog_ratio", f"changelog bytes per task, {hi:,} ÷ {lo:,} items "
                   "(goal ≤ 1.5)", "x", Basis.NONE)]
    out += [Metric("rss_idle_mb", "coordinator RSS, idle, before the first map", "MiB",
                   Basis.NONE),
            Metric("rss_peak_ratio", f"coordinator RSS, highest during the {hi:,}-item map "
                   "÷ idle (goal < 2)", "x", Basis.NONE)]
    return tuple(out)


def run(sizes: Sizes) -> dict[str, float]:
    """Run one map per width, narrowest first, in one fresh deployment.

    Returns:
        The values of ``metrics(sizes)``.

    Raises:
        PartialResult: a map did not succeed or did not finish within
            ``sizes.map_timeout_s`` of its width; it holds the figures of the narrower
            maps.
    """
    with keeping({}) as out, deployment("b4", sizes.workers, sizes.concurrency) as sandbox:
        asyncio.run(_measure(sandbox, sizes, out))
    return out


async def _measure(sandbox: Sandbox, sizes: Sizes, out: dict[str, float]) -> None:
    await ready(sandbox, coordinators=1, workers=sizes.workers)
    out["rss_idle_mb"] = await idle_rss_mib(sandbox, COORDINATOR, sizes.idle_wait_s)
    for n in sizes.widths:
        runs: list[tuple[float, float, float]] = []
        for _ in range(sizes.repeats if n < sizes.repeat_below else 1):
            async with RssPeak(sandbox) as peak:
                total, written = await one_map(sandbox, n, sizes.map_timeout_s(n))
            runs.append((total, written, peak.mib))
        total_ms = statistics.median(r[0] for r in runs)
        out[f"total_ms_{n}"] = total_ms
        out[f"per_task_ms_{n}"] = total_ms / n
        out[f"changelog_bytes_per_task_{n}"] = statistics.median(r[1] for r in runs) / n
        out[f"rss_peak_mb_{n}"] = statistics.median(r[2] for r in runs)
    lo, hi = sizes.widths[0], sizes.widths[-1]
    out["rss_peak_ratio"] = out[f"rss_peak_mb_{hi}"] / out["rss_idle_mb"]
    out["per_task_ratio"] = out[f"per_task_ms_{hi}"] / out[f"per_task_ms_{lo}"]
    out["changelog_ratio"] = (out[f"changelog_bytes_per_task_{hi}"]
                              / out[f"changelog_bytes_per_task_{lo}"])


class RssPeak:
    """The coordinator's highest RSS (``mib``) while the ``async with`` block runs,
    sampled every ``RSS_EVERY_S`` and once more at its end. A sample that cannot be
    read (the process gone for a moment) is logged and skipped: it never hides the
    block's own error."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.mib = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> RssPeak:
        self._sample()
        self._task = asyncio.create_task(self._sampling())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._sample()

    def _sample(self) -> None:
        try:
            self.mib = max(self.mib, rss_mib(self.sandbox, COORDINATOR))
        except (LookupError, OSError, ValueError) as e:
            log.warning("B4: no RSS sample of the coordinator (%s: %s)", type(e).__name__, e)

    async def _sampling(self) -> None:
        while True:
            await asyncio.sleep(RSS_EVERY_S)
            self._sample()


async def one_map(sandbox: Sandbox, width: int, timeout_s: float,
                  wid: str | None = None) -> tuple[float, float]:
    """Run one map of ``width`` items and wait for the coordinator to be idle again.

    Args:
        sandbox: a ready deployment.
        width: the map's items.
        timeout_s: the longest the map, and then the coordinator's going idle, may take,
            seconds.
        wid: its workflow id (None: a fresh one).

    Returns:
        ``(total ms, changelog bytes)``: submission → the ``WorkflowSucceeded`` record's
        Kafka timestamp, and the bytes it appended to the table's changelog.

    Raises:
        TimeoutError: it did not finish in time.
        RuntimeError: it did not succeed.
    """
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    log_topic = changelog(sandbox)
    wid = wid or workloads.new_id(f"b4-{width}")
    terminal: list[Seen] = []

    def on_record(seen: Seen) -> None:
        if seen.value.workflow_id == wid and seen.value.terminal:
            terminal.append(seen)

    before = await end_offsets(bootstrap, log_topic)
    # keep=False: a map writes several history records per item; only its end counts
    tail = Tail(bootstrap, sandbox.topics.events, on_record=on_record, keep=False)
    await tail.start()
    send = producer(bootstrap)
    await send.start()
    try:
        sent = await workloads.submit(send, sandbox.topics, wid, workloads.fan_out("bench-b4"),
                                      {"items": list(range(width))})
        await tail.wait_until(lambda: bool(terminal), timeout_s, f"B4: map of {width}")
    finally:
        await send.stop()
        await tail.stop()
    if terminal[0].value.type != "WorkflowSucceeded":
        raise RuntimeError(f"B4: the map of {width} ended {terminal[0].value.type}")
    await wait_idle(sandbox, timeout_s)
    after = await end_offsets(bootstrap, log_topic)
    written, records = await range_bytes(bootstrap, log_topic, before, after, timeout_s)
    spanned = sum(after.values()) - sum(before.values())
    if records < spanned:  # compaction removed some before they were read: scale up
        log.warning("B4: compaction removed %d of %d changelog records of the %d-item map "
                     "before they were read; their bytes are estimated from the mean size",
                     spanned - records, spanned, width)
        return float(terminal[0].timestamp_ms - sent), written * spanned / max(records, 1)
    return float(terminal[0].timestamp_ms - sent), float(written)
