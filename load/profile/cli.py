"""``python -m load.profile [--quick] [--only B2,B3] [--rate 100] [--out DIR]``: run B2
and B3 of the benchmark suite while py-spy samples the deployment's coordinators, workers
and gateway in each measured window, and write ``<out>/profile-<UTC>/``:

- ``report.md``: per window and per process, the top 25 frames by self time (the function
  running) and by inclusive time (anywhere on the stack), percent of its samples;
- ``<window>/<service>.raw.txt``: py-spy's collapsed stacks, ``<service>.svg``: their
  flamegraph, ``<service>.log``: py-spy's own output.

Prints the top 10 self frames per process at the end. Needs the stack up (``bash
infra/stack.sh up``), py-spy (the ``bench`` extra) and ptrace rights on the processes
(root). The benchmarks' figures come out lower than ``load.bench``'s (sampling costs CPU
on the same cores): they are in the report only to tell a run from another.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import sys
import traceback
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from load import deploy, kept, window
from load.bench import DEFAULT_OUT, stack_missing
from load.metrics import PartialResult
from load.plan import QUICK_KEEP, QUICK_QUIET_S, Planned, plan
from load.profile import flamegraph, stacks
from load.profile.report import Outcome, Sampled, markdown, summary
from load.profile.sampler import Sampler, Window, py_spy

PROFILED_BENCHMARKS = ("B2", "B3")
log = logging.getLogger("load.profile")


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the benchmarks sampled, write the profiles.

    Returns:
        0 when every benchmark ran, 1 when one failed, 2 when the stack is down, py-spy
        is missing or the command line names another benchmark.
    """
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s",
                        datefmt="%H:%M:%S")
    logging.getLogger("load").setLevel(logging.INFO)
    wanted = {n.strip().upper() for n in args.only.split(",") if n.strip()}
    if not wanted or not wanted <= set(PROFILED_BENCHMARKS):
        print(f"load.profile: --only takes {','.join(PROFILED_BENCHMARKS)}", file=sys.stderr)
        return 2
    executable = py_spy()
    if executable is None:
        print("load.profile: needs py-spy (pip install -e '.[bench]')", file=sys.stderr)
        return 2
    missing = stack_missing()
    if missing:
        print(f"load.profile: needs {missing}; run `bash infra/stack.sh up`", file=sys.stderr)
        return 2
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    sampler = Sampler(args.out / f"profile-{stamp}", args.rate, executable)
    chosen = [p for p in plan(args.quick, wanted) if p.name in wanted]
    heading = {"started": stamp, "commit": _commit(), "sizes": "quick" if args.quick else "full",
               "rate": f"{args.rate} samples/s", "load average before":
               " ".join(f"{x:.2f}" for x in os.getloadavg())}
    with contextlib.ExitStack() as stack:
        if args.quick:
            stack.enter_context(kept.sharing(QUICK_KEEP))
            stack.enter_context(deploy.quiet_period(QUICK_QUIET_S))
        stack.enter_context(window.watching(sampler.window))
        outcomes = [_run(p) for p in chosen]
    sampled = [s for w in sampler.windows for s in _profiles(w, args.rate)]
    report = sampler.out / "report.md"
    report.write_text(markdown(heading, outcomes, sampled))
    print(summary(sampled), end="")
    print(f"wrote {report}")
    return 1 if any(o.error for o in outcomes) else 0


def _run(p: Planned) -> Outcome:
    """Run one benchmark; its error, if it failed, is in the outcome."""
    log.info("%s %s: running sampled (%s)", p.name, p.title, p.settings)
    try:
        return Outcome(p.name, p.run())
    except Exception as e:  # one failed benchmark must not lose the other's profiles
        traceback.print_exc()
        values = e.values if isinstance(e, PartialResult) else {}
        return Outcome(p.name, values, f"{type(e).__name__}: {e}")


def _profiles(w: Window, rate: int) -> list[Sampled]:
    """Read the window's collapsed stacks, write each process's flamegraph beside them."""
    found: list[Sampled] = []
    for service in w.services:
        raw = w.raw(service)
        counted = stacks.parse(raw.read_text()) if raw.exists() else Counter[stacks.Stack]()
        svg = raw.with_name(f"{service}.svg")
        svg.write_text(flamegraph.svg(counted, f"{w.label} — {service}"))
        found.append(Sampled(w.label, w.seconds, service, stacks.aggregate(counted), rate,
                             f"{w.label}/{raw.name}", f"{w.label}/{svg.name}"))
    return found


def _commit() -> str:
    """The checkout's commit (``git describe --always --dirty``), or '?' outside git."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return done.stdout.strip()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m load.profile",
        description="Run B2 and B3 while py-spy samples the coordinators, workers and "
        "gateway; write <out>/profile-<UTC>/report.md, collapsed stacks and flamegraphs.")
    parser.add_argument("--quick", action="store_true",
                        help="the benchmarks' small sizes and shared deployments")
    parser.add_argument("--only", default=",".join(PROFILED_BENCHMARKS),
                        help="B2, B3 or both (default)")
    parser.add_argument("--rate", type=int, default=100, help="samples per second (default 100)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where profile-<UTC>/ goes (default {DEFAULT_OUT})")
    return parser
