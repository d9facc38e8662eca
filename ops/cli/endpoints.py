"""Where the audit commands find Kafka, the topics and PostgreSQL: options that default
to the ``HEADWATER_*`` variables the services read, then to the local stack."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import typer

from headwater.topics import DEFAULT_PREFIX, Topics
from ops.cli.common import fail
from services.common.kafka.security import KafkaSecurity
from services.common.settings import (
    DEFAULT_MAX_MESSAGE_BYTES,
    PgAuth,
    default_bootstrap,
    default_pg_dsn,
    kafka_security_from_env,
    pg_auth_from_env,
)

BOOTSTRAP = typer.Option(
    None, "--bootstrap", envvar="HEADWATER_KAFKA_BOOTSTRAP", show_default=False,
    help="Kafka bootstrap servers (default: 127.0.0.1 on $HEADWATER_KAFKA_PORT, 19092)")
PREFIX = typer.Option(DEFAULT_PREFIX, "--prefix", envvar="HEADWATER_TOPIC_PREFIX",
                      help="topic prefix of the deployment")
PG_DSN = typer.Option(
    None, "--pg-dsn", envvar="HEADWATER_PG_DSN", show_default=False,
    help="the projection's database (default: the local one on $HEADWATER_PG_PORT)")


@dataclass(frozen=True)
class Endpoints:
    """One deployment's Kafka, topics and database.

    Attributes:
        bootstrap: Kafka bootstrap servers, ``host:port[,host:port]``.
        prefix: the topic prefix.
        pg_dsn: the projection's PostgreSQL DSN.
        max_message_bytes: the largest record to expect, bytes
            (``HEADWATER_MAX_MESSAGE_BYTES``).
        kafka_security: TLS and SASL of the Kafka clients (the services' settings,
            ``services.common.settings.kafka_security_from_env``).
        pg_auth: password and ``sslmode`` of the PostgreSQL connections
            (``services.common.settings.pg_auth_from_env``).
    """

    bootstrap: str
    prefix: str
    pg_dsn: str
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    kafka_security: KafkaSecurity = field(default_factory=KafkaSecurity)
    pg_auth: PgAuth = field(default_factory=PgAuth)

    @property
    def topics(self) -> Topics:
        """The deployment's topic names."""
        return Topics(self.prefix)


def endpoints(bootstrap: str | None, prefix: str, pg_dsn: str | None) -> Endpoints:
    """The endpoints from the options, with the local stack's as defaults, secured as the
    environment's ``HEADWATER_KAFKA_*`` and ``HEADWATER_PG_*`` security settings say.

    Raises:
        typer.Exit: a security setting is bad (the message names the variable).
    """
    raw = os.environ.get("HEADWATER_MAX_MESSAGE_BYTES", "")
    try:
        kafka_security, pg_auth = kafka_security_from_env(), pg_auth_from_env()
    except ValueError as e:
        fail(str(e))
    return Endpoints(
        bootstrap=bootstrap or default_bootstrap(),
        prefix=prefix,
        pg_dsn=pg_dsn or default_pg_dsn(),
        max_message_bytes=(int(raw) if raw.isascii() and raw.isdigit()
                           else DEFAULT_MAX_MESSAGE_BYTES),
        kafka_security=kafka_security,
        pg_auth=pg_auth,
    )
