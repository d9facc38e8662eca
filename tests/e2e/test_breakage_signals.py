"""Breakage: a signal's id is its idempotency key, yet a second signal under the same
id with other fields is answered 202 like the first and silently dropped, before and
after the run ended (a submission under a used id with another body is 409); and once
projection retention has deleted an ended run's rows, a copy of a signal it took is
answered 404 "no workflow", where it was 202 before the purge."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from breakkit import hostile_stack, submit, wait_run

from ops.sandbox import Sandbox
from services.common.db import connect
from services.projector.retention import purge_once

WAIT = {"name": "sig", "nodes": [
    {"id": "pre", "task": "e2e.sleep", "input": {"seconds": 1}},
    {"id": "w", "kind": "wait", "signal": "go", "needs": ["pre"],
     "fields": {"x": "integer"}, "timeout": 60}], "output": "${nodes.w.output}"}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Sandbox]:
    with hostile_stack(tmp_path_factory.mktemp("signals")) as stack:
        yield stack


@pytest.fixture
def http(hostile: Sandbox) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hostile.gateway, timeout=30) as client:
        yield client


def _signal(http: httpx.Client, run: str, x: int, signal_id: str = "s1") -> httpx.Response:
    return http.post(f"/v1/workflows/{run}/signals/go",
                     json={"fields": {"x": x}, "signal_id": signal_id})


@pytest.mark.xfail(strict=True, reason="a signal_id used again with other fields is "
                   "answered 202 and dropped (the run takes the first fields): the sender "
                   "is told its fields were taken")
def test_a_signal_id_used_again_with_other_fields_is_409(http: httpx.Client) -> None:
    run = submit(http, WAIT)
    assert _signal(http, run, 1).status_code == 202
    again = _signal(http, run, 2)
    doc = wait_run(http, run)
    assert doc["status"] == "succeeded" and doc["output"] == {"x": 1}
    after_end = _signal(http, run, 3)
    assert (again.status_code, after_end.status_code) == (409, 409), (again.text,
                                                                     after_end.text)


@pytest.mark.xfail(strict=True, reason="once projection retention deleted an ended run, "
                   "a copy of a signal it took is 404 'no workflow' (202 before the purge); "
                   "the id is retired, not unknown")
def test_a_copy_of_a_taken_signal_after_projection_retention_is_absorbed(
        http: httpx.Client, hostile: Sandbox) -> None:
    run = submit(http, WAIT)
    assert _signal(http, run, 1).status_code == 202
    assert wait_run(http, run)["status"] == "succeeded"
    assert _signal(http, run, 1).status_code == 202  # a copy, before the purge

    async def purge() -> int:
        conn = await connect(hostile.dsn)
        try:
            return await purge_once(conn, 0)
        finally:
            await conn.close()

    assert asyncio.run(purge()) >= 1
    assert http.get(f"/v1/workflows/{run}").status_code == 404  # the rows are gone
    copy = _signal(http, run, 1)
    assert copy.status_code == 202, copy.text
