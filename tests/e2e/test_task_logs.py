"""Task logs on the real stack: a task logs with ``ctx.log`` and a logger, prints to
stdout and stderr, then raises; its lines are read live while it runs (the client's
``follow_task_logs`` and ``headwater logs RUN -f``) and after its end (over HTTP, the
client's ``task_logs``/``run_logs`` and ``headwater logs RUN``); the worker's own log
says when the attempt started and ended, without the Kafka client's INFO chatter."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from consumer_groups import wait_group_size
from log_tasks import QUEUE
from stackkit import Stack
from typer.testing import CliRunner

from headwater import errors
from headwater.client import Client, TaskLogLine
from ops import localstack
from ops.cli.app import app
from ops.cli.queues import wait_for_workers
from tests.polling import scaled, wait_until

EXPECTED = [("log", "INFO", "headwater.task", "ctx line 1"),
            ("log", "WARNING", "e2e.lib", "lib line"),
            ("stdout", "INFO", "", "stdout line"),
            ("stderr", "ERROR", "", "stderr line"),
            ("log", "INFO", "headwater.task", "after the gate")]
CLI_LINES = ["noisy #1 | [INFO headwater.task] ctx line 1",
             "noisy #1 | [WARNING e2e.lib] lib line", "noisy #1 | stdout line",
             "noisy #1 | [stderr] stderr line",
             "noisy #1 | [INFO headwater.task] after the gate"]
WORKER = localstack.Service(f"worker-{QUEUE}-1", (
    sys.executable, "-m", "services.worker", "--queue", QUEUE, "--tasks", "log_tasks"))


def _seen(lines: list[TaskLogLine]) -> list[tuple[str, str, str, str]]:
    return [(x.stream, x.level, x.logger, x.message) for x in lines]


def _read_lines(proc: subprocess.Popen[str], out: list[str]) -> None:
    assert proc.stdout is not None
    for text in proc.stdout:
        out.append(text.rstrip("\n"))


@pytest.fixture(scope="module")
def worker(stack: Stack) -> Any:
    stack.start(WORKER)
    asyncio.run(wait_group_size(stack.topics.worker_group(QUEUE), 1, "a logs worker", 30))
    wait_for_workers(stack.gateway, QUEUE, scaled(30))
    yield WORKER
    stack.stop(WORKER)
    stack.services.remove(WORKER)


def test_a_tasks_lines_live_and_after_its_end(stack: Stack, worker: Any,
                                              tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    run = f"logs-{uuid.uuid4().hex[:8]}"
    spec = {"name": "noisy", "nodes": [{"id": "noisy", "task": "e2e.logs.noisy",
                                        "queue": QUEUE, "retry": {"max_attempts": 1},
                                        "input": {"gate": str(gate)}}]}
    with Client(stack.gateway) as hw:
        hw.submit(spec, id=run)
        followed: list[TaskLogLine] = []
        follower = threading.Thread(target=lambda: followed.extend(
            hw.follow_task_logs(run, "noisy")), daemon=True)
        follower.start()
        cli = subprocess.Popen(
            [sys.executable, "-c", "from ops.cli.app import main; main()", "logs", run, "-f",
             "--gateway", stack.gateway], stdout=subprocess.PIPE, text=True,
            env={**stack.env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        printed: list[str] = []
        threading.Thread(target=_read_lines, args=(cli, printed), daemon=True).start()
        try:
            # Live: four lines read while the task waits at its gate (it has not ended).
            wait_until(lambda: len(followed) >= 4 and len(printed) >= 4, scaled(60),
                       "the first four lines, followed while the task runs")
            assert hw.get(run).status == "running"
            assert _seen(followed) == EXPECTED[:4]
            assert printed == CLI_LINES[:4]
            gate.touch()
            follower.join(scaled(60))
            assert not follower.is_alive(), "the follower did not end with the task"
            assert cli.wait(scaled(60)) == 0
        finally:
            if cli.poll() is None:
                cli.kill()
        assert _seen(followed) == EXPECTED
        assert [(x.attempt, x.line) for x in followed] == [(1, n) for n in range(1, 6)]
        assert printed == CLI_LINES
        with pytest.raises(errors.WorkflowFailed):
            hw.result(run, timeout=60)
        # After the end: the same lines over HTTP, with the client and with the CLI.
        assert _seen(hw.task_logs(run, "noisy")) == EXPECTED
        assert _seen(hw.task_logs(run, "noisy", attempt=1)) == EXPECTED
        assert [(x.node, x.index) for x in hw.run_logs(run)] == [("noisy", None)] * 5
    doc = httpx.get(f"{stack.gateway}/v1/workflows/{run}/tasks/noisy/-/logs").json()
    assert doc["complete"] is True and doc["next"] is None and doc["index"] is None
    assert [(x["line"], x["stream"], x["message"]) for x in doc["lines"]] == [
        (n, s, m) for n, (s, _, _, m) in enumerate(EXPECTED, 1)]
    result = CliRunner().invoke(app, ["logs", run, "--gateway", stack.gateway])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == CLI_LINES
    # The worker's own log: the attempt's start and end; no Kafka client INFO lines.
    text = (stack.home / "logs" / f"{WORKER.name}.log").read_text(errors="replace")
    assert f"started {run}/noisy/1 (e2e.logs.noisy)" in text
    assert f"ended {run}/noisy/1 (e2e.logs.noisy): failed (RuntimeError) after" in text
    assert " INFO aiokafka" not in text
