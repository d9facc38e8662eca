"""The README's Python client blocks (those that begin ``from headwater.client import
Client``) run as printed, against the session's stack."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from stackkit import Stack

from tests.polling import scaled

REPO = Path(__file__).resolve().parents[2]
CLIENT_BLOCK = re.compile(r"```python\n(from headwater\.client import Client.*?)```", re.S)


def client_blocks() -> list[str]:
    """The README's client blocks, in order."""
    blocks = CLIENT_BLOCK.findall((REPO / "README.md").read_text())
    assert len(blocks) >= 2, "the README's client blocks are gone"
    return blocks


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
