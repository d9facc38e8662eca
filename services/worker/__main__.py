"""``python -m services.worker --queue cpu --tasks examples.stdlib_search.tasks``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal

from services.common import logconfig, metrics
from services.common.probes import PROBES
from services.worker.app import Worker
from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")


async def serve(settings: Settings) -> None:
    """Run a worker until SIGTERM or SIGINT, then stop it and return (no traceback).

    The probes (``/health``, ``/ready`` on the metrics port: ``services.common.probes``)
    follow it meanwhile. The first signal drains (``services.worker.drain``): the worker
    takes no more dispatches and leaves its group at once, so that the others take over
    its partitions and every dispatch it had not started; its running attempts end and
    report as usual for up to ``settings.drain_s`` seconds; those still running then are
    stopped. A
    second signal, or one before the worker serves, stops at once: running attempts are
    cancelled, and each started one is reported as a retryable ``TaskFailed``
    (``WorkerStopped``), so that the coordinator dispatches its next attempt (sync task
    code cannot be interrupted, but its next ``ctx`` call raises ``AttemptCancelled``).
    """
    main = asyncio.current_task()
    assert main is not None
    worker = Worker(settings)

    def on_signal(sig: signal.Signals) -> None:
        if worker.serving and not worker.stopping:
            log.info("worker %s: %s, draining for up to %.1f s", settings.worker_id,
                     sig.name, settings.drain_s)
            worker.stop()
        else:
            log.info("worker %s: %s, stopping at once", settings.worker_id, sig.name)
            main.cancel()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    probes = asyncio.create_task(PROBES.watch(settings.bootstrap, settings.kafka_security))
    try:
        await worker.run()
    except asyncio.CancelledError:
        log.info("worker %s stopped", settings.worker_id)
    else:
        log.info("worker %s stopped after draining", settings.worker_id)
    finally:
        probes.cancel()


def main() -> None:
    """Parse the command line and serve the queue until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m services.worker")
    parser.add_argument("--queue", help="queue (worker pool) to serve; HEADWATER_QUEUE")
    parser.add_argument("--tasks", action="append",
                        help="module with @task functions to import (repeatable); HEADWATER_TASKS")
    parser.add_argument("--concurrency", type=int, help="attempts at once; HEADWATER_CONCURRENCY")
    args = parser.parse_args()
    logconfig.configure()
    try:
        settings = Settings.from_env(args.queue, args.tasks, args.concurrency)
    except ValueError as e:  # a bad setting: named, exit 2, no traceback
        parser.error(str(e))
    metrics.serve(settings.metrics_port, settings.metrics_host)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C before the loop runs
        asyncio.run(serve(settings))


if __name__ == "__main__":
    main()
