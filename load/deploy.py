"""A benchmark's private deployment: a sandbox with extra coordinators and workers, made
ready (groups stable, every partition warmed up), grown or with a process killed and
started again while it runs, a process's memory read, and stopped again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient

from load import kept, workloads
from load.kafka_io import Seen, Tail, end_offsets, existing_partitions, producer, reader
from ops import localstack
from ops.cli.queues import wait_for_workers
from ops.sandbox import Sandbox, start_sandbox
from services.common import heap
from services.common.partitioning import partition_for
from services.common.settings import OFF
from services.common.topic_reader import Offsets, TopicReader

REPO = Path(__file__).resolve().parents[1]
TASK_MODULE = "load.noop_tasks"
QUEUE = "cpu"
LOG_TAIL_CHARS = 4000
COORDINATOR = "coordinator"
"""The service name of a sandbox's first coordinator (``localstack.default_services``)."""
INSTANCE_VAR = "HEADWATER_COORDINATOR_INSTANCE"
"""A coordinator's static member id in its consumer group; the benchmarks give each
coordinator its service name, and a restarted one the same again."""
CACHE_OFF = {"HEADWATER_WORKFLOW_CACHE_SIZE": "0"}
"""Workers that keep no code workflow instance between activations: every activation
replays the function from its start (``headwater/workflows/activation.py``)."""
KILL_WAIT_S = 10.0
"""How long ``kill`` waits for a SIGKILLed process to be gone, seconds."""
log = logging.getLogger("load.deploy")


def changelog(sandbox: Sandbox) -> str:
    """The coordinator's workflow table changelog topic."""
    return sandbox.topics.table_changelog


def projection_group(sandbox: Sandbox) -> str:
    """The consumer group of the PostgreSQL projectors (a process of their own in a
    benchmark's deployment, ``HEADWATER_PROJECTION=off``, as a deployment that cares
    about speed runs them)."""
    return sandbox.topics.projection_group


@contextlib.contextmanager
def deployment(name: str, workers: int = 1, concurrency: int = 8,
               coordinators: int = 1, env: Mapping[str, str] | None = None,
               fresh: bool = False) -> Iterator[Sandbox]:
    """Start a sandbox running ``load.noop_tasks``, with the projector in a process of its
    own; stop it and drop its data on exit. Inside ``load.kept.sharing`` (``--quick``) a
    deployment kept from an earlier benchmark with the same settings is given instead,
    and this one is kept on exit unless it failed or was grown (``load.kept``).

    Args:
        name: a label for its home directory.
        workers: worker processes of queue ``cpu``.
        concurrency: attempts each worker runs at once (``HEADWATER_CONCURRENCY``).
        coordinators: coordinator processes.
        env: more settings for every process (e.g. ``CACHE_OFF`` for the workers).
        fresh: never a kept one, and none other running beside it (B9: its figures are
            its whole table's, restart times among them).

    Yields:
        The running sandbox (not yet warmed up: see ``ready``).
    """
    shared = kept.pool()
    key = kept.key_of(workers, concurrency, coordinators, env)
    sandbox = shared.take(key) if shared is not None and not fresh else None
    if sandbox is None:
        if shared is not None:
            shared.make_room(fresh)
        sandbox = _start(name, workers, concurrency, coordinators, env)
    started_as = kept.services_of(sandbox)
    failed = True
    try:
        yield sandbox
        failed = False
    except BaseException:
        log.error("deployment %s (topic prefix %s) failed; its processes' logs:\n%s",
                  name, sandbox.prefix, sandbox.logs(LOG_TAIL_CHARS))
        raise
    finally:
        if failed or fresh or shared is None or not shared.give_back(key, sandbox, started_as):
            kept.discard(sandbox)


def _start(name: str, workers: int, concurrency: int, coordinators: int,
           env: Mapping[str, str] | None) -> Sandbox:
    """A fresh deployment (``deployment``'s arguments), its coordinators all started."""
    home = Path(tempfile.mkdtemp(prefix=f"hw-bench-{name}-"))
    # The sandbox's environment names the first coordinator; the others override it.
    sandbox = start_sandbox(home, tasks=[TASK_MODULE], workers=workers, pythonpath=[str(REPO)],
                            extra_env={"HEADWATER_CONCURRENCY": str(concurrency),
                                       "HEADWATER_PROJECTION": "off",
                                       **coordinator_env(COORDINATOR), **(env or {})})
    try:
        for i in range(2, coordinators + 1):
            add_coordinator(sandbox, f"coordinator-{i}")
    except BaseException:
        log.error("deployment %s (topic prefix %s) failed; its processes' logs:\n%s",
                  name, sandbox.prefix, sandbox.logs(LOG_TAIL_CHARS))
        kept.discard(sandbox)
        raise
    return sandbox


def coordinator_env(name: str) -> dict[str, str]:
    """The settings that make coordinator ``name`` a static group member named so."""
    return {INSTANCE_VAR: name}


def start_coordinator(sandbox: Sandbox, service: localstack.Service) -> int:
    """Start (or start again) a coordinator of ``sandbox`` with its static member id.

    Returns:
        Its pid.
    """
    return sandbox.start(service, coordinator_env(service.name))


def add_coordinator(sandbox: Sandbox, name: str) -> int:
    """Start one more coordinator, service (and static member id) ``name``, beside the
    running ones: its group rebalances once it has joined.

    Returns:
        Its pid.
    """
    return start_coordinator(sandbox, localstack.Service(
        name, (sys.executable, "-m", "services.coordinator")))


def add_workers(sandbox: Sandbox, total: int) -> None:
    """Start workers of queue ``cpu`` until ``sandbox`` has ``total`` of them (named as
    ``localstack.default_services`` names them); none are stopped."""
    have = {s.name for s in sandbox.services}
    for service in localstack.default_services([TASK_MODULE], total, QUEUE):
        if service.name.startswith("worker-") and service.name not in have:
            sandbox.start(service)


def running(sandbox: Sandbox, name: str) -> tuple[localstack.Service, int]:
    """The service ``name`` of ``sandbox`` and the pid of its live process (its pid file).

    Raises:
        LookupError: ``sandbox`` has no such service, or it is not running.
    """
    service = next((s for s in sandbox.services if s.name == name), None)
    pid = localstack.read_pid(service.pid_file) if service is not None else None
    if service is None or pid is None:
        raise LookupError(f"no running service {name!r} in sandbox {sandbox.prefix}")
    return service, pid


def rss_mib(sandbox: Sandbox, name: str) -> float:
    """The resident set size of service ``name``'s process now, MiB (``VmRSS``).

    Raises:
        LookupError: ``sandbox`` has no such service, or it is not running.
        ValueError: its ``/proc/<pid>/status`` has no ``VmRSS`` line.
    """
    _, pid = running(sandbox, name)
    return vm_rss_kib(Path(f"/proc/{pid}/status").read_text()) / 1024


IDLE_WAIT_S = heap.TRIM_INTERVAL_S + 2
"""How long a coordinator is left idle before its idle RSS is read, seconds: past its
next trim (``services.common.heap``), so the figure is what it holds, not what its last
work left in the allocators."""


async def idle_rss_mib(sandbox: Sandbox, name: str, wait_s: float = IDLE_WAIT_S) -> float:
    """``rss_mib`` of an idle service, read ``wait_s`` from now (call it once the service
    has gone idle; ``--quick`` waits less than ``IDLE_WAIT_S``, so its figure may be read
    before the next trim)."""
    await asyncio.sleep(wait_s)
    return rss_mib(sandbox, name)


def vm_rss_kib(status: str) -> int:
    """The ``VmRSS`` of a ``/proc/<pid>/status`` text, KiB (the kernel writes ``kB``).

    Raises:
        ValueError: no such line (a kernel thread, or a zombie), or not a number of kB.
    """
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            fields = line.split()
            if len(fields) == 3 and fields[1].isdigit() and fields[2] == "kB":
                return int(fields[1])
            raise ValueError(f"unexpected VmRSS line {line!r}")
    raise ValueError("no VmRSS line in the process status")


def kill(sandbox: Sandbox, name: str) -> localstack.Service:
    """SIGKILL the process of service ``name`` by its pid and wait until it is gone.

    Returns:
        The service, to start again with ``Sandbox.start`` (``start_coordinator``).

    Raises:
        LookupError: ``sandbox`` has no such service, or it is not running.
        TimeoutError: it still ran ``KILL_WAIT_S`` after the signal.
    """
    service, pid = running(sandbox, name)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT_S
    while localstack.alive(pid):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} (pid {pid}) still runs {KILL_WAIT_S:.0f} s after SIGKILL")
        time.sleep(0.005)
    return service


async def ready(sandbox: Sandbox, coordinators: int, workers: int,
                timeout_s: float = 120.0) -> None:
    """Wait until the consumer groups (coordinators, projectors, workers)
    are stable with all their members, so that no rebalance happens mid-measurement, and
    the gateway knows a live worker (its announcement: until then a submission over HTTP
    gets 400); then run one workflow on every input partition and wait for the
    coordinators to be idle.

    Raises:
        TimeoutError: not ready within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    groups = {sandbox.topics.coordinator_app_id: coordinators,
              sandbox.topics.worker_group(QUEUE): workers}
    inline = sandbox.env.get("HEADWATER_PROJECTION", "on").lower() not in OFF
    groups[projection_group(sandbox)] = coordinators if inline else 1
    await wait_groups(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"], groups, timeout_s)
    await asyncio.to_thread(wait_for_workers, sandbox.gateway, QUEUE,
                            max(1.0, deadline - time.monotonic()))
    await warm_up(sandbox, max(1.0, deadline - time.monotonic()))
    await wait_idle(sandbox, max(1.0, deadline - time.monotonic()))


async def wait_groups(bootstrap: str, members: dict[str, int], timeout_s: float) -> None:
    """Wait until every group is ``Stable`` with at least the given number of members.

    Raises:
        TimeoutError: the groups did not settle within ``timeout_s``.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            seen: dict[str, tuple[str, int]] = {}
            for name in members:  # one per request: aiokafka 0.14 garbles multi-group answers
                for response in await admin.describe_consumer_groups([name]):
                    for group in response.groups:
                        seen[group[1]] = (group[2], len(group[5]))
            if all(seen.get(g, ("", 0))[0] == "Stable" and seen[g][1] >= n
                   for g, n in members.items()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"consumer groups not stable after {timeout_s:.0f} s: {seen}")
            await asyncio.sleep(0.5)
    finally:
        await admin.close()


def ids_on_every_partition(tag: str, partitions: int, per_partition: int = 1) -> list[str]:
    """Fresh workflow ids whose keys land ``per_partition`` times on every partition."""
    need = dict.fromkeys(range(partitions), per_partition)
    ids: list[str] = []
    for _ in range(1000 * partitions * per_partition):  # bounded: murmur2 spreads keys evenly
        wid = workloads.new_id(tag)
        p = partition_for(wid.encode(), partitions)
        if need[p] > 0:
            need[p] -= 1
            ids.append(wid)
        if not any(need.values()):
            break
    return ids


async def warm_up(sandbox: Sandbox, timeout_s: float) -> None:
    """Run a one-task workflow on every input partition (so that every coordinator has its
    partitions and every worker has fetched), and wait until all have finished.

    Raises:
        TimeoutError: they did not finish within ``timeout_s``.
    """
    bootstrap = sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]
    parts = len(await end_offsets(bootstrap, sandbox.topics.submissions))
    ids = set(ids_on_every_partition("warm", parts, per_partition=2))
    done: set[str] = set()

    def on_record(seen: Seen) -> None:
        if seen.value.terminal and seen.value.workflow_id in ids:
            done.add(seen.value.workflow_id)

    tail = Tail(bootstrap, sandbox.topics.events, on_record=on_record)
    await tail.start()
    send = producer(bootstrap)
    await send.start()
    try:
        for wid in ids:
            await workloads.submit(send, sandbox.topics, wid, workloads.chain(1, "bench-warm"))
        await tail.wait_until(lambda: done == ids, timeout_s, "warm-up workflows")
    finally:
        await send.stop()
        await tail.stop()


QUIET_S = 1.0
"""How long the table's changelog must not grow before the coordinators count as idle
(``wait_idle``), seconds."""
_quiet_s = [QUIET_S]


@contextlib.contextmanager
def quiet_period(seconds: float) -> Iterator[None]:
    """Count the coordinators idle after ``seconds`` without changelog growth, instead of
    ``QUIET_S``, while the block runs (``--quick``: every benchmark waits for idleness
    between its phases, and a quick run does so dozens of times)."""
    _quiet_s.append(seconds)
    try:
        yield
    finally:
        _quiet_s.pop()


async def wait_idle(sandbox: Sandbox, timeout_s: float, quiet_s: float | None = None) -> None:
    """Wait until the coordinators have committed every input record and the table's
    changelog has not grown for ``quiet_s`` (None: ``QUIET_S``, or what the
    ``quiet_period`` running now says).

    Raises:
        TimeoutError: still busy after ``timeout_s``.
    """
    quiet_s = _quiet_s[-1] if quiet_s is None else quiet_s
    async with reader(sandbox.env["HEADWATER_KAFKA_BOOTSTRAP"]) as source:
        inputs = {topic: await existing_partitions(source, topic, timeout_s)
                  for topic in sandbox.topics.inputs}
        log_parts = await existing_partitions(source, changelog(sandbox), timeout_s)
        deadline = time.monotonic() + timeout_s
        last: Offsets = {}
        quiet_since = time.monotonic()
        while True:
            lag = await _input_lag(source, sandbox.topics.coordinator_app_id, inputs)
            log_ends = await source.end_offsets(changelog(sandbox), log_parts)
            if log_ends != last:
                last, quiet_since = log_ends, time.monotonic()
            if lag <= 0 and time.monotonic() - quiet_since >= quiet_s:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"coordinator not idle after {timeout_s:.0f} s "
                                   f"({lag} input records not committed)")
            await asyncio.sleep(0.25)


async def _input_lag(source: TopicReader, group: str, inputs: dict[str, list[int]]) -> int:
    """Records on the ``inputs`` (topic -> partitions) that ``group`` has not committed."""
    lag = 0
    for topic, parts in inputs.items():
        committed = await source.committed(group, topic, parts)
        ends = await source.end_offsets(topic, parts)
        lag += sum(end - committed.get(p, 0) for p, end in ends.items())
    return lag
