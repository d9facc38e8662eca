"""``python -m load.peers.dbos_pg '<workloads JSON>'``: the workloads on DBOS with
PostgreSQL; prints the figures as JSON on stdout.

Run from the repository's root in the DBOS peer's venv, with ``DBOS_DATABASE_URL`` set to
a fresh database. DBOS is a library: this process is both the client and the worker.
Its default durability: every workflow's status and every step's output is checkpointed
in PostgreSQL before the next step runs. A chain is one workflow of steps; chains and a
map's items go through DBOS queues whose ``worker_concurrency`` is the workloads'
concurrency; each queue polls every ``POLL_S`` (DBOS's default is 1 s: see there).
"""

from __future__ import annotations

import json
import os
import sys
import time

from dbos import DBOS, DBOSConfig

from load.peers import shapes
from load.peers.shapes import Stamp, Workloads

POLL_S = float(os.environ.get("DBOS_QUEUE_POLL_S", "0.01"))
"""How often a queue looks for work, seconds. DBOS's default, 1 s, starts at most
``worker_concurrency`` workflows a second (a queue starts work only when it polls): 8 a
second would make a 10,000-item map take 21 minutes, a measure of the poll and not of
DBOS. Durability does not depend on it."""


@DBOS.step()
def noop() -> Stamp:
    """Does nothing; returns ``(start, end)``, ``time.time()`` seconds."""
    start = time.time()
    return start, time.time()


@DBOS.workflow()
def chain_wf(length: int) -> list[Stamp]:
    """``length`` no-op steps, one after another."""
    return [noop() for _ in range(length)]


@DBOS.workflow()
def item_wf(item: int) -> Stamp:
    """One item of a map: one no-op step."""
    return noop()


@DBOS.workflow()
def map_wf(width: int) -> Stamp:
    """A map: ``width`` items enqueued on the items queue, then a fan-in of their results."""
    items = DBOS.retrieve_queue("items")
    handles = [items.enqueue(item_wf, i) for i in range(width)]
    return fan_in([h.get_result() for h in handles])


@DBOS.step()
def fan_in(results: list[Stamp]) -> Stamp:
    """Counts the map's results; returns ``(start, end)``."""
    start = time.time()
    _ = len(results)
    return start, time.time()


def main() -> int:
    """Run every workload and print ``{figure: value}`` as JSON."""
    w = Workloads.from_json(json.loads(sys.argv[1]))
    config: DBOSConfig = {"name": "headwater-peers",
                          "system_database_url": os.environ["DBOS_DATABASE_URL"],
                          "log_level": "WARNING"}
    DBOS(config=config)
    DBOS.launch()
    try:
        for name in ("chains", "items", "submits"):
            DBOS.register_queue(name, worker_concurrency=w.concurrency,
                                polling_interval_sec=POLL_S)
        out = shapes.measure(w, lambda *c: _chains(w, *c), _map_ms, lambda: _submits(w))
        out["settings"] = {"worker_concurrency": w.concurrency, "polling_interval_sec": POLL_S}
    finally:
        DBOS.destroy()
    print(json.dumps(out))
    return 0


def _map_ms(width: int) -> float:
    """One map workflow of ``width`` items: start → its fan-in's end, ms."""
    sent = time.time()
    _, end = DBOS.start_workflow(map_wf, width).get_result()
    return float((end - sent) * 1000)


def _chains(w: Workloads, count: int, length: int, gap_s: float) -> list[list[Stamp]]:
    """``count`` chain workflows enqueued ``gap_s`` apart (0: all at once)."""
    queue = DBOS.retrieve_queue("chains")
    handles = []
    for i in range(count):
        if i and gap_s:
            time.sleep(gap_s)
        handles.append(queue.enqueue(chain_wf, length))
    return [[tuple(s) for s in h.get_result()] for h in handles]  # type: ignore[misc]


def _submits(w: Workloads) -> list[float]:
    """Sequential ``enqueue`` calls: each returns once the workflow's row is committed."""
    queue = DBOS.retrieve_queue("submits")
    took = []
    for _ in range(w.submits):
        t0 = time.perf_counter()
        handle = queue.enqueue(item_wf, 0)
        took.append(time.perf_counter() - t0)
        handle.get_result()
        time.sleep(w.submit_gap_s)
    return took


if __name__ == "__main__":
    sys.exit(main())
