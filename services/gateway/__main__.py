"""``python -m services.gateway``: serve the HTTP API with uvicorn."""

from __future__ import annotations

import logging

import uvicorn

from services.common import logconfig
from services.gateway.app import create_app
from services.gateway.server import CLOSE_GRACE_S, GatewayServer
from services.gateway.settings import Settings


def main() -> None:
    """Serve until SIGTERM/SIGINT, then drain and stop (``services.gateway.server``)."""
    logconfig.configure()
    try:
        settings = Settings.from_env()
    except ValueError as e:  # a bad setting: one line saying which, not a traceback
        raise SystemExit(f"gateway: {e}") from None
    app = create_app(settings)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=CLOSE_GRACE_S)
    GatewayServer(config, app.state.hw).run()
    logging.getLogger("headwater.gateway").info("gateway stopped")


if __name__ == "__main__":
    main()
