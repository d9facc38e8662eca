"""Gateway settings, read once from ``HEADWATER_*`` variables."""

from __future__ import annotations

from dataclasses import dataclass

from services.common.settings import CommonSettings, env_float, env_int, env_str


@dataclass(frozen=True)
class Settings(CommonSettings):
    """Gateway settings.

    Attributes:
        host: listen address (``HEADWATER_GATEWAY_HOST``).
        port: listen port (``HEADWATER_GATEWAY_PORT``).
        max_body_bytes: largest accepted request body, bytes (``HEADWATER_MAX_BODY_BYTES``);
            larger ones get 413.
        sse_ping_s: SSE heartbeat interval, seconds (``HEADWATER_SSE_PING``).
        produce_timeout_s: longest wait for Kafka to acknowledge a submission or a cancel,
            seconds (``HEADWATER_PRODUCE_TIMEOUT``); beyond it the request gets 503.
        ready_timeout_s: longest wait for PostgreSQL to answer ``/ready``'s ``select 1``
            and for a Kafka broker to answer its metadata request (both at once),
            seconds (``HEADWATER_READY_TIMEOUT``).
        drain_s: the drain window, seconds (``HEADWATER_DRAIN_S``, 30 by default): after
            SIGTERM or SIGINT the gateway keeps listening (``/ready`` 503, new work 503)
            until the requests in flight are answered, at most this long (``drain``).
        shutdown_delay_s: the least time it keeps listening after SIGTERM, seconds
            (``HEADWATER_SHUTDOWN_DELAY``, 0 by default): time for a load balancer
            polling ``/ready`` to notice the 503 and send its traffic elsewhere.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 4 * 1024 * 1024
    sse_ping_s: float = 15.0
    produce_timeout_s: float = 10.0
    ready_timeout_s: float = 1.0
    drain_s: float = 30.0
    shutdown_delay_s: float = 0.0

    @classmethod
    def from_env(cls) -> Settings:
        """Read the settings from the environment."""
        return cls(
            **cls.common_from_env(),
            host=env_str("GATEWAY_HOST", "127.0.0.1"),
            port=env_int("GATEWAY_PORT", 8080),
            max_body_bytes=env_int("MAX_BODY_BYTES", 4 * 1024 * 1024),
            sse_ping_s=env_float("SSE_PING", 15.0),
            produce_timeout_s=env_float("PRODUCE_TIMEOUT", 10.0),
            ready_timeout_s=env_float("READY_TIMEOUT", 1.0),
            drain_s=env_float("DRAIN_S", 30.0),
            shutdown_delay_s=env_float("SHUTDOWN_DELAY", 0.0),
        )
