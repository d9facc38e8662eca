"""The audit commands without a broker: table decoding, partitioning, exit statuses and
output of ``replay``, ``stuck`` and ``projection rebuild`` (their readers replaced)."""

from __future__ import annotations

import io
import json
from typing import Any, ClassVar

import pytest
from aiokafka.partitioner import DefaultPartitioner
from machine_harness import run, submit
from test_machine_runs import DIAMOND, _scenario
from typer.testing import CliRunner

from headwater.core.state import WorkflowState
from headwater.core.status import TaskStatus
from ops.audit import Observed, Report, audit
from ops.cli import app
from ops.cli import projection as projection_cli
from ops.cli import replay as replay_cli
from ops.cli import stuck as stuck_cli
from ops.cli.endpoints import Endpoints
from ops.expected_rows import expected_rows
from ops.history import Recorded, fold
from services.common.partitioning import partition_for
from services.coordinator.keys import DEFINITION, table_entry_key
from services.coordinator.layout import dump_definition, dump_header, dump_task

runner = CliRunner()
LATE = 10**13


def split(state: WorkflowState) -> dict[str, bytes]:
    """The table's entries of ``state`` by part (``""``: the header)."""
    entries = {"": dump_header(state), DEFINITION: dump_definition(state)}
    entries.update({key: dump_task(state, key) for key in state.tasks})
    return entries


def test_the_table_entries_decode_to_the_folded_state() -> None:
    result = run(_scenario("stdlib example with a retry"))
    state = fold(result.history).state
    assert state is not None
    decoded, error = replay_cli.decode_table("wf-1", split(state))
    assert error == "" and decoded == state


def test_missing_or_broken_table_entries_are_named() -> None:
    state = fold(run([submit(DIAMOND)]).history).state
    assert state is not None
    entries = split(state)
    assert replay_cli.decode_table("wf-1", {}) == (None, "")
    assert replay_cli.decode_table("wf-1", {"a": b"{}"}) == (None, "it has entries but no "
                                                             "header")
    del entries["a"]
    _, error = replay_cli.decode_table("wf-1", entries)
    assert "task entry a of wf-1 is missing" in error
    del entries[DEFINITION]
    assert replay_cli.decode_table("wf-1", entries) == (None, "its definition entry is missing")


def test_partitions_are_kafkas_default_and_keys_the_coordinators() -> None:
    partitions = list(range(8))
    for key in (b"wf-1", b"a", "wf-ü".encode(), b"x" * 300):
        assert partition_for(key, 8) == DefaultPartitioner()(key, partitions, partitions)
    assert table_entry_key("wf-1") == b"wf-1"
    assert table_entry_key("wf-1", "m[3]") == b"wf-1\x1fm[3]"


def report_for(name: str, tamper: bool = False, known: bool = True) -> Report:
    history = run(_scenario(name)).history if known else []
    recs = [Recorded(e, i, e.body.at_ms) for i, e in enumerate(history)]
    state = fold(history).state
    rows = expected_rows(state, history)
    if tamper:
        rows.tasks["a"]["status"] = TaskStatus.CANCELLED
    table = fold(history).state
    return audit("wf-1", Observed(recs, table, "", rows, None), LATE, 30_000)


@pytest.fixture
def replay_report(monkeypatch: pytest.MonkeyPatch) -> dict[str, Report]:
    holder: dict[str, Report] = {}

    async def fake(ep: Endpoints, workflow_id: str, grace_s: float) -> Report:
        assert ep.prefix == "pfx" and ep.pg_dsn == "postgresql://x/y"
        return holder["report"]

    monkeypatch.setattr(replay_cli, "gather", fake)
    return holder


ENV = {"HEADWATER_TOPIC_PREFIX": "pfx", "HEADWATER_PG_DSN": "postgresql://x/y",
       "COLUMNS": "200"}


def test_replay_of_a_consistent_workflow_prints_its_timeline_and_exits_0(
        replay_report: dict[str, Report]) -> None:
    replay_report["report"] = report_for("retries exhausted")
    result = runner.invoke(app, ["replay", "wf-1"], env=ENV)
    assert result.exit_code == 0, result.output
    for text in ("WorkflowAccepted", "TimerScheduled", "retry:a:2", "WorkflowFailed",
                 "table: matches the history at seq", "no differences"):
        assert text in result.output


def test_replay_names_each_difference_and_exits_1(replay_report: dict[str, Report]) -> None:
    replay_report["report"] = report_for("retries exhausted", tamper=True)
    result = runner.invoke(app, ["replay", "wf-1"], env=ENV)
    assert result.exit_code == 1
    assert ('difference: projection: tasks[a].status: the log says "failed", the projection '
            'has "cancelled"') in result.output
    doc = json.loads(runner.invoke(app, ["replay", "wf-1", "--json"], env=ENV).stdout)
    assert doc["ok"] is False and doc["table"]["matches"] is True
    assert doc["differences"][0]["path"] == "tasks[a].status"
    assert doc["state"]["status"] == "failed" and doc["events"][0]["type"] == "WorkflowAccepted"


def test_replay_of_an_unknown_workflow_exits_2(replay_report: dict[str, Report]) -> None:
    replay_report["report"] = report_for("retries exhausted", known=False)
    result = runner.invoke(app, ["replay", "wf-1"], env=ENV)
    assert result.exit_code == 2 and "unknown workflow" in result.output
    doc = json.loads(runner.invoke(app, ["replay", "wf-1", "--json"], env=ENV).stdout)
    assert doc["known"] is False and doc["state"] is None


def test_replay_without_kafka_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    async def down(*args: Any) -> Report:
        raise OSError("connection refused")

    monkeypatch.setattr(replay_cli, "gather", down)
    result = runner.invoke(app, ["replay", "wf-1"])
    assert result.exit_code == 3 and "connection refused" in result.output


def test_stuck_lists_the_stuck_workflows_and_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    lost = run([submit(DIAMOND, wf="lost")]).history
    lost = [*lost[:1]]  # accepted, but its first dispatch is lost
    done = run(_scenario("map out of order")).history

    async def fake(ep: Endpoints) -> tuple[dict[str, list[Recorded]], list[str]]:
        return ({"lost": [Recorded(e) for e in lost], "done": [Recorded(e) for e in done]},
                ["undecodable record at t.events[0]@3: bad"])

    async def no_announcements(ep: Endpoints) -> None:
        return None  # no workers topic: which queues are served is not judged

    monkeypatch.setattr(stuck_cli, "read_histories", fake)
    monkeypatch.setattr(stuck_cli, "read_serving", no_announcements)
    result = runner.invoke(app, ["stuck"])
    assert result.exit_code == 1
    assert "2 workflows in the log, 1 running" in result.output
    assert "lost" in result.output and "1 stuck workflow(s)" in result.output
    doc = json.loads(runner.invoke(app, ["stuck", "--json"]).stdout)
    assert [s["workflow_id"] for s in doc["stuck"]] == ["lost"]
    assert "a (pending)" in doc["stuck"][0]["reason"]
    recent = runner.invoke(app, ["stuck", "--older-than", str(10**10)])
    assert recent.exit_code == 0 and "1 updated too recently" in recent.output


class FakeProcess:
    """Stands for the rebuild process."""

    calls: ClassVar[list[tuple[list[str], dict[str, str]]]] = []

    def __init__(self, argv: list[str], env: dict[str, str], **kwargs: Any) -> None:
        self.calls.append((argv, env))
        self.stdout = io.StringIO("0 difference(s)\n")
        self.returncode = 1

    def __enter__(self) -> FakeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_projection_rebuild_runs_the_services_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(projection_cli.subprocess, "Popen", FakeProcess)
    result = runner.invoke(app, ["projection", "rebuild", "--check", "--keep", "--prefix",
                                 "pfx", "--pg-dsn", "postgresql://x/y"])
    assert result.exit_code == 1 and result.output == "0 difference(s)\n"
    argv, env = FakeProcess.calls[-1]
    assert argv[1:] == ["-m", "services.projector.rebuild", "--check", "--keep"]
    assert env["HEADWATER_TOPIC_PREFIX"] == "pfx"
    assert env["HEADWATER_PG_DSN"] == "postgresql://x/y"


@pytest.mark.parametrize("status", ["accepted", "running", "succeeded", "odd [/] one"])
def test_a_status_prints_as_it_is_with_or_without_a_colour(status: str) -> None:
    from rich.console import Console

    from ops.cli.app import styled

    console = Console(record=True, width=120)
    console.print(f"{styled(status)} seq 0")
    assert console.export_text().strip() == f"{status} seq 0"
