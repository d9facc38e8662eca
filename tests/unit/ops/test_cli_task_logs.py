"""``headwater logs RUN [NODE] [-f]``: a run's task logs from a stand-in gateway, each line
prefixed by its task and attempt; followed until the run has ended; a local process's
name still shows its log file."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from standin_gateway import serve
from typer.testing import CliRunner

from headwater.client import TaskLogLine
from ops.cli import task_logs
from ops.cli.app import app

runner = CliRunner()
AT = "2026-03-02T09:14:07.512000+00:00"


def line(attempt: int, n: int, message: str, stream: str = "log", **more: Any) -> dict[str, Any]:
    return {"attempt": attempt, "line": n, "at": AT, "level": "INFO", "stream": stream,
            "logger": "headwater.task" if stream == "log" else "", "message": message, **more}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "gateway.log").write_text("g1\n")
    return tmp_path


def test_a_lines_text_names_its_task_attempt_and_source() -> None:
    assert task_logs.text(TaskLogLine("map", 3, 2, 1, AT, "WARNING", "log", "lib",
                                      "careful\nsecond line")) == (
        "map[3] #2 | [WARNING lib] careful\nmap[3] #2 |   second line")
    assert task_logs.text(TaskLogLine("a", None, 1, 1, AT, "ERROR", "stderr", "", "x")) == (
        "a #1 | [stderr] x")
    assert task_logs.text(TaskLogLine("a", None, 1, 2, AT, "INFO", "stdout", "", "y")) == (
        "a #1 | y")


def test_a_runs_logs_are_printed_and_a_process_name_still_reads_its_file() -> None:
    asked: list[str] = []

    def answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        asked.append(path)
        if urlsplit(path).path == "/v1/workflows/wf-9/logs":
            return 200, {"workflow_id": "wf-9", "next": None, "lines": [
                line(1, 1, "step 7", node="fetch", index=None),
                line(1, 2, "to stdout", "stdout", node="fetch", index=None),
                line(2, 1, "item", node="map", index=0)]}
        return 404, {"title": "Not found", "status": 404, "detail": "no workflow nope"}

    with serve(answer) as url:
        result = runner.invoke(app, ["logs", "wf-9", "--gateway", url])
        assert result.exit_code == 0, result.output
        assert result.output.splitlines() == [
            "fetch #1 | [INFO headwater.task] step 7", "fetch #1 | to stdout",
            "map[0] #2 | [INFO headwater.task] item"]
        one = runner.invoke(app, ["logs", "wf-9", "fetch", "--gateway", url])
        assert one.exit_code == 0 and parse_qs(urlsplit(asked[-1]).query)["node"] == ["fetch"]
        missing = runner.invoke(app, ["logs", "nope", "--gateway", url])
        assert missing.exit_code == 1 and "no workflow nope" in missing.output
        process = runner.invoke(app, ["logs", "gateway", "--gateway", url])
        assert process.output == "g1\n"
        assert runner.invoke(app, ["logs", "--process", "gateway"]).output == "g1\n"


def test_following_a_run_polls_each_task_until_it_has_ended() -> None:
    polls = {"n": 0}

    def answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        url = urlsplit(path)
        after = parse_qs(url.query).get("after", [None])[0]
        if url.path == "/v1/workflows/wf-9":
            polls["n"] += 1
            done = polls["n"] > 2
            return 200, {"id": "wf-9", "name": "n", "status": "failed" if done else "running",
                         "seq": 3, "tasks": [{"node": "fetch", "index": None, "attempt": 1}]}
        assert url.path == "/v1/workflows/wf-9/tasks/fetch/-/logs", path
        if after is None:
            return 200, {"lines": [line(1, 1, "first")], "next": "1:1", "complete": False}
        if polls["n"] <= 2:
            return 200, {"lines": [], "next": "1:1", "complete": False}
        if after == "1:1":
            return 200, {"lines": [line(1, 2, "last")], "next": None, "complete": True}
        return 200, {"lines": [], "next": None, "complete": True}

    with serve(answer) as url:
        result = runner.invoke(app, ["logs", "wf-9", "-f", "--gateway", url])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["fetch #1 | [INFO headwater.task] first",
                                          "fetch #1 | [INFO headwater.task] last"]


def test_a_run_whose_tasks_logged_nothing_says_so() -> None:
    def answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        return 200, {"workflow_id": "wf-9", "next": None, "lines": []}

    with serve(answer) as url:
        result = runner.invoke(app, ["logs", "wf-9", "--gateway", url])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "no log lines from the tasks of wf-9" in result.stderr
