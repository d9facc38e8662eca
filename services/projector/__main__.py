"""``python -m services.projector``: project ``events`` into PostgreSQL until SIGTERM,
with ``/health`` and ``/ready`` beside ``/metrics`` (``services.common.probes``).

SIGTERM or SIGINT: the batch in hand is projected and committed (``Projector.run``, up to
its ``STOP_GRACE_S``), the consumer leaves its group, and the process exits 0; a second
signal exits at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal

from services.common import logconfig
from services.common.probes import PROBES
from services.common.settings import CommonSettings
from services.projector.writer import run_projector

log = logging.getLogger("headwater.projector")


async def serve(settings: CommonSettings) -> None:
    """Run the projector until the first SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None

    def stop(sig: signal.Signals) -> None:
        log.info("%s: stopping", sig.name)
        PROBES.drain(f"projector stopping ({sig.name})")
        for s in (signal.SIGTERM, signal.SIGINT):  # a second signal: exit at once
            loop.add_signal_handler(s, os._exit, 128 + s)
        task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, sig)
    probes = asyncio.create_task(PROBES.watch(settings.bootstrap, settings.kafka_security))
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await run_projector(settings)
    finally:
        probes.cancel()


def main() -> None:
    """Run the projector with the common ``HEADWATER_*`` settings."""
    logconfig.configure()
    settings = CommonSettings(**CommonSettings.common_from_env())
    asyncio.run(serve(settings))


if __name__ == "__main__":
    main()
