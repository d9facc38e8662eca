"""``headwater logs [PROCESS] [-f] [-n N]``: the local stack's log files."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ops.cli import logs as logs_cli
from ops.cli.app import app

runner = CliRunner()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "gateway.log").write_text("".join(f"g{i}\n" for i in range(1, 6)))
    (logs / "worker-cpu-1.log").write_text("w1\nw2\n")
    (logs / "worker-text-1.log").write_text("t1\n")
    return logs


def test_one_process_shows_its_last_lines_unprefixed(folder: Path) -> None:
    result = runner.invoke(app, ["logs", "gateway", "-n", "2"])
    assert result.exit_code == 0, result.output
    assert result.output == "g4\ng5\n"


def test_a_prefix_or_nothing_shows_several_logs_line_by_line(folder: Path) -> None:
    result = runner.invoke(app, ["logs", "worker"])
    assert result.output.splitlines() == ["worker-cpu-1  | w1", "worker-cpu-1  | w2",
                                          "worker-text-1 | t1"]
    every = runner.invoke(app, ["logs", "-n", "1"]).output.splitlines()
    assert [line.split("|")[0].strip() for line in every] == [
        "gateway", "worker-cpu-1", "worker-text-1"]


def test_an_unknown_process_is_a_usage_error_listing_the_known(folder: Path) -> None:
    result = runner.invoke(app, ["logs", "--process", "coordinator"], env={"COLUMNS": "300"})
    assert result.exit_code == 2
    assert "no log of 'coordinator'" in result.output and "worker-text-1" in result.output


def test_tail_reads_a_large_log_from_its_end(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"line {i}\n" for i in range(200_000)))  # several blocks
    lines, size = logs_cli.tail(path, 3)
    assert lines == ["line 199997", "line 199998", "line 199999"]
    assert size == path.stat().st_size
    assert logs_cli.tail(path, 0)[0] == []


def test_follow_prints_appended_lines_and_rereads_a_truncated_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs_cli, "POLL_S", 0)
    path = tmp_path / "w.log"
    path.write_text("old\n")
    seen: list[str] = []
    steps = iter([lambda: path.write_text("old\nnew 1\npart"),  # a line, then half of one
                  lambda: path.write_text("old\nnew 1\npartial\n"),
                  lambda: path.write_text("fresh\n"),  # truncated and rewritten
                  None])

    def keep_going() -> bool:
        step = next(steps)
        if step is not None:
            step()
        return step is not None

    logs_cli.follow_files([path], {path: 4}, lambda p, line: seen.append(line), keep_going)
    assert seen == ["new 1", "partial", "fresh"]
