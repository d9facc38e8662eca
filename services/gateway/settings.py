"""Gateway settings, read once from ``HEADWATER_*`` variables."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.common.auth.settings import ServiceAuth, service_auth_from_env
from services.common.settings import OFF, CommonSettings, env_float, env_int, env_str
from services.gateway.auth.gate import parse_metrics_auth
from services.gateway.edge.cors import parse_origins
from services.gateway.queues.admission import parse_maxdepth


@dataclass(frozen=True)
class Settings(CommonSettings):
    """Gateway settings.

    Attributes:
        host: listen address (``HEADWATER_GATEWAY_HOST``).
        port: listen port (``HEADWATER_GATEWAY_PORT``).
        max_body_bytes: largest accepted request body, bytes (``HEADWATER_MAX_BODY_BYTES``);
            larger ones get 413.
        max_payload_bytes: largest accepted body of a submission (``POST /v1/workflows``,
            ``POST /v1/run/{name}``, a workflow's path) or a signal, bytes
            (``HEADWATER_MAX_PAYLOAD_BYTES``, 256 MiB by default); larger ones get 413.
            Their values over ``HEADWATER_BLOB_THRESHOLD_BYTES`` go by reference
            (``blobs.payloads``), so the record stays small; the body is held in memory
            while it is read and parsed.
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
        queue_maxdepth: per queue, the backlog (dispatches not taken yet) at which a
            submission needing the queue gets 429 (``HEADWATER_QUEUE_MAXDEPTH``,
            ``"gpu=100,cpu=0"``; ``*=N`` for the queues not named; 0 or unnamed:
            unlimited).
        announce_grace_s: how long after start the gateway places nodes but refuses
            none for want of a live worker, seconds (``HEADWATER_ANNOUNCE_GRACE_S``, 10 by
            default: two of the workers' default announce intervals), since workers
            started with it may not have announced themselves yet.
        unserved_after_s: the horizon of admission, seconds
            (``HEADWATER_UNSERVED_AFTER_S``, 60 by default): a task counts as served on a
            queue while a live worker serves it or one was heard serving it less than
            this long ago, so a submission is refused (400) only after that; a queue whose
            only worker restarts (stopping, tombstone, the new one announcing) or was
            killed is not refused meanwhile. Status views (``queue_state``, ``GET
            /v1/queues``) go by the live workers alone.
        run_timeout_max_s: the longest a synchronous ``POST /v1/run/{name}`` waits for
            its run to end, seconds (``HEADWATER_RUN_TIMEOUT_MAX_S``, 60 by default): a
            larger ``timeout`` is cut to it, and none means it.
        cors_origins: the other origins whose pages may call the API
            (``HEADWATER_CORS_ORIGINS``: comma-separated, or ``*``; empty, the default:
            none, CORS off; ``edge.cors.parse_origins``).
        auth: whether requests need a bearer token, and the gateway's own
            (``HEADWATER_AUTH``, ``HEADWATER_TOKEN``; ``auth.settings``): off by default.
        metrics_token: with auth on, whether ``GET /metrics`` needs a token of tenant
            ``*`` (``HEADWATER_METRICS_AUTH``: ``token``, the default, or ``open``;
            ``auth.gate.parse_metrics_auth``).
        run_triggers: whether this gateway runs the triggers' consumers
            (``HEADWATER_TRIGGERS``: ``on``, the default, or ``off``: it serves
            ``/v1/triggers`` and leaves the consuming to the gateways that run them).
        operations_lease_s: how long a running bulk operation's gateway may go without
            writing its record before another gateway takes the operation over, seconds
            (``HEADWATER_OPERATIONS_LEASE_S``, 30 by default; ``operations.store``); each
            gateway looks for such operations every third of it. Shorter: a dead
            gateway's operation goes on sooner, and a gateway slower than it to act on a
            batch (50 targets) has its operation taken over while it still works on it
            (each action is idempotent: nothing is done twice, some work is).
    """

    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 4 * 1024 * 1024
    max_payload_bytes: int = 256 * 1024 * 1024
    sse_ping_s: float = 15.0
    produce_timeout_s: float = 10.0
    ready_timeout_s: float = 1.0
    drain_s: float = 30.0
    shutdown_delay_s: float = 0.0
    queue_maxdepth: tuple[tuple[str, int], ...] = ()
    announce_grace_s: float = 10.0
    unserved_after_s: float = 60.0
    run_timeout_max_s: float = 60.0
    cors_origins: tuple[str, ...] = ()
    auth: ServiceAuth = field(default_factory=lambda: ServiceAuth(None, None))
    metrics_token: bool = True
    run_triggers: bool = True
    operations_lease_s: float = 30.0

    @classmethod
    def from_env(cls) -> Settings:
        """Read the settings from the environment."""
        return cls(
            **cls.common_from_env(),
            host=env_str("GATEWAY_HOST", "127.0.0.1"),
            port=env_int("GATEWAY_PORT", 8080),
            max_body_bytes=env_int("MAX_BODY_BYTES", 4 * 1024 * 1024),
            max_payload_bytes=env_int("MAX_PAYLOAD_BYTES", 256 * 1024 * 1024),
            sse_ping_s=env_float("SSE_PING", 15.0),
            produce_timeout_s=env_float("PRODUCE_TIMEOUT", 10.0),
            ready_timeout_s=env_float("READY_TIMEOUT", 1.0),
            drain_s=env_float("DRAIN_S", 30.0),
            shutdown_delay_s=env_float("SHUTDOWN_DELAY", 0.0),
            queue_maxdepth=parse_maxdepth(env_str("QUEUE_MAXDEPTH", "")),
            announce_grace_s=env_float("ANNOUNCE_GRACE_S", 10.0),
            unserved_after_s=env_float("UNSERVED_AFTER_S", 60.0),
            run_timeout_max_s=env_float("RUN_TIMEOUT_MAX_S", 60.0),
            cors_origins=parse_origins(env_str("CORS_ORIGINS", "")),
            auth=service_auth_from_env("gateway"),
            metrics_token=parse_metrics_auth(env_str("METRICS_AUTH", "token")),
            run_triggers=env_str("TRIGGERS", "on").lower() not in OFF,
            operations_lease_s=_lease(env_float("OPERATIONS_LEASE_S", 30.0)),
        )


def _lease(seconds: float) -> float:
    """``HEADWATER_OPERATIONS_LEASE_S`` checked: a lease of no time would have every
    gateway take every operation over at each look.

    Raises:
        ValueError: not above 0.
    """
    if not seconds > 0:
        raise ValueError(f"HEADWATER_OPERATIONS_LEASE_S must be above 0 seconds, got {seconds}")
    return seconds
