"""Coordinator settings, read once from ``HEADWATER_*`` variables."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.common import metrics
from services.common.auth.settings import ServiceAuth, service_auth_from_env
from services.common.settings import OFF, ON, CommonSettings, env_float, env_int, env_str


@dataclass(frozen=True)
class Settings(CommonSettings):
    """Coordinator settings.

    Attributes:
        timer_interval_s: how often the timer loop looks for due timers, seconds
            (``HEADWATER_TIMER_INTERVAL``).
        store: faust table store URL (``HEADWATER_TABLE_STORE``): ``rocksdb://``, the
            default, keeps each partition's table in a RocksDB under ``data_dir``, so a
            restart reads only its changelog's tail; ``memory://`` rebuilds the table
            from its changelog topic at every start.
        data_dir: faust's data directory (``HEADWATER_DATA_DIR``).
        batch_max: most input records applied per batch (``HEADWATER_BATCH_MAX``).
        batch_window_s: how long a batch waits for more records, seconds
            (``HEADWATER_BATCH_WINDOW``); adds at most this much latency at low load.
        projection: whether this process also keeps the PostgreSQL projection
            (``HEADWATER_PROJECTION``, ``on``/``off``; ``off`` when
            ``python -m services.projector`` runs on its own).
        events_retention_ms: Kafka's ``retention.ms`` of the events topic when the
            coordinator creates it (``HEADWATER_EVENTS_RETENTION_MS``); -1, the default,
            keeps the history for ever, so that replays and projection rebuilds see all
            of it. An existing topic keeps its configuration.
        instance_id: this coordinator's static member id in its consumer group
            (``HEADWATER_COORDINATOR_INSTANCE``; Kafka's ``group.instance.id``, KIP-345),
            or None for a dynamic member. A static member restarted with the same id
            takes its partitions back at once instead of after the dead member's session
            timeout; it sends no ``LeaveGroup`` when it stops, so its partitions move to
            the others only after ``session.timeout.ms`` (aiokafka cannot send the
            ``LeaveGroup`` v3 that names an instance): a rolling restart is faster, a
            scale-down slower. Unset on the local stack and in the tests, set in the
            benchmarks' deployment (``load/deploy.py``). Give every coordinator its own
            stable id (the pod name of a StatefulSet) and never run two live processes
            with one id: Kafka then fences each in turn, both go on writing, and
            histories get seqs with two bodies.
        history_heartbeats: record each ``TaskHeartbeated`` in the history
            (``HEADWATER_HISTORY_HEARTBEATS``, ``on``/``off``, default ``off``). Off, a
            heartbeat only moves its attempt's lease in the coordinator's memory: no
            history record, table entry or intent per heartbeat.
        metrics_port: the port of this process's Prometheus endpoint, ``/metrics``
            (``HEADWATER_METRICS_PORT``, 9181 by default; 0: none), on
            ``metrics_host`` (``HEADWATER_METRICS_HOST``, ``127.0.0.1``). It also serves
            the projector's metrics when it runs here (docs/metrics.md).
        retention_s: how long a workflow stays in the coordinator's table after its last
            event once it has ended, seconds (``HEADWATER_RETENTION_S``, default
            ``DEFAULT_RETENTION_S``, a day; ``off`` or 0: for ever). Then its entries are
            deleted and only a marker of under 250 bytes stays, under which a duplicate
            of its submission, a late report or a copy of a signal it took changes
            nothing, as before the purge, and another signal or another submission under
            its id is refused (``retention``). It
            must be longer than late reports and a Kafka producer's resubmissions are
            expected to take. It does not touch the events topic
            (``events_retention_ms``) nor the projection.
        auth: checks the tokens of submissions on Kafka, and the coordinator's own
            (``HEADWATER_AUTH``, ``HEADWATER_TOKEN``; ``auth.settings``): off by default.
    """

    timer_interval_s: float = 0.05
    store: str = "rocksdb://"
    data_dir: str = ".headwater/coordinator"
    batch_max: int = 500
    batch_window_s: float = 0.002
    projection: bool = True
    events_retention_ms: int = -1
    instance_id: str | None = None
    history_heartbeats: bool = False
    metrics_port: int = metrics.DEFAULT_PORTS["coordinator"]
    metrics_host: str = metrics.DEFAULT_HOST
    retention_s: float | None = None
    auth: ServiceAuth = field(default_factory=lambda: ServiceAuth(None, None))

    @classmethod
    def from_env(cls) -> Settings:
        """Read the settings from the environment."""
        return cls(
            **cls.common_from_env(),
            timer_interval_s=env_float("TIMER_INTERVAL", 0.05),
            store=env_str("TABLE_STORE", "rocksdb://"),
            data_dir=env_str("DATA_DIR", ".headwater/coordinator"),
            batch_max=env_int("BATCH_MAX", 500),
            batch_window_s=env_float("BATCH_WINDOW", 0.002),
            projection=env_str("PROJECTION", "on").lower() not in OFF,
            events_retention_ms=env_int("EVENTS_RETENTION_MS", -1),
            instance_id=env_str("COORDINATOR_INSTANCE", "").strip() or None,
            history_heartbeats=env_str("HISTORY_HEARTBEATS", "off").lower() in ON,
            metrics_port=metrics.port_from_env("coordinator"),
            metrics_host=metrics.host_from_env(),
            retention_s=retention_from_env(),
            auth=service_auth_from_env("coordinator"),
        )


DEFAULT_RETENTION_S = 86_400.0
"""How long an ended workflow stays in the table unless ``HEADWATER_RETENTION_S`` says
otherwise, seconds: a day, long enough for a producer's retries and late reports, short
enough that the table holds what is live and a day of what ended."""


def retention_from_env() -> float | None:
    """``HEADWATER_RETENTION_S`` in seconds (``DEFAULT_RETENTION_S`` when unset or empty),
    or None for ``off`` or 0.

    Raises:
        ValueError: neither ``off`` nor a number of seconds of at least 0.
    """
    raw = env_str("RETENTION_S", "").strip().lower()
    if raw == "":
        return DEFAULT_RETENTION_S
    if raw in OFF:
        return None
    seconds = float(raw)
    if seconds < 0:
        raise ValueError(f"HEADWATER_RETENTION_S={raw!r}: must be off or seconds >= 0")
    return seconds or None
