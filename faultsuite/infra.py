"""A private Kafka broker and PostgreSQL server, for faults that stop the infrastructure.

The infrastructure faults kill, freeze and stop the broker and the database under a
running deployment; doing that to the local stack would break every other user of it.
So such a run gets its own: ``infra/kafka.sh`` and ``infra/postgres.sh`` started with a
private ``HEADWATER_HOME``, free ports and a private PostgreSQL directory. The broker
reuses the local stack's downloaded jars (``HEADWATER_KAFKA_LIBS``) rather than
downloading them again. Both are signalled by pid only (the broker's pid file, the
postmaster's ``postmaster.pid``), stopped at the end and their data deleted.

    with private_infra("x") as infra, infra.pointed_at():
        sandbox = start_sandbox(...)     # its topics and database live on ``infra``
        infra.kill_broker(); infra.start_broker()
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ops import localstack
from ops.sandbox import free_port

REPO = Path(__file__).resolve().parents[1]
SHARED_LIBS = REPO / ".headwater" / "kafka" / "libs"
"""The local stack's Kafka jars (``infra/kafka.sh`` downloads them there)."""
BROKER_HEAP = "-Xms128m -Xmx512m"
"""The private broker's JVM heap (``HEADWATER_KAFKA_HEAP_OPTS``): it holds one run's data."""
START_TIMEOUT_S = 120.0
"""The longest a start of the broker or the database may take, seconds (the scripts'
own waits are shorter)."""
STOP_WAIT_S = 30.0
"""How long a stopped or killed process may take to be gone, seconds."""


@dataclass(frozen=True)
class PrivateInfra:
    """One private broker and database server (not necessarily running).

    Attributes:
        home: its ``HEADWATER_HOME`` (the broker's data, logs and pid file).
        kafka_port: the broker's listener port.
        controller_port: its KRaft controller port.
        pg_port: PostgreSQL's port.
        pg_dir: PostgreSQL's directory (``HEADWATER_PG_DIR``; short, for its socket).
    """

    home: Path
    kafka_port: int
    controller_port: int
    pg_port: int
    pg_dir: Path

    @property
    def bootstrap(self) -> str:
        """The broker's bootstrap address."""
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def admin_dsn(self) -> str:
        """The server's ``headwater`` database (where sandboxes create theirs)."""
        return f"postgresql://postgres@127.0.0.1:{self.pg_port}/headwater"

    def script_env(self) -> dict[str, str]:
        """The environment of ``infra/*.sh`` for this instance."""
        env = {**os.environ, "HEADWATER_HOME": str(self.home),
               "HEADWATER_KAFKA_PORT": str(self.kafka_port),
               "HEADWATER_KAFKA_CONTROLLER_PORT": str(self.controller_port),
               "HEADWATER_KAFKA_HEAP_OPTS": BROKER_HEAP,
               "HEADWATER_PG_PORT": str(self.pg_port), "HEADWATER_PG_DIR": str(self.pg_dir)}
        libs = os.environ.get("HEADWATER_KAFKA_LIBS") or (
            str(SHARED_LIBS) if (SHARED_LIBS / ".stamp").exists() else "")
        if libs:
            env["HEADWATER_KAFKA_LIBS"] = libs
        return env

    def _script(self, name: str, command: str) -> None:
        """Run ``infra/<name>.sh <command>`` for this instance.

        Raises:
            RuntimeError: it failed (its output is in the message).
        """
        done = subprocess.run(["bash", str(REPO / "infra" / f"{name}.sh"), command],
                              env=self.script_env(), capture_output=True, text=True,
                              timeout=START_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"infra/{name}.sh {command} failed ({done.returncode}): "
                               f"{done.stdout[-2000:]}{done.stderr[-2000:]}")

    def start_broker(self) -> None:
        """Start the broker (again) and wait until it serves. Raises ``RuntimeError``."""
        self._script("kafka", "start")

    def start_postgres(self) -> None:
        """Start PostgreSQL (again) and wait until it accepts connections. Raises
        ``RuntimeError``."""
        self._script("postgres", "start")

    def broker_pid(self) -> int | None:
        """The broker's pid, if it runs (a stopped one counts as running)."""
        return localstack.read_pid(self.home / "kafka" / "kafka.pid")

    def postmaster_pid(self) -> int | None:
        """PostgreSQL's postmaster pid (the first line of ``postmaster.pid``), if it runs."""
        try:
            first = (self.pg_dir / "data" / "postmaster.pid").read_text().split("\n", 1)[0]
            pid = int(first.strip())
        except (OSError, ValueError):
            return None
        return pid if localstack.alive(pid) else None

    def kill_broker(self) -> int:
        """SIGKILL the broker and wait until it is gone; return its pid.

        Raises:
            RuntimeError: it was not running.
        """
        pid = self._signal(self.broker_pid(), signal.SIGKILL, "the broker")
        _wait_gone(pid)
        return pid

    def pause_broker(self) -> int:
        """SIGSTOP the broker (it keeps its connections and answers nothing); return its
        pid. Raises ``RuntimeError`` when it was not running."""
        return self._signal(self.broker_pid(), signal.SIGSTOP, "the broker")

    def resume_broker(self) -> None:
        """SIGCONT the broker (harmless when it runs)."""
        with contextlib.suppress(RuntimeError, ProcessLookupError):
            self._signal(self.broker_pid(), signal.SIGCONT, "the broker")

    def crash_postgres(self) -> int:
        """Stop PostgreSQL at once, as ``pg_ctl stop -m immediate`` does: the postmaster
        gets SIGQUIT and ends every session without a checkpoint, so the next start
        recovers from the WAL (the PostgreSQL manual, "Shutting Down the Server").
        Wait until it is gone; return its pid.

        Raises:
            RuntimeError: it was not running.
        """
        pid = self._signal(self.postmaster_pid(), signal.SIGQUIT, "PostgreSQL")
        _wait_gone(pid)
        return pid

    @staticmethod
    def _signal(pid: int | None, sig: signal.Signals, what: str) -> int:
        if pid is None:
            raise RuntimeError(f"{what} is not running")
        os.kill(pid, sig)
        return pid

    def stop(self) -> None:
        """Stop both by pid (the scripts' ``stop``; a frozen broker is woken first)."""
        self.resume_broker()
        for name in ("kafka", "postgres"):
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._script(name, "stop")

    def logs(self, tail_chars: int = 3000) -> str:
        """The tails of the broker's and PostgreSQL's logs, for failure messages."""
        parts = []
        for path in (self.home / "kafka" / "logs" / "server.log", self.pg_dir / "postgres.log"):
            text = path.read_text(errors="replace") if path.exists() else ""
            parts.append(f"--- {path.name} ---\n{text[-tail_chars:]}")
        return "\n".join(parts)

    @contextlib.contextmanager
    def pointed_at(self) -> Iterator[None]:
        """Point ``HEADWATER_KAFKA_BOOTSTRAP`` and ``HEADWATER_PG_DSN`` of this process at
        this instance (what ``ops.sandbox`` creates and drops sandboxes on), and put
        them back on exit."""
        wanted = {"HEADWATER_KAFKA_BOOTSTRAP": self.bootstrap, "HEADWATER_PG_DSN": self.admin_dsn}
        before = {k: os.environ.get(k) for k in wanted}
        os.environ.update(wanted)
        try:
            yield
        finally:
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + STOP_WAIT_S
    while localstack.alive(pid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} still alive {STOP_WAIT_S:g} s after its signal")
        time.sleep(0.05)


def _free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


@contextlib.contextmanager
def private_infra(name: str, postgres: bool = True) -> Iterator[PrivateInfra]:
    """Start a private broker and database server; stop them and delete their data on
    exit.

    Args:
        name: a label for the home directory.
        postgres: start PostgreSQL too (False: the broker alone).

    Raises:
        RuntimeError: one of them did not start (the scripts' output is in the message).
    """
    home = Path(tempfile.mkdtemp(prefix=f"hw-infra-{name}-"))
    kafka_port, controller_port, pg_port = _free_ports(3)
    infra = PrivateInfra(home, kafka_port, controller_port, pg_port,
                         Path(f"/var/tmp/hw-pg-{uuid.uuid4().hex[:10]}"))
    try:
        infra.start_broker()
        if postgres:
            infra.start_postgres()
        yield infra
    finally:
        infra.stop()
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(infra.pg_dir, ignore_errors=True)
