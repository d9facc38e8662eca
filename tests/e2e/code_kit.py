"""What the end-to-end tests of ``code_versions``' workflows share: a private stack with
no worker on the queue ``cv`` until a test starts one with the code it chooses
(``CV_CODE``), by pid; a run started by name; the run's document read until a
condition holds."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from code_versions import QUEUE
from stackkit import Stack, private_stack

from ops import localstack
from ops.sandbox import set_home
from tests.polling import scaled, wait_until_async

TERMINAL = ("succeeded", "failed", "cancelled")


@contextmanager
def code_stack(home: Path) -> Iterator[Stack]:
    """A private stack (announcements every half second, so that a worker's code is
    registered soon after it starts); its ``cv`` workers are the tests'."""
    with private_stack(home, extra_env={"HEADWATER_ANNOUNCE_S": "0.5"}) as stack:
        yield stack


def cv_worker(code: str) -> localstack.Service:
    """A worker on the queue ``cv`` whose ``code_versions`` runs ``code``."""
    return localstack.Service(f"worker-{QUEUE}-{code}", (
        sys.executable, "-m", "services.worker", "--queue", QUEUE, "--tasks", "code_versions"))


class Workers:
    """The stack's one ``cv`` worker, replaced by a deploy of other code: the running
    one is stopped by its pid (SIGTERM: it drains, as in a rolling deploy), then one
    running the new code starts (its code version named so, which the gateway
    registers as a definition version)."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.current: localstack.Service | None = None
        self.pid: int | None = None

    def deploy(self, code: str) -> int:
        """Stop the running worker, start one on ``code``; its pid."""
        if self.current is not None:
            running = self.current
            in_home(self.stack, lambda: self.stack.stop(running))
        self.current = cv_worker(code)
        service = self.current
        self.pid = int(in_home(self.stack, lambda: self.stack.start(
            service, {"CV_CODE": code, "HEADWATER_CODE_VERSION": code})))
        return self.pid


def in_home(stack: Stack, act: Callable[[], Any]) -> Any:
    """``act()`` with ``HEADWATER_HOME`` the stack's (its pid files and logs), put back
    after."""
    before = os.environ.get("HEADWATER_HOME")
    set_home(str(stack.home))
    try:
        return act()
    finally:
        set_home(before)


async def served(client: httpx.AsyncClient, name: str, version: str,
                 number: int | None = None) -> dict[str, Any]:
    """The definition ``name`` (its latest version, or version ``number``) once a
    worker announced it with code version ``version``."""
    async def probe() -> dict[str, Any]:
        r = await client.get(f"/v1/definitions/{name}",
                             params={} if number is None else {"version": number})
        return dict(r.json()) if r.status_code == 200 else {}
    return await wait_until_async(
        probe, scaled(60), f"definition {name} at code version {version}",
        until=lambda d: bool(d) and d["workflow"]["nodes"][0].get("code_version") == version)


async def start_run(client: httpx.AsyncClient, name: str, body: dict[str, Any]) -> str:
    """Run the definition ``name`` in the async mode; the run's id."""
    answer = await client.post(f"/v1/run/{name}", json=body,
                               headers={"Prefer": "respond-async"})
    assert answer.status_code == 202, answer.text
    workflow_id: str = answer.json()["id"]
    return workflow_id


async def document(client: httpx.AsyncClient, workflow_id: str,
                   until: Callable[[dict[str, Any]], object], what: str,
                   timeout_s: float = 90) -> dict[str, Any]:
    """The run's document once ``until(doc)`` holds (``timeout_s`` scaled)."""
    async def probe() -> dict[str, Any]:
        r = await client.get(f"/v1/workflows/{workflow_id}")
        return dict(r.json()) if r.status_code == 200 else {}
    return await wait_until_async(probe, scaled(timeout_s), f"{workflow_id}: {what}",
                                  until=lambda d: bool(d) and until(d))


async def ended(client: httpx.AsyncClient, workflow_id: str,
                timeout_s: float = 90) -> dict[str, Any]:
    """The run's document once it ended."""
    return await document(client, workflow_id, lambda d: d["status"] in TERMINAL,
                          "ended", timeout_s)


def waiting_for_signal(doc: dict[str, Any]) -> bool:
    """Whether the run's signal wait is its running step."""
    return any(t["task"] == "headwater.signal" and t["status"] == "running"
               for t in doc["tasks"])


async def signal(client: httpx.AsyncClient, workflow_id: str, name: str,
                 fields: dict[str, Any]) -> None:
    answer = await client.post(f"/v1/workflows/{workflow_id}/signals/{name}",
                               json={"fields": fields})
    assert answer.status_code == 202, answer.text
