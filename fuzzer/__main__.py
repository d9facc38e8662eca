"""Fuzzing at the edges, from the command line: HTTP requests generated from the
gateway's OpenAPI document (schemathesis, schema-conforming and schema-violating) and
Kafka input records mutated from valid ones (truncated, bit-flipped, wrong schema,
unknown fingerprint, wrong type, wrong key or partition, empty, odd values, huge), sent
to a private sandbox on the local broker and database while valid workflows run.

    python -m fuzzer                             # the long run: about 6,000 HTTP cases
                                                 # and 7,015 records (a few minutes)
    python -m fuzzer --http 400 --kafka 600 --huge 3 --rounds 3   # the short one
    python -m fuzzer --seed 1234                 # the same cases again

Writes ``fuzzer/results/fuzz-<UTC time>.json``: inputs by kind (HTTP by operation and
mode, Kafka by mutation and topic), answers by status class, 5xx, the processes' pids
and restarts, dead letters matched with the bad records, the valid workflows' outcomes,
and every violation. Exit status 1 when there is any violation.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from fuzzer.run import run
from fuzzer.session import Options

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: Sequence[str] | None = None) -> int:
    """Run once; write the report; return the exit status."""
    args = _parser().parse_args(argv)
    options = Options(http=args.http, kafka=args.kafka, huge=args.huge, rounds=args.rounds,
                      targets=args.targets, seed=args.seed, timeout_s=args.timeout)
    began = datetime.now(UTC)
    report = run(options, log=lambda line: print(line, flush=True))
    report["began_at"] = began.isoformat()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"fuzz-{began.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    print(summary(report))
    print(f"report: {path}")
    return 1 if report["violations"] else 0


def summary(report: dict[str, Any]) -> str:
    """A few lines of the report's figures and its violations."""
    f = report["figures"]
    http, kafka, svc = f["http"], f["kafka"], f["services"]
    dead = kafka["dead_letters"]
    lines = [
        f"inputs: {f['inputs_total']} ({http['inputs']} HTTP, {kafka['inputs']} Kafka), "
        f"seed {report['options']['seed']}, {report['duration_s']} s",
        f"HTTP by status class: {http['by_status_class']}; 5xx other than documented 503: "
        f"{http['server_errors']}; documented 503: {http['documented_503']}",
        f"Kafka: {kafka['by_expectation']}; bad records dead-lettered with a reason: "
        f"{dead['dead_lettered_with_reason']}/{dead['expected']}",
        f"services crashed: {svc['crashed']}, replaced: {svc['restarted']}, restarts in "
        f"place: {svc['restarts_in_place']}",
        f"valid workflows: {f['valid_workflows']['outcomes']}",
    ]
    lines += [f"VIOLATION {v}" for v in report["violations"][:50]]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fuzzer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Options()
    p.add_argument("--http", type=int, default=defaults.http,
                   help="HTTP cases in all (default %(default)s)")
    p.add_argument("--kafka", type=int, default=defaults.kafka,
                   help="mutated Kafka records in all, besides --huge (default %(default)s)")
    p.add_argument("--huge", type=int, default=defaults.huge,
                   help="records of 1 MiB up to the broker's limit (default %(default)s)")
    p.add_argument("--rounds", type=int, default=defaults.rounds,
                   help="rounds, each with a valid workflow over HTTP and one over Kafka "
                        "(default %(default)s)")
    p.add_argument("--targets", type=int, default=defaults.targets,
                   help="running workflows that mutated reports may name (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: a fresh one)")
    p.add_argument("--timeout", type=float, default=defaults.timeout_s,
                   help="seconds to wait for the valid workflows and an idle coordinator "
                        "(default %(default)s)")
    p.add_argument("--out", default=str(RESULTS), help="where the report goes")
    return p


if __name__ == "__main__":
    sys.exit(main())
