"""Helpers of the breakage suite (``test_breakage_*.py``): a private stack whose worker
also imports the hostile tasks of ``break_tasks.py``, and synchronous polling of a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from stackkit import HERE, private_stack

from ops import localstack
from ops.sandbox import Sandbox, set_home
from tests.polling import scaled

TERMINAL = ("succeeded", "failed", "cancelled")


@contextmanager
def hostile_stack(home: Path, extra_env: dict[str, str] | None = None) -> Iterator[Sandbox]:
    """A private sandbox (``stackkit.private_stack``: one worker of queue ``cpu``) whose
    worker also imports ``break_tasks``' tasks."""
    with private_stack(home, 1, extra_env, more_tasks=("break_tasks",)) as stack:
        yield stack


def one_task(task: str, input: dict[str, Any], **node: Any) -> dict[str, Any]:
    """A spec of one node ``t`` running ``task`` once (no retry)."""
    return {"name": "one", "nodes": [{"id": "t", "task": task, "input": input,
                                      "retry": {"max_attempts": 1}, **node}]}


def submit(client: httpx.Client, spec: dict[str, Any], input: Any = None,
           workflow_id: str | None = None) -> str:
    """Submit ``spec`` under a fresh id (or ``workflow_id``); return the id."""
    workflow_id = workflow_id or f"brk-{uuid.uuid4().hex[:10]}"
    response = client.post("/v1/workflows", json={"id": workflow_id, "workflow": spec,
                                                  "input": input if input is not None else {}})
    assert response.status_code in (200, 202), response.text
    return workflow_id


def wait_run(client: httpx.Client, workflow_id: str, timeout_s: float = 60,
             until: tuple[str, ...] = TERMINAL) -> dict[str, Any]:
    """Poll the run until its status is one of ``until``; its document.

    Raises:
        TimeoutError: not so within ``timeout_s`` (scaled), naming the last document.
    """
    deadline = time.monotonic() + scaled(timeout_s)
    last = ""
    while time.monotonic() < deadline:
        response = client.get(f"/v1/workflows/{workflow_id}")
        if response.status_code == 200 and response.json()["status"] in until:
            return dict(response.json())
        last = response.text[:600]
        time.sleep(0.2)
    raise TimeoutError(f"{workflow_id} not {'/'.join(until)} in {timeout_s} s: {last}")


def log_lines(client: httpx.Client, workflow_id: str, node: str = "t", index: str = "-",
              timeout_s: float = 20) -> dict[str, Any]:
    """The task's log document once ``complete`` (or the last one after ``timeout_s``)."""
    deadline = time.monotonic() + scaled(timeout_s)
    while True:
        doc = dict(client.get(f"/v1/workflows/{workflow_id}/tasks/{node}/{index}/logs",
                              params={"limit": 1000}).json())
        if doc.get("complete") or time.monotonic() > deadline:
            return doc
        time.sleep(0.3)


def kill_and_restart(stack: Sandbox, name: str, pause_s: float = 0.5) -> int:
    """SIGKILL the stack's process ``name`` (``coordinator``, ``gateway``, ...), wait
    ``pause_s``, start it again with the stack's environment; its new pid."""
    service = next(s for s in stack.services if s.name == name)
    before = os.environ.get("HEADWATER_HOME")
    os.environ["HEADWATER_HOME"] = str(stack.home)  # where its pid file is
    try:
        pid = localstack.read_pid(service.pid_file)
        assert pid is not None, f"{name} is not running"
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while localstack.alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(pause_s)
        return stack.start(service)
    finally:
        set_home(before)


def replay(stack: Sandbox, workflow_id: str) -> tuple[int, str]:
    """``headwater replay --summary`` of the run against the stack's stores: its exit
    status (0: the table and the projection agree with the history) and output."""
    env = {**os.environ, **{k: v for k, v in stack.env.items() if k.startswith("HEADWATER_")}}
    done = subprocess.run([sys.executable, "-c", "from ops.cli import main; main()", "replay",
                           workflow_id, "--summary"],
                          env=env, capture_output=True, text=True, timeout=scaled(120),
                          cwd=str(HERE.parents[1]), check=False)
    return done.returncode, done.stdout + done.stderr
