"""Settings shared by every service, read once from ``HEADWATER_*`` environment variables."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TypedDict

from headwater.topics import DEFAULT_PARTITIONS, DEFAULT_PREFIX, MAX_PREFIX_CHARS, Topics
from services.common.kafka.security import KafkaSecurity

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


PREFIX_PATTERN = re.compile(rf"[A-Za-z0-9._-]{{1,{MAX_PREFIX_CHARS}}}")
"""A topic prefix: what Kafka takes in a topic name, short enough that every topic of
the deployment (a lane's the longest, ``Topics.lane``) stays within 249 characters."""


def prefix_from_env() -> str:
    """``HEADWATER_TOPIC_PREFIX`` (``headwater`` by default).

    Raises:
        ValueError: not 1 to ``MAX_PREFIX_CHARS`` letters, digits, ``.``, ``_``, ``-``
            (the message names the variable).
    """
    prefix = env_str("TOPIC_PREFIX", DEFAULT_PREFIX)
    if not PREFIX_PATTERN.fullmatch(prefix):
        raise ValueError(f"HEADWATER_TOPIC_PREFIX must be 1 to {MAX_PREFIX_CHARS} letters, "
                         f"digits, '.', '_' or '-', got {prefix!r} ({len(prefix)} "
                         f"characters)")
    return prefix


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


def read_secret(value: str, file: str, name: str) -> str | None:
    """A secret given either as the value of ``HEADWATER_<name>`` or as the contents of
    the file named by ``HEADWATER_<name>_FILE`` (a mounted Kubernetes Secret, say), with
    its trailing line break removed.

    Args:
        value: ``HEADWATER_<name>`` ("" when unset).
        file: ``HEADWATER_<name>_FILE`` ("" when unset).
        name: the variable's name without ``HEADWATER_``, for messages.

    Returns:
        The secret, or None when neither is set.

    Raises:
        ValueError: both are set, the file cannot be read, or it is empty (the message
            names the variable and the file, never the secret).
    """
    if value and file:
        raise ValueError(f"set HEADWATER_{name} or HEADWATER_{name}_FILE, not both")
    if not file:
        return value or None
    try:
        with open(file, encoding="utf-8") as f:
            secret = f.read().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"HEADWATER_{name}_FILE names {file!r}, which cannot be read "
                         f"({type(e).__name__})") from None
    if not secret:
        raise ValueError(f"HEADWATER_{name}_FILE names {file!r}, which is empty")
    return secret


def kafka_security_from_env() -> KafkaSecurity:
    """The ``HEADWATER_KAFKA_SECURITY_PROTOCOL``, ``HEADWATER_KAFKA_SASL_*`` and
    ``HEADWATER_KAFKA_SSL_*`` settings (protocol and mechanism in any case; an empty
    variable counts as unset).

    Raises:
        ValueError: a bad or incomplete combination (see ``KafkaSecurity``), or an
            unreadable password file; the message names the variable.
    """
    return KafkaSecurity(
        protocol=env_str("KAFKA_SECURITY_PROTOCOL", "").strip().upper() or "PLAINTEXT",
        sasl_mechanism=env_str("KAFKA_SASL_MECHANISM", "").strip().upper() or None,
        sasl_username=env_str("KAFKA_SASL_USERNAME", "") or None,
        sasl_password=read_secret(env_str("KAFKA_SASL_PASSWORD", ""),
                                  env_str("KAFKA_SASL_PASSWORD_FILE", ""), "KAFKA_SASL_PASSWORD"),
        ssl_cafile=env_str("KAFKA_SSL_CAFILE", "") or None,
        ssl_certfile=env_str("KAFKA_SSL_CERTFILE", "") or None,
        ssl_keyfile=env_str("KAFKA_SSL_KEYFILE", "") or None,
    )


PG_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
"""libpq's ``sslmode`` values (the PostgreSQL manual, "SSL Support" in libpq), which
asyncpg's ``ssl=`` takes too."""


@dataclass(frozen=True)
class PgAuth:
    """What is added to the projection's DSN when connecting.

    Attributes:
        password: the password (``HEADWATER_PG_PASSWORD``, or the contents of
            ``HEADWATER_PG_PASSWORD_FILE``), used when the DSN has none; never shown
            by ``repr``.
        sslmode: libpq's ``sslmode`` (``HEADWATER_PG_SSLMODE``), passed as asyncpg's
            ``ssl=``; None: the DSN's ``sslmode``, else asyncpg's default (``prefer``).

    Raises:
        ValueError: ``sslmode`` is not one of libpq's (the message names the variable).
    """

    password: str | None = field(default=None, repr=False)
    sslmode: str | None = None

    def __post_init__(self) -> None:
        if self.sslmode is not None and self.sslmode not in PG_SSLMODES:
            raise ValueError(f"HEADWATER_PG_SSLMODE must be one of {', '.join(PG_SSLMODES)}, "
                             f"got {self.sslmode!r}")


def pg_auth_from_env() -> PgAuth:
    """The ``HEADWATER_PG_PASSWORD``/``HEADWATER_PG_PASSWORD_FILE`` and
    ``HEADWATER_PG_SSLMODE`` settings (an empty variable counts as unset).

    Raises:
        ValueError: a bad ``sslmode`` or an unreadable password file (the message names
            the variable).
    """
    return PgAuth(
        password=read_secret(env_str("PG_PASSWORD", ""), env_str("PG_PASSWORD_FILE", ""),
                             "PG_PASSWORD"),
        sslmode=env_str("PG_SSLMODE", "").strip().lower() or None,
    )


class CommonFields(TypedDict):
    """The fields of ``CommonSettings`` as keyword arguments (what ``common_from_env``
    reads), typed so that ``Settings(**CommonSettings.common_from_env(), ...)`` checks."""

    bootstrap: str
    prefix: str
    partitions: int
    replication: int
    pg_dsn: str
    max_message_bytes: int
    kafka_security: KafkaSecurity
    pg_auth: PgAuth


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
        kafka_security: TLS and SASL of every Kafka client (``HEADWATER_KAFKA_SECURITY_*``,
            ``HEADWATER_KAFKA_SASL_*``, ``HEADWATER_KAFKA_SSL_*``; plaintext by default).
        pg_auth: password and ``sslmode`` of every PostgreSQL connection
            (``HEADWATER_PG_PASSWORD[_FILE]``, ``HEADWATER_PG_SSLMODE``).
    """

    bootstrap: str = DEFAULT_BOOTSTRAP
    prefix: str = DEFAULT_PREFIX
    partitions: int = DEFAULT_PARTITIONS
    replication: int = 1
    pg_dsn: str = DEFAULT_PG_DSN
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)
    pg_auth: PgAuth = field(default_factory=PgAuth)
    topics: Topics = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", Topics(self.prefix))

    @classmethod
    def common_from_env(cls) -> CommonFields:
        """The common fields as read from the environment, as keyword arguments of any
        subclass (``cls(**cls.common_from_env(), field=...)``).

        Raises:
            ValueError: a numeric variable is not an integer, or a security setting is
                bad or incomplete (the message names the variable).
        """
        return {
            "bootstrap": env_str("KAFKA_BOOTSTRAP", default_bootstrap()),
            "prefix": prefix_from_env(),
            "partitions": env_int("PARTITIONS", DEFAULT_PARTITIONS),
            "replication": env_int("REPLICATION", 1),
            "pg_dsn": env_str("PG_DSN", default_pg_dsn()),
            "max_message_bytes": env_int("MAX_MESSAGE_BYTES", DEFAULT_MAX_MESSAGE_BYTES),
            "kafka_security": kafka_security_from_env(),
            "pg_auth": pg_auth_from_env(),
        }
