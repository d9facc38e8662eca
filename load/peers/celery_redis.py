"""``python -m load.peers.celery_redis '<workloads JSON>'``: the workloads on Celery with
Redis; prints the figures as JSON on stdout.

Run from the repository's root in the Celery peer's venv, with ``REDIS_URL`` set. Starts
one worker (``celery worker``, prefork pool, ``-c`` the workloads' concurrency), waits
until it answers a ping, measures, and stops it by its pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from celery import chain, chord, group
from celery.result import AsyncResult

from load.peers import shapes
from load.peers.celery_app import app, fan_in, noop
from load.peers.shapes import Stamp, Workloads


def main() -> int:
    """Run every workload and print ``{figure: value}`` as JSON."""
    w = Workloads.from_json(json.loads(sys.argv[1]))
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "load.peers.celery_app", "worker",
         "--pool", "prefork", "-c", str(w.concurrency), "--loglevel", "WARNING",
         "--without-gossip", "--without-mingle", "-n", f"peers-{os.getpid()}@localhost"],
        stdout=sys.stderr, stderr=sys.stderr)
    try:
        _wait_worker(60.0)
        out = shapes.measure(w, lambda *c: _chains(w, *c), lambda n: _map(n, w.timeout_s),
                             lambda: _submits(w))
        out["settings"] = {"pool": "prefork", "concurrency": w.concurrency,
                           "task_acks_late": app.conf.task_acks_late,
                           "worker_prefetch_multiplier": app.conf.worker_prefetch_multiplier}
    finally:
        shapes.stop(worker, 30.0)
    print(json.dumps(out))
    return 0


def _wait_worker(timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if app.control.ping(timeout=0.5):
            return
    raise TimeoutError(f"the Celery worker did not answer a ping within {timeout_s:.0f} s")


def _chains(w: Workloads, count: int, length: int, gap_s: float) -> list[list[Stamp]]:
    """``count`` chains of ``length`` no-op tasks, ``gap_s`` apart (0: all at once);
    every task's stamps, chain by chain."""
    ends: list[AsyncResult] = []
    for i in range(count):
        if i and gap_s:
            time.sleep(gap_s)
        ends.append(chain(*(noop.si() for _ in range(length))).apply_async())
    out: list[list[Stamp]] = []
    for end in ends:
        stamps: list[Stamp] = []
        step: AsyncResult | None = end
        while step is not None:
            stamps.append(tuple(step.get(timeout=w.timeout_s)))  # type: ignore[arg-type]
            step = step.parent
        out.append(stamps[::-1])
    return out


def _map(width: int, timeout_s: float) -> float:
    """One chord of ``width`` no-op tasks then a fan-in: submit → the fan-in's end, ms."""
    sent = time.time()
    result = chord(group(noop.si(i) for i in range(width)))(fan_in.s())
    _, end = result.get(timeout=timeout_s + width / 100)
    return float((end - sent) * 1000)


def _submits(w: Workloads) -> list[float]:
    """Sequential ``apply_async`` calls: each returns once Redis took the message."""
    took = []
    for _ in range(w.submits):
        t0 = time.perf_counter()
        result = noop.apply_async()
        took.append(time.perf_counter() - t0)
        result.get(timeout=w.timeout_s)
        time.sleep(w.submit_gap_s)
    return took


if __name__ == "__main__":
    sys.exit(main())
