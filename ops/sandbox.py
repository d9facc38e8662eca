"""A private Headwater deployment on the local broker and database, for tests and
benchmarks: a fresh topic prefix, a fresh database, and its own processes.

    sandbox = start_sandbox(Path("/tmp/x"), tasks=["my_tasks"], workers=2)
    ...
    stop_sandbox(sandbox)   # stops the processes by pid, drops the database and topics

Its own clients (creating and dropping the database and topics) and its processes use
the environment's Kafka and PostgreSQL security settings (``HEADWATER_KAFKA_SECURITY_*``,
``HEADWATER_KAFKA_SASL_*``, ``HEADWATER_KAFKA_SSL_*``, ``HEADWATER_PG_PASSWORD[_FILE]``,
``HEADWATER_PG_SSLMODE``; docs/security-settings.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient

from headwater.topics import Topics
from ops import localstack
from services.common.db import connect
from services.common.kafka.security import aiokafka_security
from services.common.settings import OFF, default_bootstrap, default_pg_dsn, kafka_security_from_env


def bootstrap() -> str:
    """``HEADWATER_KAFKA_BOOTSTRAP``, else the local broker on ``HEADWATER_KAFKA_PORT``."""
    return os.environ.get("HEADWATER_KAFKA_BOOTSTRAP") or default_bootstrap()


def admin_dsn() -> str:
    """``HEADWATER_PG_DSN``, else the local database on ``HEADWATER_PG_PORT``."""
    return os.environ.get("HEADWATER_PG_DSN") or default_pg_dsn()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sandbox:
    """One private deployment.

    Attributes:
        prefix: its topic prefix.
        dsn: its database.
        gateway: its gateway's base URL.
        home: where its pid files and logs are.
        env: the environment its processes run with.
        services: its processes.
    """

    prefix: str
    dsn: str
    gateway: str
    home: Path
    env: dict[str, str]
    services: list[localstack.Service] = field(default_factory=list)

    @property
    def topics(self) -> Topics:
        """Its topic names."""
        return Topics(self.prefix)

    def start(self, service: localstack.Service, env: Mapping[str, str] | None = None) -> int:
        """Start one more process (e.g. a second coordinator) with the sandbox's environment
        updated by ``env``. Every coordinator gets a data directory of its own."""
        if service not in self.services:
            self.services.append(service)
        own = {"HEADWATER_DATA_DIR": str(self.data_dir(service))}
        return localstack.start(service, {**self.env, **own, **(env or {})})

    def data_dir(self, service: localstack.Service) -> Path:
        """The data directory (``HEADWATER_DATA_DIR``) ``start`` gives ``service``: a
        coordinator keeps its faust data there (its table store's files)."""
        return self.home / service.name

    def stop(self, service: localstack.Service, timeout_s: float = 10.0) -> None:
        """Stop one process by pid."""
        localstack.stop(service, timeout_s)

    def logs(self, tail_chars: int = 3000) -> str:
        """The tail of every process's log, for failure messages."""
        parts = []
        for s in self.services:
            text = s.log_file.read_text(errors="replace") if s.log_file.exists() else ""
            parts.append(f"--- {s.name} ---\n{text[-tail_chars:]}")
        return "\n".join(parts)


def start_sandbox(
    home: Path, tasks: Sequence[str], workers: int = 1, queue: str = "cpu",
    pythonpath: Sequence[str] = (), extra_env: Mapping[str, str] | None = None,
) -> Sandbox:
    """Create a database and start a coordinator, a gateway and ``workers`` workers.

    Args:
        home: a private directory for pid files, logs and faust data.
        tasks: task modules the workers import.
        workers: worker processes for ``queue``.
        queue: the queue they serve.
        pythonpath: directories to put in front of ``PYTHONPATH`` (task modules).
        extra_env: more ``HEADWATER_*`` settings. With ``HEADWATER_PROJECTION=off`` the
            PostgreSQL projector runs as a process of its own (``python -m
            services.projector``) instead of inside the coordinator: what a deployment
            that cares about speed does, since the projector then has its own
            interpreter.

    Raises:
        RuntimeError: the gateway did not become ready (the logs are in the message).
    """
    sandbox = empty_sandbox(home, pythonpath, extra_env)
    services = localstack.default_services(tasks, workers, queue)
    if sandbox.env.get("HEADWATER_PROJECTION", "on").lower() in OFF:
        services.append(localstack.Service("projector", (sys.executable, "-m",
                                                         "services.projector")))
    return start_services(sandbox, services)


def start_services(sandbox: Sandbox, services: Sequence[localstack.Service]) -> Sandbox:
    """Start ``services`` in ``sandbox`` and wait until its gateway (one of them, or
    ``headwater serve``'s) is ready; return the sandbox.

    Raises:
        RuntimeError: the gateway did not become ready (the sandbox is stopped and
            dropped; the logs are in the message).
    """
    pids = [sandbox.start(s) for s in services]
    try:
        localstack.wait_ready(f"{sandbox.gateway}/ready", timeout_s=120, pids=pids)
    except Exception as e:
        stop_sandbox(sandbox)
        raise RuntimeError(f"sandbox did not start: {e}\n{sandbox.logs()}") from e
    return sandbox


def empty_sandbox(home: Path, pythonpath: Sequence[str] = (),
                  extra_env: Mapping[str, str] | None = None) -> Sandbox:
    """A sandbox with its database and topic prefix and no process yet (start them with
    ``Sandbox.start``; ``stop_sandbox`` stops them and drops both).

    Args:
        home: a private directory for pid files, logs and faust data.
        pythonpath: directories to put in front of ``PYTHONPATH`` (task modules).
        extra_env: more ``HEADWATER_*`` settings.
    """
    tag = uuid.uuid4().hex[:10]
    prefix, db = f"t{tag}", f"hw_{tag}"
    asyncio.run(_create_db(db))
    dsn = admin_dsn().rsplit("/", 1)[0] + f"/{db}"
    port = free_port()
    env = {
        "HEADWATER_HOME": str(home), "HEADWATER_TOPIC_PREFIX": prefix,
        "HEADWATER_KAFKA_BOOTSTRAP": bootstrap(), "HEADWATER_PG_DSN": dsn,
        "HEADWATER_GATEWAY_PORT": str(port), "HEADWATER_DATA_DIR": str(home / "coordinator"),
        "PYTHONPATH": os.pathsep.join([*pythonpath, os.environ.get("PYTHONPATH", "")]),
        **(extra_env or {}),
    }
    os.environ["HEADWATER_HOME"] = str(home)  # where localstack keeps this sandbox's pids
    return Sandbox(prefix, dsn, f"http://127.0.0.1:{port}", home, env)


def stop_sandbox(sandbox: Sandbox, drop: bool = True) -> None:
    """Stop every process by pid, all at once (each given up to 10 s after its SIGTERM);
    with ``drop``, delete the database and the topics.

    The pid files are read under the sandbox's own home, whatever ``HEADWATER_HOME``
    says meanwhile (a test may have pointed it at another sandbox): read elsewhere they
    would be missing, and the processes would outlive the sandbox."""
    before = os.environ.get("HEADWATER_HOME")
    set_home(str(sandbox.home))
    try:
        localstack.stop_all(sandbox.services, timeout_s=10)
    finally:
        set_home(before)
    if drop:
        asyncio.run(_drop(sandbox))


async def _create_db(name: str) -> None:
    conn = await connect(admin_dsn())
    try:
        await conn.execute(f'create database "{name}"')
    finally:
        await conn.close()


async def _drop(sandbox: Sandbox) -> None:
    conn = await connect(admin_dsn())
    try:
        db = sandbox.dsn.rsplit("/", 1)[1]
        await conn.execute(f'drop database if exists "{db}" with (force)')
    finally:
        await conn.close()
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap(),
                                **aiokafka_security(kafka_security_from_env()))
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics()
                if t.startswith((f"{sandbox.prefix}.", f"{sandbox.prefix}-"))]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


def set_home(value: str | None) -> None:
    """Set ``HEADWATER_HOME`` (where ``localstack`` keeps pid files), or unset it (None)."""
    if value is None:
        os.environ.pop("HEADWATER_HOME", None)
    else:
        os.environ["HEADWATER_HOME"] = value


@contextlib.contextmanager
def home_kept() -> Iterator[None]:
    """Restore ``HEADWATER_HOME`` on exit: ``start_sandbox`` points it at the sandbox (its
    pid files), which would mislead whoever else in this process uses the local stack."""
    before = os.environ.get("HEADWATER_HOME")
    try:
        yield
    finally:
        set_home(before)
