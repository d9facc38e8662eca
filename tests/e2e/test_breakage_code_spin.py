"""Breakage: a ``@workflow`` that never awaits (a ``while True`` a user wrote by mistake).

Its activation runs on the worker's event loop (the driver steps the function by hand,
with no await in between), so its timeout (5 s here) cannot fire, the worker stops
heartbeating and taking dispatches, and every other run on the queue waits for ever;
the activation, taken again elsewhere, would stop the next worker the same way. A task
that loops runs in a thread and is stopped at its timeout. A private stack of its own,
since its worker is lost for good (``stop_sandbox`` kills it)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import httpx
import pytest
from breakkit import wait_run
from stackkit import private_stack

from ops import localstack
from ops.sandbox import Sandbox, home_kept, set_home
from tests.polling import scaled


@pytest.fixture(scope="module")
def spin_stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Sandbox]:
    with private_stack(tmp_path_factory.mktemp("code-spin"), 1,
                       {"HEADWATER_ANNOUNCE_S": "0.5"}, more_tasks=("break_flows",)) as stack:
        yield stack
        _kill_workers(stack)


def _kill_workers(stack: Sandbox) -> None:
    """SIGKILL the stack's workers by their pids and wait until they are gone: the one
    running the spinning activation cannot act on a SIGTERM (its event loop never gets
    back control), so stopping the stack would wait out its 10 s for nothing."""
    with home_kept():
        set_home(str(stack.home))  # the pid files are under the stack's own home
        pids = [localstack.read_pid(s.pid_file) for s in stack.services
                if s.name.startswith("worker")]
    for pid in pids:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(p is not None and localstack.alive(p) for p in pids):
        assert time.monotonic() < deadline, f"workers {pids} outlived SIGKILL by 10 s"
        time.sleep(0.05)


@pytest.mark.xfail(strict=True, reason="an activation runs the function on the worker's "
                   "event loop: one that never awaits blocks the loop, so its timeout never "
                   "fires and the worker serves nothing else, for ever")
def test_a_function_that_never_awaits_does_not_stop_its_worker(spin_stack: Sandbox) -> None:
    with httpx.Client(base_url=spin_stack.gateway, timeout=scaled(120)) as http:
        deadline = time.monotonic() + scaled(60)
        while http.get("/v1/definitions/bf.spin").status_code != 200:
            assert time.monotonic() < deadline, "bf.spin was never registered"
            time.sleep(0.3)
        spin = http.post("/v1/run/bf.spin", json={}, headers={"Prefer": "respond-async"})
        assert spin.status_code == 202, spin.text
        time.sleep(scaled(2))  # its activation has started
        after = http.post("/v1/run/bf.add", json={"a": 1}, headers={"Prefer": "respond-async"})
        try:
            doc = wait_run(http, after.json()["id"], 60)
        finally:
            http.post(f"/v1/workflows/{spin.json()['id']}/cancel", json={})
        assert (doc["status"], doc["output"]) == ("succeeded", 2), doc
