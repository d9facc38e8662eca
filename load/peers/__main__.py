"""``python -m load.peers [--quick] [--only celery|dbos]``: the workloads of ``make bench``
on Celery with Redis and on DBOS with PostgreSQL, beside Headwater's figures and raw
Kafka's; writes ``<out>/peers-<UTC timestamp>.json`` and ``.md``.

Headwater's and raw Kafka's figures come from the newest ``make bench`` results of the
same mode in ``<out>`` that hold B1 to B5, or from ``--bench FILE``; without either (or
with ``--run-bench``) it runs ``load.bench --only B2,B3,B4,B5`` first, so that every
column is measured in this run. Needs the stack up (``bash infra/stack.sh up``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from load import plan, report
from load.peers import services, shapes, table, venvs
from ops.sandbox import admin_dsn

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "load" / "results"
HOME = ROOT / ".headwater" / "peers"
NEEDED = ("B1", "B2", "B3", "B4", "B5")
GUARANTEES = (
    "Celery (default settings, `task_acks_late=False`): a worker acknowledges a task as it "
    "takes it, before running it, so a worker killed mid-task loses that task; Redis keeps "
    "the queue in memory with its default snapshots (RDB every few minutes, no AOF), so a "
    "Redis crash loses what came after the last snapshot; a chain's next task is sent by "
    "the worker that ran the previous one.",
    "DBOS (its default): every workflow's status and every step's output is committed to "
    "PostgreSQL before the next step runs; a crashed process's workflows are recovered "
    "from their last completed step; PostgreSQL's durability is the server's (on this "
    "stack fsync is off, as for Headwater's projection).",
    "Headwater: every decision and result is a record of the history on Kafka, produced "
    "with acks=all (min.insync.replicas of the local broker: one replica), the "
    "coordinator's state is a compacted changelog; a crashed worker's attempt is "
    "dispatched again and a crashed coordinator resumes from its changelog.",
)
log = logging.getLogger("load.peers")


def workloads(quick: bool) -> shapes.Workloads:
    """The peers' sizes: those ``make bench`` uses in the same mode."""
    sizes = plan.QUICK if quick else plan.FULL
    b2, b3, b4, b5 = sizes["B2"], sizes["B3"], sizes["B4"], sizes["B5"]
    return shapes.Workloads(
        chains=b2.workflows, chain_length=b2.length, hop_chains=b3.chains,
        hop_length=b3.length, gap_s=b3.gap_s, loaded_gap_s=b3.loaded_gap_s,
        widths=tuple(n for n in b4.widths if n <= shapes.MAX_WIDTH),
        submits=b5.sequential, submit_gap_s=b5.gap_s, concurrency=8)


def main(argv: list[str] | None = None) -> int:
    """Run the peers and write the table. Returns 1 when a peer or the bench failed."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s",
                        datefmt="%H:%M:%S")
    mode = "quick" if args.quick else "full"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    start, load_before = time.monotonic(), os.getloadavg()[0]
    notes: list[str] = []
    bench_path = args.bench or (None if args.run_bench else newest_bench(args.out, mode))
    if bench_path is None:
        bench_path = _run_bench(args.quick, args.out)
    bench_doc: dict[str, Any] = json.loads(bench_path.read_text()) if bench_path else {}
    if bench_doc.get("mode") not in (None, mode):
        notes.append(f"Headwater's figures are from a {bench_doc['mode']} run of make bench")
    w = workloads(args.quick)
    peers: dict[str, dict[str, Any]] = {}
    for peer in [args.only] if args.only else table.PEERS:
        try:
            peers[peer] = _run_peer(peer, w)
        except Exception as e:  # one failed peer must not lose the other's figures
            log.exception("peers: %s failed", peer)
            notes.append(f"{peer} failed: {type(e).__name__}: {e}")
    doc = document(stamp, mode, bench_path, bench_doc, peers, w)
    doc["preamble"] = _preamble(bench_path, w, doc["peer_settings"], load_before)
    doc.update(notes=notes, wall_s=round(time.monotonic() - start, 1), load_before=load_before)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / f"peers-{stamp}.json", args.out / f"peers-{stamp}.md"
    report.write_json(doc, json_path)
    md_path.write_text(table.markdown(doc))
    print(table.markdown(doc))
    print(f"wrote {json_path}, {md_path}")
    return 1 if any("failed" in n for n in notes) or not bench_doc else 0


def document(stamp: str, mode: str, bench_path: Path | None, bench_doc: dict[str, Any],
             peers: dict[str, dict[str, Any]], w: shapes.Workloads) -> dict[str, Any]:
    """The peers' results: rows, every column's values, the ratios and settings (``notes``
    empty, for the caller to fill; the load average in ``preamble`` unknown)."""
    table_rows = table.rows(w.widths)
    values = table.columns(table_rows, bench_doc, peers)
    settings = {p: peers[p].get("settings", {}) for p in peers}
    return {
        "timestamp": stamp, "mode": mode, "headwater_results": str(bench_path or ""),
        "workloads": w.to_json(), "peer_settings": settings,
        "rows": [{"key": r.key, "label": r.label, "unit": r.unit,
                  "higher_is_better": r.higher_is_better} for r in table_rows],
        "values": values, "ratios": table.ratios(values), "guarantees": list(GUARANTEES),
        "preamble": _preamble(bench_path, w, settings, None), "notes": [],
    }


def _preamble(bench_path: Path | None, w: shapes.Workloads,
              settings: dict[str, dict[str, Any]], load_before: float | None) -> str:
    celery, dbos = settings.get("celery", {}), settings.get("dbos", {})
    return (
        f"One machine, {os.cpu_count()} CPUs"
        + (f", load average {load_before:.2f} as the peers' run began (the bench results "
           "give theirs). " if load_before is not None else ". ")
        + f"Headwater and raw Kafka: {bench_path.name if bench_path else 'no results'} "
        "(B2 with 1 coordinator; B3; B4; B5's POST /v1/workflows; raw Kafka is B1's "
        "round trip and pipelined rate, a map being that many pipelined records, and B5's "
        "produce-until-acked for submissions). A peer's hop is the next task's start "
        "minus the previous task's end, both `time.time()` inside the no-op tasks; "
        "Headwater's is the success report's Kafka timestamp to the next TaskStarted "
        f"report's. Chains: {w.chains} chains of {w.chain_length} tasks at once; hops: "
        f"{w.hop_chains} chains of {w.hop_length}; maps: {', '.join(map(str, w.widths))} "
        f"items; {w.submits} sequential submissions {w.submit_gap_s * 1000:.0f} ms apart. "
        f"Celery: one worker, pool {celery.get('pool', 'prefork')} -c {w.concurrency}, "
        f"task_acks_late={celery.get('task_acks_late', False)}, prefetch multiplier "
        f"{celery.get('worker_prefetch_multiplier', 4)}, a chain is `chain(noop.si() ...)`, "
        "a map `chord(group(...))(fan_in.s())`, a submission `apply_async`. DBOS: one "
        f"process (client and worker), queues with worker_concurrency={w.concurrency} "
        f"polled every {dbos.get('polling_interval_sec', '?')} s (DBOS's default is 1 s, "
        "which starts at most worker_concurrency workflows a second), a chain is one "
        "workflow of steps, a map a workflow enqueueing one workflow per item then a "
        "fan-in step, a submission `Queue.enqueue`. Headwater: one worker of concurrency "
        "8 for B3 and B5, 64 for B2 and B4 in a full run, 8 with --quick.")


def newest_bench(out: Path, mode: str) -> Path | None:
    """The newest ``make bench`` results in ``out`` of ``mode`` holding B1 to B5."""
    for path in sorted(out.glob("[0-9]*T*Z.json"), reverse=True):
        doc = json.loads(path.read_text())
        if doc.get("mode") == mode and all(
                b in doc.get("benchmarks", {}) and not doc["benchmarks"][b].get("error")
                for b in NEEDED):
            return path
    return None


def _run_bench(quick: bool, out: Path) -> Path | None:
    log.info("peers: no make bench results of this mode; running load.bench for B1-B5")
    subprocess.run([sys.executable, "-m", "load.bench", *(["--quick"] if quick else []),
                    "--only", ",".join(NEEDED[1:]), "--out", str(out)], cwd=ROOT, check=False)
    return newest_bench(out, "quick" if quick else "full")


def _run_peer(peer: str, w: shapes.Workloads) -> dict[str, Any]:
    python = venvs.ensure(HOME, peer)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if peer == "celery":
        with services.redis(HOME) as url:
            return _driver(python, "load.peers.celery_redis", w, {**env, "REDIS_URL": url})
    with services.database(admin_dsn()) as dsn:
        return _driver(python, "load.peers.dbos_pg", w, {**env, "DBOS_DATABASE_URL": dsn})


def _driver(python: Path, module: str, w: shapes.Workloads,
            env: dict[str, str]) -> dict[str, Any]:
    log.info("peers: %s running", module)
    t0 = time.monotonic()
    done = subprocess.run([str(python), "-m", module, json.dumps(w.to_json())], cwd=ROOT,
                          env=env, stdout=subprocess.PIPE, check=True,
                          timeout=w.timeout_s * 4)
    log.info("peers: %s done in %.1f s", module, time.monotonic() - t0)
    figures: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return figures


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m load.peers", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="make bench's quick sizes")
    parser.add_argument("--only", choices=table.PEERS, help="run one peer")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results directory")
    parser.add_argument("--bench", type=Path, help="make bench's results JSON to compare with")
    parser.add_argument("--run-bench", action="store_true",
                        help="run load.bench's B1-B5 first even if results exist")
    return parser


if __name__ == "__main__":
    sys.exit(main())
