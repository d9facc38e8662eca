"""``python -m services.serve --queue cpu --tasks examples.stdlib_search.tasks``: the
gateway, a coordinator, the projector and the workers of the named queues in one process
(``headwater serve`` runs the same)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from services.common import logconfig, metrics
from services.coordinator.app import prepare
from services.serve.app import create_app, parts_from_env


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, then serve until SIGTERM/SIGINT (``services.serve.app``).

    Args:
        argv: the arguments (``sys.argv[1:]`` when None).
    """
    parser = argparse.ArgumentParser(
        prog="headwater serve", description="The gateway, a coordinator, the projector "
        "and the workers of the named queues in one process.")
    parser.add_argument("--queue", action="append", default=[],
                        help="a queue whose worker runs here (repeatable; none: no worker)")
    parser.add_argument("--tasks", action="append",
                        help="module with @task functions the workers import (repeatable); "
                             "HEADWATER_TASKS")
    parser.add_argument("--concurrency", type=int,
                        help="attempts at once per worker; HEADWATER_CONCURRENCY")
    args = parser.parse_args(argv)
    logconfig.configure()
    try:
        parts = parts_from_env(args.queue, args.tasks, args.concurrency)
        port = metrics.port_from_env("serve")
    except ValueError as e:  # a bad setting: named, exit 2, no traceback
        parser.error(str(e))
    metrics.serve(port, metrics.host_from_env())
    facts = asyncio.run(prepare(parts.coordinator))
    app = create_app(parts, facts)
    level = os.environ.get("HEADWATER_LOG_LEVEL", "warn").lower()
    sys.argv = [sys.argv[0], "worker", "--loglevel", level, "--without-web"]
    app.main()


if __name__ == "__main__":
    main()
