"""``headwater replay --summary``: the verdict on the first line, then a few lines (the
workflow, its events by type, its nodes by status, the stores, the first differences),
never the timeline; and ``ops.audit``'s ``verdict``, ``event_counts`` and
``node_counts`` it prints."""

from __future__ import annotations

from collections import Counter

import pytest
from test_cli_audit import ENV, report_for
from typer.testing import CliRunner

from ops.audit import Difference, Report, event_counts, node_counts, verdict
from ops.cli import app
from ops.cli import replay as replay_cli
from ops.cli.endpoints import Endpoints

runner = CliRunner()


@pytest.fixture
def replay_report(monkeypatch: pytest.MonkeyPatch) -> dict[str, Report]:
    holder: dict[str, Report] = {}

    async def fake(ep: Endpoints, workflow_id: str, grace_s: float) -> Report:
        return holder["report"]

    monkeypatch.setattr(replay_cli, "gather", fake)
    return holder


def test_a_consistent_workflow_summary_starts_with_its_verdict(
        replay_report: dict[str, Report]) -> None:
    report = replay_report["report"] = report_for("retries exhausted")
    full = runner.invoke(app, ["replay", "wf-1"], env=ENV)
    result = runner.invoke(app, ["replay", "wf-1", "--summary"], env=ENV)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    seq = report.events[-1].event.seq
    assert lines[0] == f"no differences: the stores agree with the history of wf-1 (seq {seq})"
    assert lines[1].startswith("wf-1 ") and " failed, accepted " in lines[1]
    assert lines[2].startswith(f"events: {len(report.events)} (")
    assert lines[3].startswith("nodes: ")
    assert "table: matches the history at seq" in result.stdout
    assert "retry:a:2" in full.stdout and "retry:a:2" not in result.stdout  # no timeline
    assert len(lines) < len(full.stdout.splitlines())


def test_differences_are_the_verdict_and_listed_up_to_ten(
        replay_report: dict[str, Report]) -> None:
    report = report_for("retries exhausted", tamper=True)
    report.projection.differences += [Difference("projection", f"x{i}", 1, 2)
                                      for i in range(12)]
    replay_report["report"] = report
    result = runner.invoke(app, ["replay", "wf-1", "--summary"], env=ENV)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "13 differences in wf-1: 13 in the projection"
    assert sum(line.startswith("difference: ") for line in lines) == 10
    assert lines[-1] == ("… and 3 more differences (without --summary: all of them, and the "
                         "timeline)")


def test_an_unknown_workflow_summary_is_its_verdict(replay_report: dict[str, Report]) -> None:
    replay_report["report"] = report_for("retries exhausted", known=False)
    result = runner.invoke(app, ["replay", "wf-1", "--summary"], env=ENV)
    assert result.exit_code == 2
    assert result.stdout == ("unknown workflow wf-1: nothing in the log, the table or the "
                             "projection\n")


def test_counts_and_verdict() -> None:
    report = report_for("retries exhausted")
    counts = event_counts(report)
    assert sum(n for _, n in counts) == len(report.events)
    assert dict(counts) == Counter(r.event.type for r in report.events)
    assert [n for _, n in counts] == sorted((n for _, n in counts), reverse=True)
    state = report.fold.state
    assert state is not None
    assert dict(node_counts(report)) == Counter(n.status.value for n in state.nodes.values())
    report.projection.behind = True
    assert verdict(report).endswith("; the projection behind the log, compared up to its "
                                    "own seq")
