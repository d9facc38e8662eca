"""``python -m load.bench [--quick] [--out DIR] [--only B1,B3]``: run the benchmarks
against the local stack and write ``<out>/<UTC timestamp>.json``, ``.md`` and ``.png``.

Needs Kafka and PostgreSQL up (``bash infra/stack.sh up``); ``--list`` prints the figures
each benchmark reports, without running anything. Benchmarks run one at a time,
each in its own private deployment (with ``--quick``, deployments of the same settings
are kept from one benchmark to the next, ``load.kept``, and a coordinator counts as idle
sooner, ``plan.QUICK_QUIET_S``); B1 always runs, since every ratio
is to it. The exit status is 1 when a benchmark failed (its error is in the results).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from load import chart, deploy, kept, report
from load.metrics import PartialResult
from load.plan import ORDER, QUICK_KEEP, QUICK_QUIET_S, Planned, plan
from ops.sandbox import admin_dsn, bootstrap

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
log = logging.getLogger("load")


class _Notes(logging.Handler):
    """Keeps the warnings benchmarks log, for the results' notes."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.notes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.notes.append(record.getMessage())


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the benchmarks, write the results.

    Returns:
        0 when every benchmark ran, 1 when one failed, 2 when the stack is down.
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s",
                        datefmt="%H:%M:%S")
    log.setLevel(logging.INFO)
    only = {n.strip().upper() for n in args.only.split(",") if n.strip()} if args.only else None
    try:
        chosen = plan(args.quick, only)
    except ValueError as e:
        print(f"load.bench: {e}", file=sys.stderr)
        return 2
    if args.list:
        print(json.dumps({p.name: [m.key for m in p.metrics] for p in chosen}))
        return 0
    missing = stack_missing()
    if missing:
        print(f"load.bench: needs {missing}; run `bash infra/stack.sh up`", file=sys.stderr)
        return 2
    notes = _Notes()
    log.addHandler(notes)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    start = time.monotonic()
    with contextlib.ExitStack() as quick:
        if args.quick:
            quick.enter_context(kept.sharing(QUICK_KEEP))
            quick.enter_context(deploy.quiet_period(QUICK_QUIET_S))
        outcomes = [_run(p) for p in chosen]
    doc = report.document(outcomes, stamp, args.quick, time.monotonic() - start, notes.notes)
    paths = _write(doc, args.out, stamp)
    print(report.markdown(doc))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 1 if any(o.error for o in outcomes) else 0


def _run(p: Planned) -> report.BenchResult:
    """Run one benchmark; its error, if it failed, is in the result."""
    log.info("%s %s: running (%s)", p.name, p.title, p.settings)
    t0, load = time.monotonic(), os.getloadavg()[0]
    try:
        result = report.BenchResult(p, p.run(), time.monotonic() - t0, load)
    except Exception as e:  # one failed benchmark must not lose the others' results
        traceback.print_exc()
        values = e.values if isinstance(e, PartialResult) else {}
        error = str(e) if isinstance(e, PartialResult) else f"{type(e).__name__}: {e}"
        result = report.BenchResult(p, values, time.monotonic() - t0, load, error)
    log.info("%s done in %.1f s", p.name, time.monotonic() - t0)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m load.bench",
        description="Run Headwater's benchmarks against raw Kafka on the local stack and "
        "write <out>/<UTC timestamp>.json, .md and .png.")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and shared deployments (about 2 minutes; the CI "
                        "smoke test)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"results directory (default {DEFAULT_OUT})")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(ORDER)} "
                        "(B1 always runs)")
    parser.add_argument("--list", action="store_true", help="print, as JSON, the figures each "
                        "benchmark would report ({name: [keys]}), and exit")
    return parser


def _write(doc: dict[str, object], out: Path, stamp: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stamp}.json", out / f"{stamp}.md", out / f"{stamp}.png"]
    report.write_json(doc, paths[0])
    paths[1].write_text(report.markdown(doc))
    chart.draw(doc, paths[2])
    return paths


def stack_missing() -> str:
    """What of the local stack is unreachable ('' when both are up)."""
    missing = []
    host, port = bootstrap().split(",")[0].rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        missing.append(f"Kafka at {bootstrap()}")
    try:
        asyncio.run(_pg_ping())
    except (OSError, asyncpg.PostgresError):
        missing.append(f"PostgreSQL at {admin_dsn()}")
    return " and ".join(missing)


async def _pg_ping() -> None:
    conn = await asyncpg.connect(admin_dsn(), timeout=3)
    await conn.close()


if __name__ == "__main__":
    sys.exit(main())
