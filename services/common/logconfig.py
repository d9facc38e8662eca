"""How every service configures Python's logging: one format, INFO, and the Kafka
clients' chatter (``aiokafka``, ``kafka``: every rebalance, connection and metadata
update at INFO) at ``HEADWATER_KAFKA_LOG_LEVEL`` (``warning`` by default)."""

from __future__ import annotations

import logging

from services.common.settings import env_str

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
KAFKA_LOGGERS = ("aiokafka", "kafka")
"""The Kafka client libraries' loggers."""
LEVELS = ("debug", "info", "warning", "error", "critical")


def kafka_log_level() -> int:
    """``HEADWATER_KAFKA_LOG_LEVEL``: one of ``LEVELS`` (``warn`` too), as a number.

    Raises:
        ValueError: another name (the message names the variable).
    """
    name = env_str("KAFKA_LOG_LEVEL", "warning").strip().lower()
    name = "warning" if name == "warn" else name
    if name not in LEVELS:
        raise ValueError(f"HEADWATER_KAFKA_LOG_LEVEL must be one of {', '.join(LEVELS)}, "
                         f"got {name!r}")
    return logging.getLevelNamesMapping()[name.upper()]


def configure(level: int = logging.INFO) -> None:
    """The root logger at ``level`` with ``FORMAT`` on stderr, and the Kafka clients'
    loggers at ``HEADWATER_KAFKA_LOG_LEVEL`` (one that names no level is logged and
    WARNING taken: a log setting does not stop a service)."""
    logging.basicConfig(level=level, format=FORMAT)
    try:
        kafka = kafka_log_level()
    except ValueError as e:
        logging.getLogger("headwater").warning("%s; WARNING it is", e)
        kafka = logging.WARNING
    for name in KAFKA_LOGGERS:
        logging.getLogger(name).setLevel(kafka)
