"""The coordinator's table on RocksDB (``HEADWATER_TABLE_STORE=rocksdb://``) across a
SIGKILL, on the real stack: the restarted coordinator reads its partitions' changelog
from the offsets its DBs stored (not from 0), a workflow waiting on a signal completes
after one, and a finished workflow's resubmission over Kafka is the same run (same
body) or dead-lettered (another body), as with the memory store."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from stackkit import BOOTSTRAP, Stack, private_stack, read_topic, submit_to_kafka
from test_kafka_submission import wait_status
from test_kinds_durable import _at, _coordinator, _kill
from test_signals import approval_spec, recorded, signal

from headwater import codec
from headwater.core import events as ev
from headwater.topics import REASON_HEADER
from services.common.topic_reader import TopicReader
from tests.polling import scaled, wait_until

SPEC = {"name": "rocks", "nodes": [{"id": "a", "task": "e2e.sleep",
                                    "input": {"seconds": "${input.s}"}}]}
KEPT = re.compile(r"table partition (\d+): local store at changelog offset (\d+)")


@pytest.fixture(scope="module")
def rocks(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack whose coordinator keeps its table in RocksDB."""
    with private_stack(tmp_path_factory.mktemp("rocks"),
                       extra_env={"HEADWATER_TABLE_STORE": "rocksdb://"}) as stack:
        yield stack


def _submission(workflow_id: str, seconds: float) -> ev.WorkflowSubmitted:
    return ev.WorkflowSubmitted(workflow_id, SPEC, {"s": seconds}, int(time.time() * 1000))


async def test_a_sigkilled_coordinator_restarts_from_its_stored_offsets(rocks: Stack) -> None:
    tag = uuid.uuid4().hex[:8]
    finished = [_submission(f"rocks-{tag}-{i}", 0) for i in range(6)]
    await submit_to_kafka(rocks, *finished)
    for s in finished:
        assert (await wait_status(rocks, s.workflow_id))["status"] == "succeeded"
    async with httpx.AsyncClient(base_url=rocks.gateway, timeout=30) as client:
        response = await client.post("/v1/workflows", json={
            "id": f"rocks-wait-{tag}", "workflow": approval_spec()})
        assert response.status_code == 202, response.text
        waiting = f"rocks-wait-{tag}"
        await recorded(rocks, waiting, ev.WaitStarted)

    coordinator = _coordinator(rocks)
    data_dir = rocks.home / coordinator.name
    assert sorted(data_dir.rglob("workflows-*.db")), list(data_dir.rglob("*"))
    with _at(rocks):
        log_file = Path(coordinator.log_file)
        logged = len(log_file.read_bytes())
        _kill(coordinator)
        rocks.start(coordinator)

    def restored() -> bool:
        return "local store at changelog offset" in _log_since(log_file, logged)

    wait_until(restored, scaled(30), "the restarted coordinator's recovery")
    kept = {int(p): int(o) for p, o in KEPT.findall(_log_since(log_file, logged))}
    assert kept and all(offset > 0 for offset in kept.values()), kept
    assert "wiping its local store" not in _log_since(log_file, logged)

    fields = {"approved": True, "note": "after a kill"}
    async with httpx.AsyncClient(base_url=rocks.gateway, timeout=30) as client:
        response = await signal(client, waiting, "approval", fields=fields)
    assert response.status_code == 202, response.text
    status = await wait_status(rocks, waiting, timeout_s=60)
    assert status["status"] == "succeeded" and status["output"] == fields, status

    again, other = finished[0], _submission(finished[0].workflow_id, 9)
    await submit_to_kafka(rocks, again, other)  # one partition: in this order
    key = other.workflow_id.encode()
    dead = await read_topic(rocks.topics.dlq, lambda rs: any(r.key == key for r in rs),
                            scaled(60), decode=False)
    (letter,) = [r for r in dead if r.key == key]
    assert codec.decode(letter.value) == other
    assert "already used by a different submission" in dict(letter.headers)[
        REASON_HEADER].decode()
    async with TopicReader(BOOTSTRAP) as reader:  # the same body again: the same run
        records = await reader.read_to_end(rocks.topics.events, keep=lambda k: k == key)
    seqs = [codec.decode(r.value).seq for r in records]
    assert sorted(seqs) == list(range(1, len(seqs) + 1)) and seqs.count(1) == 1, seqs


def _log_since(path: Path, start: int) -> str:
    """The coordinator's log written after byte ``start``."""
    return path.read_bytes()[start:].decode(errors="replace")
