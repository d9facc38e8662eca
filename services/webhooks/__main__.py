"""``python -m services.webhooks``: the webhooks' deliverer alone (beside a projector
run with ``HEADWATER_WEBHOOKS=off``), until SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from services.common import logconfig
from services.common.db import connect_pool
from services.common.settings import CommonSettings
from services.webhooks import metrics
from services.webhooks.runner import WebhookSettings, run_webhooks

log = logging.getLogger("headwater.webhooks")


async def serve(settings: CommonSettings) -> None:
    """Deliver until the first SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    pool = await connect_pool(settings.pg_dsn, timeout_s=float("inf"), auth=settings.pg_auth)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await run_webhooks(settings, pool, WebhookSettings(True,
                                                               WebhookSettings.from_env().timeout_s))
    finally:
        await pool.close()


def main() -> None:
    """Run the deliverer with the common ``HEADWATER_*`` settings."""
    logconfig.configure()
    metrics.serve_from_env()
    asyncio.run(serve(CommonSettings(**CommonSettings.common_from_env())))


if __name__ == "__main__":
    main()
