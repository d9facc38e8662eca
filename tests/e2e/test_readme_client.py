"""The Python client blocks of the README and of docs/client.md (those that begin ``from
headwater.client import Client``) run as printed, against the session's stack, and so
does the README's "Your own workflow" (its task module, spec and ``submit`` line); the
unit tests of ``tests/unit/docs`` check every other block of the pages."""

from __future__ import annotations

import ast
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from stackkit import Stack

from ops import localstack
from ops.cli.queues import wait_for_workers
from tests.docpages import README, REPO, blocks
from tests.docpages import client_blocks as page_blocks
from tests.polling import scaled


def client_blocks() -> list[str]:
    """The client blocks: the README's, then docs/client.md's."""
    blocks = page_blocks()
    assert [b.page for b in blocks[:2]] == ["README.md", "docs/client.md"], blocks
    return [b.code for b in blocks]


def run_block(stack: Stack, code: str) -> str:
    env = {**os.environ, "HEADWATER_GATEWAY_URL": stack.gateway}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=scaled(300))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_first_block_submits_and_prints_the_result(stack: Stack) -> None:
    first = client_blocks()[0]
    assert "Client()" in first and "result(" in first
    workflow_id, _, printed = run_block(stack, first).strip().partition(" ")
    assert workflow_id.startswith("wf-"), printed
    output = ast.literal_eval(printed)  # print() of the run's output (a dict)
    assert "csv" in [hit["module"] for hit in output["hits"]], output


def test_the_run_by_name_block_runs_waits_follows_and_streams(stack: Stack) -> None:
    lines = run_block(stack, client_blocks()[1]).splitlines()
    assert "zipfile" in ast.literal_eval(lines[0]), lines[0]
    history = [line.split() for line in lines[1:] if line.split()[0].isdigit()]
    assert [int(seq) for seq, _ in history] == list(range(1, len(history) + 1))
    assert history[-1][1] == "WorkflowSucceeded", history[-1]
    streamed = [line.split()[0] for line in lines[1 + len(history):]]
    assert streamed[0] == "accepted" and streamed[-1] == "WorkflowSucceeded", streamed


def own_workflow() -> tuple[str, str, list[str]]:
    """The README's "Your own workflow": the task module, the spec, and the arguments of
    its ``headwater submit`` line."""
    task_code = next(b.code for b in blocks(README, "python") if b.code.startswith(
        "# my_tasks.py"))
    spec = next(b.code for b in blocks(README, "yaml") if b.code.startswith("# count.yaml"))
    shell = next(b.code for b in blocks(README, "bash") if "--tasks my_tasks" in b.code)
    submit = next(line for line in shell.splitlines() if " submit " in line)
    words = shlex.split(submit, comments=True)
    return task_code, spec, words[words.index(".venv/bin/headwater") + 1:]


def test_your_own_workflow_runs_as_printed(stack: Stack, tmp_path: Path) -> None:
    task_code, spec, submit = own_workflow()
    (tmp_path / "my_tasks.py").write_text(task_code)
    (tmp_path / "count.yaml").write_text(spec)
    worker = localstack.Service("worker-text-1", (
        sys.executable, "-m", "services.worker", "--queue", "text", "--tasks", "my_tasks"))
    stack.start(worker, {"PYTHONPATH": os.pathsep.join([str(tmp_path), stack.env["PYTHONPATH"]])})
    try:
        wait_for_workers(stack.gateway, "text", scaled(30))
        env = {**os.environ, "HEADWATER_GATEWAY_URL": stack.gateway, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", "from ops.cli import main; main()",
                               *submit], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=scaled(120))
    finally:
        stack.stop(worker)
        stack.services.remove(worker)
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout.partition("\nsucceeded in ")[2]
    assert output, done.stdout
    assert json.loads(output.split("\n", 1)[1]) == [{"words": 3}, {"words": 2}], done.stdout
