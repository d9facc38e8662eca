"""``python -m services.worker --queue cpu --tasks examples.stdlib_search.tasks``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging

from services.worker.app import Worker
from services.worker.settings import Settings


def main() -> None:
    """Parse the command line and serve the queue until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m services.worker")
    parser.add_argument("--queue", help="queue (worker pool) to serve; HEADWATER_QUEUE")
    parser.add_argument("--tasks", action="append",
                        help="module with @task functions to import (repeatable); HEADWATER_TASKS")
    parser.add_argument("--concurrency", type=int, help="attempts at once; HEADWATER_CONCURRENCY")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = Settings.from_env(args.queue, args.tasks, args.concurrency)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(Worker(settings).run())


if __name__ == "__main__":
    main()
