"""Retention on the real stack: a finished workflow's table entries are tombstoned on
the changelog after ``HEADWATER_RETENTION_S``, a restarted coordinator does not restore
them; a duplicate of the submission and a late report change nothing after the purge,
as before it, and another submission under the id is dead-lettered instead of starting
a second history."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from stackkit import BOOTSTRAP, TASKS, Stack, private_stack, produce, read_topic, submit_to_kafka
from test_kafka_submission import wait_status
from test_signals import all_committed

from headwater import codec
from headwater.core import events as ev
from ops import localstack
from ops.cli.endpoints import endpoints
from ops.cli.replay import gather as replay_gather
from ops.sandbox import home_kept
from services.common.topic_reader import TopicReader
from services.coordinator.keys import TABLE_KEY_SEP
from services.coordinator.retention import PURGED
from tests.polling import scaled

HERE = Path(__file__).resolve().parent
SPEC = {"name": "kept-briefly", "nodes": [{"id": "a", "task": "e2e.sleep",
                                           "input": {"seconds": 0}}]}


@pytest.fixture(scope="module")
def brief(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack whose coordinator purges ended workflows after 2 s."""
    with private_stack(tmp_path_factory.mktemp("retention"),
                       extra_env={"HEADWATER_RETENTION_S": "2"}) as stack:
        yield stack


def _entries(records: list[Any], wid: str) -> dict[str, bytes | None]:
    """Part -> the last value of the workflow's changelog records (None: a tombstone)."""
    header, sep = wid.encode(), TABLE_KEY_SEP.encode()
    out: dict[str, bytes | None] = {}
    for r in records:
        key = bytes(r.key) if r.key is not None else b""
        if key == header or key.startswith(header + sep):
            out[key[len(header) + 1:].decode() if key != header else ""] = r.value
    return out


async def test_a_finished_workflow_is_purged_and_stays_purged_after_a_restart(
        brief: Stack) -> None:
    wid = f"ret-{uuid.uuid4().hex[:8]}"
    submission = ev.WorkflowSubmitted(wid, SPEC, {}, 0)
    await submit_to_kafka(brief, submission)
    assert (await wait_status(brief, wid, 60))["status"] == "succeeded"
    changelog = brief.topics.table_changelog

    def purged(records: list[Any]) -> bool:
        parts = _entries(records, wid)
        return parts.get(PURGED) is not None and parts.get("", b"") is None

    records = await read_topic(changelog, purged, scaled(60), decode=False)
    parts = _entries(records, wid)
    assert {p for p, v in parts.items() if v is not None} == {PURGED}, parts
    assert {"", "@def", "a"} <= {p for p, v in parts.items() if v is None}, parts

    report = await replay_gather(endpoints(BOOTSTRAP, brief.prefix, brief.dsn), wid, 0.0)
    assert [n for n in report.table.notes if n.startswith("past retention")], report.notes
    assert report.table.differences == [] and report.known

    coordinator = localstack.default_services(TASKS, 1)[0]
    with home_kept():
        os.environ["HEADWATER_HOME"] = str(brief.home)  # where its pid file is
        brief.stop(coordinator)
        brief.start(coordinator)
    # After the purge as before it: a late report and a duplicate of the submission
    # change nothing; another submission under the id is dead-lettered (after the
    # duplicate: both on the id's partition of the submissions topic, in this order).
    late = ev.TaskSucceeded(wid, "a", None, 1, 0, {"late": True})
    await produce([(brief.topics.reports, wid.encode(), codec.encode(late))])
    await all_committed(brief, brief.topics.reports)
    await produce([(brief.topics.submissions, wid.encode(),
                    codec.encode(ev.WorkflowSubmitted(wid, SPEC, {}, 0))),
                   (brief.topics.submissions, wid.encode(),
                    codec.encode(ev.WorkflowSubmitted(wid, SPEC, {"other": 1}, 0)))])

    def refused(records: list[Any]) -> bool:
        return any(r.key == wid.encode() for r in records)

    dead = await read_topic(brief.topics.dlq, refused, scaled(120), decode=False)
    mine = [r for r in dead if r.key == wid.encode()]
    assert len(mine) == 1, mine
    assert codec.decode(mine[0].value).input == {"other": 1}
    reason = dict(mine[0].headers)["reason"].decode()
    assert "was purged after its retention" in reason, reason
    async with TopicReader(BOOTSTRAP) as reader:  # the refusing batch was carried out
        history = await reader.read_to_end(brief.topics.events,
                                           keep=lambda key: key == wid.encode())
    seqs = [codec.decode(r.value).seq for r in history]
    assert seqs and seqs.count(1) == 1, seqs  # one history: no second seq 1
