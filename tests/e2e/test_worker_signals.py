"""``python -m services.worker`` stops cleanly on SIGTERM and SIGINT, mid-attempt too: it
drains for ``HEADWATER_DRAIN_S`` (1 s here), then stops the attempt still running."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from stackkit import BOOTSTRAP, HERE
from test_worker_polling import dispatch, fresh_topics, produce, read_all

from headwater.core import events as ev
from headwater.topics import Topics
from ops.localstack import REPO
from tests.polling import scaled, wait_until_async


@pytest.fixture
def topics() -> Iterator[Topics]:
    """A fresh topic prefix, deleted afterwards."""
    with fresh_topics() as names:
        yield names


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_worker_exits_cleanly_on_a_signal_while_a_task_runs(
        topics: Topics, sig: signal.Signals, tmp_path: Path) -> None:
    await produce(topics, dispatch("nap", "e2e.sleep", {"seconds": 60}))
    log = tmp_path / "worker.log"
    env = {**os.environ, "HEADWATER_KAFKA_BOOTSTRAP": BOOTSTRAP,
           "HEADWATER_TOPIC_PREFIX": topics.prefix, "HEADWATER_PARTITIONS": "1",
           "HEADWATER_DRAIN_S": "1",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.worker", "--queue", "cpu", "--tasks", "e2e_tasks"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        async def started() -> bool:
            return any(isinstance(r, ev.TaskStarted) for r in await read_all(topics.reports))

        await wait_until_async(started, 60, "TaskStarted", interval_s=0.3)
        proc.send_signal(sig)
        code = await asyncio.to_thread(proc.wait, scaled(20))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text(errors="replace")
    assert code == 0, output
    assert "Traceback" not in output, output
    assert "draining" in output and "stopped" in output
