"""How the services reach a secured Kafka: TLS and SASL settings, checked when they are
read, and the keyword arguments every client is built with.

The settings follow Kafka's own client configs (the Apache Kafka documentation,
"Security"): ``security.protocol`` is one of ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT``
and ``SASL_SSL``; ``sasl.mechanism`` one of ``PLAIN``, ``SCRAM-SHA-256`` and
``SCRAM-SHA-512`` (the mechanisms aiokafka and faust-streaming both speak with a user
name and a password). They turn into aiokafka's parameter names (``security_protocol``,
``sasl_mechanism``, ``sasl_plain_username``, ``sasl_plain_password``, ``ssl_context``)
with :func:`aiokafka_security`, and into faust's ``broker_credentials`` with
:func:`faust_credentials`.

    security = KafkaSecurity("SASL_SSL", "SCRAM-SHA-512", "svc", "secret", "/ca.pem")
    producer = AIOKafkaProducer(bootstrap_servers=..., **aiokafka_security(security))

A bad combination raises ``ValueError`` naming the ``HEADWATER_*`` variable to fix, when
the settings are made (at start-up), never at the first connection. aiokafka and faust
are imported only when a client is built: the settings are read by every command of
the CLI, most of which never talk to Kafka.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import faust

__all__ = ["MECHANISMS", "PROTOCOLS", "KafkaAccessRefused", "KafkaSecurity", "aiokafka_security",
           "faust_credentials", "raise_if_refused"]

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""Kafka's ``security.protocol`` values."""
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
"""The protocols that authenticate with SASL."""
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
"""The protocols that encrypt the connection with TLS."""
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""The ``sasl.mechanism`` values supported (a user name and a password)."""

PROTOCOL_VAR = "HEADWATER_KAFKA_SECURITY_PROTOCOL"
MECHANISM_VAR = "HEADWATER_KAFKA_SASL_MECHANISM"
USERNAME_VAR = "HEADWATER_KAFKA_SASL_USERNAME"
PASSWORD_VAR = "HEADWATER_KAFKA_SASL_PASSWORD"
"""The password, or ``HEADWATER_KAFKA_SASL_PASSWORD_FILE`` naming a file that holds it."""
FILE_VARS = {"ssl_cafile": "HEADWATER_KAFKA_SSL_CAFILE",
             "ssl_certfile": "HEADWATER_KAFKA_SSL_CERTFILE",
             "ssl_keyfile": "HEADWATER_KAFKA_SSL_KEYFILE"}
"""The TLS file settings, by attribute."""


@dataclass(frozen=True)
class KafkaSecurity:
    """How to connect to the brokers (checked when made).

    Attributes:
        protocol: Kafka's ``security.protocol`` (``HEADWATER_KAFKA_SECURITY_PROTOCOL``),
            ``PLAINTEXT`` by default.
        sasl_mechanism: Kafka's ``sasl.mechanism`` (``HEADWATER_KAFKA_SASL_MECHANISM``);
            required by the ``SASL_*`` protocols, refused by the others.
        sasl_username: the SASL user (``HEADWATER_KAFKA_SASL_USERNAME``).
        sasl_password: the SASL password (``HEADWATER_KAFKA_SASL_PASSWORD``, or the
            contents of ``HEADWATER_KAFKA_SASL_PASSWORD_FILE``); never shown by ``repr``.
        ssl_cafile: PEM file of the CAs that signed the brokers' certificates
            (``HEADWATER_KAFKA_SSL_CAFILE``; default: the system's CAs).
        ssl_certfile: PEM file of this client's certificate, for mutual TLS
            (``HEADWATER_KAFKA_SSL_CERTFILE``).
        ssl_keyfile: PEM file of that certificate's private key
            (``HEADWATER_KAFKA_SSL_KEYFILE``; default: in ``ssl_certfile``).

    Raises:
        ValueError: an unknown protocol or mechanism, a ``SASL_*`` protocol without a
            mechanism, user or password, SASL or TLS settings with a protocol that does
            not use them, a key without a certificate, or a TLS file that cannot be
            read; the message names the variable.
    """

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"{PROTOCOL_VAR} must be one of {', '.join(PROTOCOLS)}, "
                             f"got {self.protocol!r}")
        if self.sasl:
            _check_sasl(self)
        else:
            _refuse_sasl(self)
        _check_tls(self)

    @property
    def sasl(self) -> bool:
        """Whether the protocol authenticates with SASL."""
        return self.protocol in SASL_PROTOCOLS

    @property
    def tls(self) -> bool:
        """Whether the protocol encrypts with TLS."""
        return self.protocol in TLS_PROTOCOLS


def _check_sasl(security: KafkaSecurity) -> None:
    """A ``SASL_*`` protocol has a known mechanism, a user and a password."""
    protocol = f"{PROTOCOL_VAR} is {security.protocol}"
    if not security.sasl_mechanism:
        raise ValueError(f"{MECHANISM_VAR} must be set when {protocol} "
                         f"(one of {', '.join(MECHANISMS)})")
    if security.sasl_mechanism not in MECHANISMS:
        raise ValueError(f"{MECHANISM_VAR} must be one of {', '.join(MECHANISMS)}, "
                         f"got {security.sasl_mechanism!r}")
    if not security.sasl_username:
        raise ValueError(f"{USERNAME_VAR} must be set when {protocol}")
    if not security.sasl_password:
        raise ValueError(f"{PASSWORD_VAR} or {PASSWORD_VAR}_FILE must be set when {protocol}")


def _refuse_sasl(security: KafkaSecurity) -> None:
    """SASL settings with a protocol without SASL would be ignored: say so instead."""
    for value, name in ((security.sasl_mechanism, MECHANISM_VAR),
                        (security.sasl_username, USERNAME_VAR),
                        (security.sasl_password, PASSWORD_VAR)):
        if value:
            raise ValueError(f"{name} is set but {PROTOCOL_VAR} is {security.protocol}, "
                             f"which does not use SASL (use {' or '.join(SASL_PROTOCOLS)})")


def _check_tls(security: KafkaSecurity) -> None:
    """TLS files only with a TLS protocol, a key only with a certificate, all readable."""
    for attr, name in FILE_VARS.items():
        path = getattr(security, attr)
        if not path:
            continue
        if not security.tls:
            raise ValueError(f"{name} is set but {PROTOCOL_VAR} is {security.protocol}, "
                             f"which does not use TLS (use {' or '.join(TLS_PROTOCOLS)})")
        if not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise ValueError(f"{name} names {path!r}, which is not a readable file")
    if security.ssl_keyfile and not security.ssl_certfile:
        raise ValueError(f"{FILE_VARS['ssl_keyfile']} is set without "
                         f"{FILE_VARS['ssl_certfile']} (the key's certificate)")


def ssl_context(security: KafkaSecurity) -> ssl.SSLContext:
    """The TLS context of ``security``'s files, made once per set of files
    (``aiokafka.helpers.create_ssl_context``: the brokers' certificates and host names
    are verified).

    Raises:
        ValueError: a file is not PEM, or the key does not match the certificate (the
            message names the variables).
    """
    return _context(security.ssl_cafile, security.ssl_certfile, security.ssl_keyfile)


@functools.cache
def _context(cafile: str | None, certfile: str | None, keyfile: str | None) -> ssl.SSLContext:
    from aiokafka.helpers import create_ssl_context

    try:
        context: ssl.SSLContext = create_ssl_context(cafile=cafile, certfile=certfile,
                                                     keyfile=keyfile)
    except (ssl.SSLError, OSError) as e:
        names = [FILE_VARS[a] for a, v in (("ssl_cafile", cafile), ("ssl_certfile", certfile),
                                           ("ssl_keyfile", keyfile)) if v]
        raise ValueError(f"cannot load the TLS files of {', '.join(names)}: {e}") from e
    return context


def aiokafka_security(security: KafkaSecurity) -> dict[str, Any]:
    """The keyword arguments of ``AIOKafkaProducer``, ``AIOKafkaConsumer`` and
    ``AIOKafkaAdminClient`` that make them connect as ``security`` says.

    Returns:
        ``security_protocol`` always; ``ssl_context`` with ``SSL``/``SASL_SSL``;
        ``sasl_mechanism``, ``sasl_plain_username`` and ``sasl_plain_password`` with
        ``SASL_*`` (aiokafka's names for every user-and-password mechanism, SCRAM too).

    Raises:
        ValueError: the TLS files cannot be loaded (see :func:`ssl_context`).
    """
    kwargs: dict[str, Any] = {"security_protocol": security.protocol}
    if security.tls:
        kwargs["ssl_context"] = ssl_context(security)
    if security.sasl:
        kwargs.update(sasl_mechanism=security.sasl_mechanism,
                      sasl_plain_username=security.sasl_username,
                      sasl_plain_password=security.sasl_password)
    return kwargs


def faust_credentials(security: KafkaSecurity) -> faust.auth.Credentials | None:
    """faust's ``broker_credentials`` for ``security``: ``faust.SASLCredentials`` for
    the ``SASL_*`` protocols (with the TLS context for ``SASL_SSL``: faust takes
    ``SASL_SSL`` from its presence), ``faust.SSLCredentials`` for ``SSL``, None for
    ``PLAINTEXT``.

    Raises:
        ValueError: the TLS files cannot be loaded (see :func:`ssl_context`).
    """
    import faust

    context = ssl_context(security) if security.tls else None
    if security.sasl:
        return faust.SASLCredentials(username=security.sasl_username,
                                     password=security.sasl_password,
                                     ssl_context=context, mechanism=security.sasl_mechanism)
    if context is not None:
        return faust.SSLCredentials(context)
    return None


class KafkaAccessRefused(Exception):
    """Raised when a broker answers but refuses the connection's TLS handshake or SASL
    credentials: a setting to fix, not a broker still starting (the message names the
    variables and has the broker's or TLS's reason, never the password)."""


REFUSAL_PROBE_S = 10.0
"""How long :func:`raise_if_refused` waits for one connection, seconds."""


async def raise_if_refused(bootstrap: str, security: KafkaSecurity,
                           timeout_s: float = REFUSAL_PROBE_S) -> None:
    """Connect once to the first of the ``bootstrap`` servers as ``security`` says, and
    raise if it refuses the TLS handshake or the SASL credentials.

    aiokafka's clients report every failed bootstrap as one ``KafkaConnectionError``
    ("Unable to bootstrap"), logging the reason: a caller that retries while a broker
    starts would retry a wrong password for ever. This tells the two apart; callers
    run it when a start failed.

    Args:
        bootstrap: Kafka bootstrap servers, ``host:port[,host:port]``.
        security: how to connect.
        timeout_s: how long the connection may take, seconds.

    Raises:
        KafkaAccessRefused: the broker refused (a reachable broker, wrong settings).
        ValueError: the TLS files cannot be loaded.
    """
    if security.protocol == "PLAINTEXT":
        return
    from aiokafka.conn import create_conn
    from aiokafka.errors import AuthenticationFailedError, BrokerResponseError

    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        conn = await asyncio.wait_for(
            create_conn(host, int(port), request_timeout_ms=round(timeout_s * 1000),
                        **aiokafka_security(security)), timeout_s)
    except ssl.SSLError as e:
        raise KafkaAccessRefused(f"the TLS handshake with {host}:{port} failed ({e}); check "
                                 f"{', '.join(FILE_VARS.values())}") from e
    except (AuthenticationFailedError, BrokerResponseError) as e:
        raise KafkaAccessRefused(
            f"{host}:{port} refused SASL {security.sasl_mechanism} user "
            f"{security.sasl_username!r} ({type(e).__name__}: {e}); check {USERNAME_VAR} "
            f"and {PASSWORD_VAR}[_FILE]") from e
    except (OSError, TimeoutError):
        return  # unreachable: not a refusal
    conn.close()
