"""``python -m services.projector``: project ``events`` into PostgreSQL until SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from services.common.settings import CommonSettings
from services.coordinator.projection import run_projector


def main() -> None:
    """Run the projector with the common ``HEADWATER_*`` settings."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = CommonSettings(**CommonSettings.common_from_env())  # type: ignore[arg-type]
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_projector(settings))


if __name__ == "__main__":
    main()
