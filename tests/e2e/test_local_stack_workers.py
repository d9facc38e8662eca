"""The local stack remembers its workers: ``headwater up`` after ``down``, and
``headwater restart``, bring back a second queue's worker, which then serves; a
``restart`` whose worker cannot import its task module stops nothing and names the
worker and the error.

The stack is private (its own ``HEADWATER_HOME``, gateway port, topic prefix and
database) on the shared broker and database, which it never starts or stops
(``--no-infra``), through the ``headwater`` command itself, as a user runs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from headwater.client import Client
from ops import localstack
from ops.sandbox import Sandbox, admin_dsn, bootstrap, free_port, stop_sandbox
from tests.polling import scaled

LANE_TASKS = '''\
from headwater import task


@task(name="w5.lane_echo", queue="lane")
def lane_echo(text: str) -> str:
    """Return ``text`` reversed (proof that the lane worker ran it)."""
    return text[::-1]
'''
SPEC = {"name": "lane-echo", "nodes": [
    {"id": "echo", "task": "w5.lane_echo", "queue": "lane", "input": {"text": "${input}"}}]}
CORE = {"coordinator", "gateway", "worker-cpu-1"}


class PrivateStack:
    """A stack driven through the ``headwater`` command in ``directory``."""

    def __init__(self, home: Path, directory: Path, env: dict[str, str], gateway: str):
        self.home, self.directory, self.env, self.gateway = home, directory, env, gateway

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``headwater ARGS`` (exit status not checked)."""
        return subprocess.run(
            [sys.executable, "-c", "from ops.cli.app import main; main()", *args],
            cwd=self.directory, env=self.env, capture_output=True, text=True,
            timeout=scaled(300))

    def ok(self, *args: str) -> str:
        """Run ``headwater ARGS``; its output, which must end with exit 0."""
        done = self.cli(*args)
        assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}\n{self.logs()}"
        return done.stdout

    def running(self) -> dict[str, int]:
        """``{process: pid}`` of the stack's live processes."""
        return dict(localstack.running_services())

    def logs(self) -> str:
        """Every process's log tail, for failure messages."""
        return "\n".join(f"--- {p.stem}\n{localstack.log_tail(p.stem, 15)}"
                         for p in sorted((self.home / "logs").glob("*.log")))

    def announced(self) -> set[str]:
        """The ``worker_id`` of every live worker the gateway knows (``GET /v1/queues``)."""
        with Client(self.gateway) as hw:
            return {w["worker_id"] for q in hw.queues() for w in q.raw["workers"]}

    def echo(self, text: str) -> str:
        """Run the lane workflow once and return its output."""
        with Client(self.gateway) as hw:
            answer = hw.submit(SPEC, input=text)
            output = hw.result(answer.id, timeout=scaled(90))
            return str(output["echo"])  # a workflow's output: its sink nodes' outputs


@pytest.fixture
def private(tmp_path: Path, services: None, monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[PrivateStack]:
    tag = uuid.uuid4().hex[:10]
    prefix, db = f"t{tag}", f"hw_{tag}"
    asyncio.run(_create_db(db))
    home, directory = tmp_path / "home", tmp_path / "project"
    directory.mkdir()
    (directory / "w5_lane_tasks.py").write_text(LANE_TASKS)
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("HEADWATER_GATEWAY_URL", "HEADWATER_DATA_DIR")}
    env.update({"HEADWATER_HOME": str(home), "HEADWATER_TOPIC_PREFIX": prefix,
                "HEADWATER_KAFKA_BOOTSTRAP": bootstrap(), "HEADWATER_GATEWAY_PORT": str(port),
                "HEADWATER_PG_DSN": admin_dsn().rsplit("/", 1)[0] + f"/{db}",
                "HEADWATER_DRAIN_S": "5", "COLUMNS": "200"})
    monkeypatch.setenv("HEADWATER_HOME", str(home))  # localstack's view of its pid files
    stack = PrivateStack(home, directory, env, f"http://127.0.0.1:{port}")
    try:
        yield stack
    finally:
        stack.cli("down", "--no-infra")
        for name in stack.running():  # should there be any left
            localstack.stop(localstack.Service(name, ()), timeout_s=10)
        stop_sandbox(Sandbox(prefix, env["HEADWATER_PG_DSN"], stack.gateway, home, env))


async def _create_db(name: str) -> None:
    conn = await asyncpg.connect(admin_dsn())
    try:
        await conn.execute(f'create database "{name}"')
    finally:
        await conn.close()


def _a_second_gateway_on_the_port_is_not_taken_for_ready(
        private: PrivateStack, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another stack's gateway started on the same port dies of ``address already in
    use``; its readiness wait, answered by this stack's gateway, says so and does not
    take that gateway for its own."""
    monkeypatch.setattr(localstack, "FOREIGN_WAIT_S", scaled(60))
    monkeypatch.setenv("HEADWATER_HOME", str(private.home.parent / "second"))
    gateway = localstack.Service("gateway", (sys.executable, "-m", "services.gateway"))
    pid = localstack.start(gateway, private.env)
    try:
        with pytest.raises(RuntimeError) as refused:
            localstack.wait_ready(f"{private.gateway}/ready", timeout_s=scaled(90),
                                  pids={"gateway": pid}, owner="gateway")
        port = private.gateway.rsplit(":", 1)[1]
        assert f"gateway (pid {pid}) exited: another process" in str(refused.value)
        assert f"port {port}" in str(refused.value) and "Errno 98" in str(refused.value)
        assert not localstack.alive(pid) and localstack.running_services() == []
    finally:
        localstack.stop_pid(pid, timeout_s=5)
        monkeypatch.setenv("HEADWATER_HOME", str(private.home))


def test_every_worker_comes_back_and_a_broken_one_stops_nothing(
        private: PrivateStack, monkeypatch: pytest.MonkeyPatch) -> None:
    # A new stack remembers the example's cpu worker besides the queue asked for.
    private.ok("up", "--no-infra", "--queue", "lane", "--tasks", "w5_lane_tasks")
    assert set(private.running()) == CORE | {"worker-lane-1"}, private.logs()
    assert private.echo("abc") == "cba"
    # The names ps gives, with their pids.
    assert {w.rsplit("-", 1)[0] for w in private.announced()} == {"worker-cpu-1",
                                                                   "worker-lane-1"}
    _a_second_gateway_on_the_port_is_not_taken_for_ready(private, monkeypatch)
    (private.directory / "lane.json").write_text(json.dumps(SPEC))
    followed = private.ok("submit", "lane.json", "--input", '"xyz"', "--follow")
    assert re.match(r"workflow wf-[0-9a-f]{32} accepted\n", followed), followed
    assert "succeeded in" in followed and '"zyx"' in followed, followed
    listed = private.ok("list", "--status", "succeeded")
    assert listed.count("lane-echo") == 2, listed

    private.ok("down", "--no-infra")
    assert private.running() == {}
    shown = private.ok("up", "--no-infra")  # no options: what the stack remembers
    assert set(private.running()) == CORE | {"worker-lane-1"}, shown + private.logs()
    assert private.echo("down-up") == "pu-nwod"

    before = private.running()
    (private.directory / "w5_lane_tasks.py").write_text(
        "raise RuntimeError('the lane model is missing')\n")
    refused = private.cli("restart")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "worker-lane-1 would not start" in refused.stdout
    assert "RuntimeError: the lane model is missing" in refused.stdout
    assert "nothing was stopped" in refused.stdout
    assert private.running() == before  # the same processes, all still running

    (private.directory / "w5_lane_tasks.py").write_text(LANE_TASKS)
    private.ok("restart")
    after = private.running()
    assert set(after) == CORE | {"worker-lane-1"}, private.logs()
    assert not set(after.values()) & set(before.values())  # every one restarted
    assert private.echo("restarted") == "detratser"

    private.ok("worker", "stop", "lane")
    assert set(private.running()) == CORE
    private.ok("restart")
    assert set(private.running()) == CORE, private.logs()  # forgotten: not started again
