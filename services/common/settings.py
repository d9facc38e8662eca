"""Settings shared by every service, read once from ``HEADWATER_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TypedDict

from headwater.topics import DEFAULT_PARTITIONS, DEFAULT_PREFIX, Topics

DEFAULT_BOOTSTRAP = "127.0.0.1:19092"
DEFAULT_PG_DSN = "postgresql://postgres@127.0.0.1:55432/headwater"
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest record Headwater produces by default, bytes (the local broker's
``message.max.bytes``)."""


def default_bootstrap() -> str:
    """The local broker: ``127.0.0.1:$HEADWATER_KAFKA_PORT`` (the port ``infra/`` uses)."""
    port = os.environ.get("HEADWATER_KAFKA_PORT")
    return f"127.0.0.1:{port}" if port else DEFAULT_BOOTSTRAP


def default_pg_dsn() -> str:
    """The local database, on ``$HEADWATER_PG_PORT`` when set (the port ``infra/`` uses)."""
    port = os.environ.get("HEADWATER_PG_PORT")
    return f"postgresql://postgres@127.0.0.1:{port}/headwater" if port else DEFAULT_PG_DSN


ON = ("on", "1", "true", "yes")
OFF = ("off", "0", "false", "no")
"""How ``on``/``off`` settings may be spelled (lower case)."""


def env_str(name: str, default: str) -> str:
    """``HEADWATER_<name>`` or ``default``."""
    return os.environ.get(f"HEADWATER_{name}", default)


def env_int(name: str, default: int) -> int:
    """``HEADWATER_<name>`` as an integer. Raises ``ValueError`` naming the variable."""
    raw = os.environ.get(f"HEADWATER_{name}")
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"HEADWATER_{name} must be an integer, got {raw!r}") from None


def env_float(name: str, default: float) -> float:
    """``HEADWATER_<name>`` as a float. Raises ``ValueError`` naming the variable."""
    raw = os.environ.get(f"HEADWATER_{name}")
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"HEADWATER_{name} must be a number, got {raw!r}") from None


class CommonFields(TypedDict):
    """The fields of ``CommonSettings`` as keyword arguments (what ``common_from_env``
    reads), typed so that ``Settings(**CommonSettings.common_from_env(), ...)`` checks."""

    bootstrap: str
    prefix: str
    partitions: int
    replication: int
    pg_dsn: str
    max_message_bytes: int


@dataclass(frozen=True)
class CommonSettings:
    """What every service needs.

    Attributes:
        bootstrap: Kafka bootstrap servers, ``host:port[,host:port]``
            (``HEADWATER_KAFKA_BOOTSTRAP``; default ``127.0.0.1:$HEADWATER_KAFKA_PORT``).
        prefix: topic name prefix (``HEADWATER_TOPIC_PREFIX``), ``headwater`` by default.
        partitions: partitions of every topic Headwater creates (``HEADWATER_PARTITIONS``).
        replication: replication factor of created topics (``HEADWATER_REPLICATION``).
        pg_dsn: PostgreSQL DSN of the projection (``HEADWATER_PG_DSN``; default on
            ``$HEADWATER_PG_PORT``).
        max_message_bytes: largest record produced, bytes (``HEADWATER_MAX_MESSAGE_BYTES``);
            must not exceed the broker's ``message.max.bytes``.
    """

    bootstrap: str = DEFAULT_BOOTSTRAP
    prefix: str = DEFAULT_PREFIX
    partitions: int = DEFAULT_PARTITIONS
    replication: int = 1
    pg_dsn: str = DEFAULT_PG_DSN
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    topics: Topics = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", Topics(self.prefix))

    @classmethod
    def common_from_env(cls) -> CommonFields:
        """The common fields as read from the environment, as keyword arguments of any
        subclass (``cls(**cls.common_from_env(), field=...)``).

        Raises:
            ValueError: a numeric variable is not an integer (the message names it).
        """
        return {
            "bootstrap": env_str("KAFKA_BOOTSTRAP", default_bootstrap()),
            "prefix": env_str("TOPIC_PREFIX", DEFAULT_PREFIX),
            "partitions": env_int("PARTITIONS", DEFAULT_PARTITIONS),
            "replication": env_int("REPLICATION", 1),
            "pg_dsn": env_str("PG_DSN", default_pg_dsn()),
            "max_message_bytes": env_int("MAX_MESSAGE_BYTES", DEFAULT_MAX_MESSAGE_BYTES),
        }
