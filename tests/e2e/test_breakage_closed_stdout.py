"""Breakage: task code that closes ``sys.stdout`` and ``sys.stderr`` (a library tidying
up, a CLI entry point called as a function) closes nothing of its worker's (the capture's
stream proxies): its attempt ends, and later attempts on the same worker run. Its own
module: had the worker been poisoned, it would serve no other test."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from breakkit import hostile_stack, one_task, submit, wait_run

from ops.sandbox import Sandbox


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Sandbox]:
    with hostile_stack(tmp_path_factory.mktemp("closed")) as stack:
        yield stack


def test_a_task_that_closes_stdout_leaves_its_worker_serving(hostile: Sandbox) -> None:
    with httpx.Client(base_url=hostile.gateway, timeout=30) as http:
        closer = submit(http, one_task("brk.close_stdout", {}, heartbeat_timeout=30))
        after = submit(http, one_task("brk.print_after", {"tag": "next"}, heartbeat_timeout=30))
        closed = wait_run(http, closer, timeout_s=60)
        later = wait_run(http, after, timeout_s=60)
        assert (closed["status"], later["status"]) == ("succeeded", "succeeded"), (
            closed["error"], later["error"])
