"""The fault-injection suite from the command line (``make faults`` runs the full one).

    python -m faultsuite                       # full: every point 3 times, 2 kills a run,
                                               # every infrastructure fault twice,
                                               # the 100-workflow rebalance, with faults too
    python -m faultsuite --quick               # what `make test` runs (a few minutes)
    python -m faultsuite --only coordinator.after_publish --runs 5 --batch 15
    python -m faultsuite --only infra.postgres_stop --postgres-down 30 --no-rebalance
    python -m faultsuite --only coordinator.large_table --no-rebalance
                                               # the large table alone (and its baseline)
    python -m faultsuite --only code.replaying --no-rebalance --no-infra
                                               # a worker killed in the middle of
                                               # replaying a @workflow's function
    python -m faultsuite --only coordinator.large_table --table 20000 --table-waiting 500
    python -m faultsuite --only serve.sigkill --no-rebalance --no-infra --batch 8
                                               # one headwater serve SIGKILLed mid-batch
    python -m faultsuite --only gateway.operation_acted --no-rebalance --no-infra --batch 12
                                               # the gateway killed mid bulk cancel, and
                                               # each gateway that takes it over
    python -m faultsuite --list                # the fault points and scenarios
    python -m faultsuite --auth --only coordinator.after_publish --runs 1 --batch 15
                                               # the same with auth on (a tenant's runs)

The infrastructure faults (``infra.*``) run on a private broker and database each.
With ``--auth`` every run has auth on: its own keys file, the services' token, and a
tenant's token on every request of the suite (``faultsuite.auth``); the large table
(``coordinator.large_table``) is left out then (its table is filled straight on Kafka,
with no token). ``HEADWATER_TABLE_STORE``, when set, is the coordinators' table store.

Writes ``faultsuite/results/faults-<UTC time>.json`` (and ``.log`` with the processes' log
tails of any run that failed a check). Exit status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from faultsuite import summary
from faultsuite.audit import EndState
from faultsuite.batch import Submission
from faultsuite.large_table import LargeTable
from faultsuite.run import Plan, run
from faultsuite.suite import (
    INFRA,
    LARGE_TABLE,
    POINTS,
    REBALANCES,
    SERVE_KILL,
    SUITES,
    Suite,
)
from faultsuite.verdict import RunReport

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite; return the exit status."""
    args = _parser().parse_args(argv)
    # The harness's own readers complain of every refused connection while a broker
    # is down on purpose; the services' logs keep what matters.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    if args.list:
        print("\n".join([*POINTS, SERVE_KILL, LARGE_TABLE, *INFRA, *REBALANCES]))
        return 0
    suite = _suite(args)
    plans = [p for p in suite.plans() if (not args.only or p.name in args.only)
             and not (args.no_infra and p.outage is not None)
             and not (args.auth and p.table is not None)]
    rebalances = [p for p in suite.rebalance_plans()
                  if not args.no_rebalance and (not args.only or p.name in args.only)]
    if args.auth and (not args.only or LARGE_TABLE in args.only):
        print(f"-- {LARGE_TABLE} left out: with --auth its table (filled on Kafka, with no "
              f"token) would be refused", flush=True)
    began_at, started = datetime.now(UTC), time.monotonic()
    keep = Path(args.out) / f"faults-{began_at.strftime('%Y%m%dT%H%M%SZ')}-logs" \
        if args.keep_logs else None
    baselines: list[RunReport] = []
    reports: list[RunReport] = []
    for batch, todo in ((suite.batch(), plans), (suite.rebalance_batch(), rebalances)):
        if not todo:
            continue
        base = _one(Plan("baseline"), batch, None, keep, args.auth)
        baselines.append(base)
        if base.violations:
            break  # nothing to compare with
        reports += [_one(p, batch, base.outcomes(), keep, args.auth) for p in todo]
    doc = summary.summarise(suite.name, baselines, reports, started, began_at,
                            auth=args.auth)
    path = summary.write(doc, Path(args.out), began_at)
    failed = [r for r in [*baselines, *reports] if r.violations]
    if failed:
        path.with_suffix(".log").write_text("\n\n".join(
            f"=== {r.plan} ===\n" + "\n".join(r.violations) + "\n"
            + "".join(f"--- events of {w} ---\n" + "\n".join(lines) + "\n"
                      for w, lines in r.evidence.items())
            + r.logs for r in failed))
    print(summary.table(doc))
    print(f"summary: {path}")
    for v in doc["violations"][:50]:
        print(f"VIOLATION {v}")
    return 1 if doc["violations"] else 0


def _suite(args: argparse.Namespace) -> Suite:
    """The suite the options ask for."""
    suite = SUITES["quick" if args.quick else "full"]
    changes = {k: v for k, v in (("runs", args.runs), ("batch_size", args.batch),
                                 ("kills", args.kills), ("infra_runs", args.infra_runs),
                                 ("postgres_down_s", args.postgres_down),
                                 ("table_kills", args.table_kills)) if v is not None}
    table = LargeTable(*(new if new is not None else old for new, old in (
        (args.table, suite.table.finished), (args.table_waiting, suite.table.waiting))))
    return dataclasses.replace(suite, table=table, **changes)


def _one(plan: Plan, batch: list[Submission], expected: dict[str, EndState] | None,
         keep_logs: Path | None, auth: bool) -> RunReport:
    print(f"-- {plan.name}: {len(batch)} workflows{' (auth on)' if auth else ''} ...",
          flush=True)
    report = run(plan, batch, expected, keep_logs, auth=auth)
    f = report.figures
    print(f"   {f.get('duration_s')} s, deaths {report.deaths or 'none'}, "
          f"duplicates {f.get('duplicates')}, lost {f.get('lost')}, "
          f"{len(report.violations)} violations", flush=True)
    if "outage" in f:
        o = f["outage"]
        print(f"   {o['what']}: at {o['at_s']} s ({o['terminal_share']:.0%} terminal), "
              f"lasted {o['lasted_s']} s, {o['events_during']} events meanwhile, /ready "
              f"503 after {o['unready_after_s']} s and 200 again {o['ready_again_after_s']} s "
              f"after; restarts {f.get('restarts')}", flush=True)
    if "table" in f:
        t = f["table"]
        print(f"   table: {t['finished']:,} finished + {t['waiting']:,} waiting "
              f"({t['changelog_records']:,} changelog records, store {t['store']}), filled "
              f"in {t['fill_s']} s; recoveries (kill → group formed again, → first new "
              f"record, s): {[(r['group_s'], r['first_record_s']) for r in t['recoveries']]}",
              flush=True)
    if f.get("bulk"):
        b = f["bulk"]
        print(f"   bulk cancel: {b['operation']}, {b['cancels_sent']} cancels sent "
              f"({b['cancels_sent_again']} again)", flush=True)
    for v in report.violations[:10]:
        print(f"   VIOLATION {v}", flush=True)
    return report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m faultsuite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the short suite (as in make test)")
    p.add_argument("--only", action="append",
                   choices=[*POINTS, SERVE_KILL, LARGE_TABLE, *INFRA, *REBALANCES],
                   metavar="RUN", help="run only this fault point, infrastructure fault or "
                                       "rebalance scenario (repeatable; --list names them)")
    p.add_argument("--runs", type=int, help="runs per fault point")
    p.add_argument("--batch", type=int, help="workflows per fault run")
    p.add_argument("--kills", type=int, help="kills per fault run")
    p.add_argument("--table", type=int, metavar="N",
                   help=f"finished workflows filled before {LARGE_TABLE}")
    p.add_argument("--table-waiting", type=int, metavar="N",
                   help=f"workflows waiting for a signal filled before {LARGE_TABLE}")
    p.add_argument("--table-kills", type=int, metavar="N",
                   help=f"the coordinator's kills in {LARGE_TABLE}")
    p.add_argument("--infra-runs", type=int, help="runs per infrastructure fault")
    p.add_argument("--postgres-down", type=float, metavar="S",
                   help="seconds PostgreSQL stays down in infra.postgres_stop")
    p.add_argument("--no-infra", action="store_true",
                   help="skip the infrastructure faults")
    p.add_argument("--no-rebalance", action="store_true", help="skip the rebalance runs")
    p.add_argument("--auth", action="store_true",
                   help="run with auth on (HEADWATER_AUTH=on): the runs are a tenant's, "
                        "every request and submission carries a token")
    p.add_argument("--out", default=str(RESULTS), help="where the summary goes")
    p.add_argument("--keep-logs", action="store_true",
                   help="keep every process's whole log under OUT/faults-<time>-logs/")
    p.add_argument("--list", action="store_true",
                   help="print the fault points, infrastructure faults and rebalance "
                        "scenarios, and exit")
    return p


if __name__ == "__main__":
    sys.exit(main())
