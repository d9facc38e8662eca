"""``python -m services.coordinator``: run one coordinator process."""

from __future__ import annotations

import asyncio
import os
import sys

from services.common import logconfig, metrics
from services.coordinator.app import create_app, prepare
from services.coordinator.settings import Settings


def main() -> None:
    """Create topics, then run the faust worker until SIGTERM/SIGINT."""
    logconfig.configure()
    try:
        settings = Settings.from_env()
    except ValueError as e:  # a bad setting: one line saying which, not a traceback
        raise SystemExit(f"coordinator: {e}") from None
    metrics.serve(settings.metrics_port, settings.metrics_host)
    facts = asyncio.run(prepare(settings))
    app = create_app(settings, facts)
    level = os.environ.get("HEADWATER_LOG_LEVEL", "warn").lower()
    sys.argv = [sys.argv[0], "worker", "--loglevel", level, "--without-web"]
    app.main()


if __name__ == "__main__":
    main()
