"""``headwater serve`` (``services/serve``): a workflow run end to end by the one process
alone beside Kafka and PostgreSQL, then a second coordinator process joining the
coordinators' group and taking input partitions from it while runs go on, each finishing.

The sandbox has its own topic prefix and database and no other process, so the group
holds this test's members only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.group import MemberAssignment
from stackkit import BOOTSTRAP, HERE

from headwater.topics import Topics
from ops.localstack import Service
from ops.sandbox import Sandbox, empty_sandbox, free_port, home_kept, stop_sandbox
from tests.polling import wait_until_async

FLOW = {"name": "serve-e2e", "nodes": [
    {"id": "a", "task": "e2e.sleep", "input": {"seconds": 0.3}},
    {"id": "b", "task": "e2e.flaky", "needs": ["a"], "input": {"succeed_on": 1, "value": 7}}]}
"""Two tasks in a row: a dispatch, a report and a second dispatch through every part."""


@pytest.fixture
def sandbox(tmp_path: Path, services: None) -> Iterator[Sandbox]:
    """A sandbox with no process yet (stopped, topics and database dropped, at the end)."""
    with home_kept():
        box = empty_sandbox(tmp_path, pythonpath=[str(HERE)],
                            extra_env={"HEADWATER_TABLE_STORE": "memory://"})
        try:
            yield box
        finally:
            stop_sandbox(box)


async def assignment(group: str) -> dict[str, set[tuple[str, int]]]:
    """Each member of ``group`` -> the partitions the group assigned it (the broker's
    description of the group: the assignment its leader sent)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        (response,) = await admin.describe_consumer_groups([group])
    finally:
        await admin.close()
    members = response.groups[0][5]  # (member id, client id, host, metadata, assignment)
    found: dict[str, set[tuple[str, int]]] = {}
    for member in members:
        decoded = MemberAssignment.decode(member[4]) if member[4] else None
        found[member[0]] = {(t, p) for t, ps in (decoded.assignment if decoded else ())
                            for p in ps}
    return found


async def ready(url: str) -> bool:
    async with httpx.AsyncClient(timeout=5) as client:
        try:
            return (await client.get(url)).status_code == 200
        except httpx.TransportError:
            return False


async def succeeded(client: httpx.AsyncClient, ids: list[str]) -> list[str]:
    """The statuses of ``ids`` now (the projection's, through the gateway)."""
    return [(await client.get(f"/v1/workflows/{i}")).json().get("status", "?") for i in ids]


async def submit(client: httpx.AsyncClient, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        answer = await client.post("/v1/workflows", json={"workflow": FLOW})
        assert answer.status_code == 202, answer.text
        ids.append(answer.json()["id"])
    return ids


async def test_serve_alone_then_a_second_coordinator_takes_partitions(
        sandbox: Sandbox) -> None:
    probes = free_port()
    serve = Service("serve", (sys.executable, "-m", "services.serve", "--queue", "cpu",
                              "--tasks", "e2e_tasks"))
    sandbox.start(serve, {"HEADWATER_METRICS_PORT": str(probes)})
    await wait_until_async(lambda: ready(f"http://127.0.0.1:{probes}/ready"), 90,
                           "headwater serve ready (every part)")
    group = Topics(sandbox.prefix).coordinator_app_id
    inputs = set(Topics(sandbox.prefix).inputs)
    async with httpx.AsyncClient(base_url=sandbox.gateway, timeout=30) as client:
        first = await submit(client, 1)
        await wait_until_async(lambda: succeeded(client, first), 60,
                               "a run by headwater serve alone",
                               until=lambda s: s == ["succeeded"])
        alone = await assignment(group)
        assert len(alone) == 1, alone
        assert {t for t, _ in next(iter(alone.values()))} >= inputs, alone

        second = Service("coordinator-2", (sys.executable, "-m", "services.coordinator"))
        second_probes = free_port()
        sandbox.start(second, {"HEADWATER_PROJECTION": "off",
                               "HEADWATER_METRICS_PORT": str(second_probes)})
        during = await submit(client, 6)  # while the group rebalances
        shared = await wait_until_async(
            lambda: assignment(group), 60, "the second coordinator holding input partitions",
            until=lambda a: len(a) == 2 and all(
                any(t in inputs for t, _ in held) for held in a.values()))
        held = [sorted(p for t, p in parts if t == Topics(sandbox.prefix).submissions)
                for parts in shared.values()]
        assert sorted(p for ps in held for p in ps) == sorted(
            p for parts in alone.values() for t, p in parts
            if t == Topics(sandbox.prefix).submissions), ("every submissions partition "
                                                          f"held once: {shared}")
        print(f"assignment of {group}: alone {alone}; then {shared}")
        await wait_until_async(lambda: ready(f"http://127.0.0.1:{second_probes}/ready"), 60,
                               "the second coordinator ready")
        after = await submit(client, 6)
        await wait_until_async(lambda: succeeded(client, during + after), 90,
                               "every run submitted across and after the join",
                               until=lambda s: set(s) == {"succeeded"})
    assert await ready(f"http://127.0.0.1:{probes}/ready"), "serve still ready, sharing"
    log = serve.log_file.read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]
