"""``python -m services.gateway``: serve the HTTP API with uvicorn."""

from __future__ import annotations

import logging

import uvicorn

from services.gateway.app import create_app
from services.gateway.settings import Settings


def main() -> None:
    """Serve until SIGTERM/SIGINT."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = Settings.from_env()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port,
                log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
