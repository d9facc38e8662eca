"""``headwater restart`` never leaves the stack half stopped: ``preflight.preflight``
imports every process's modules in fresh interpreters before anything is stopped, and a
failure names the process and its error. Real subprocesses, no mocks."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ops import localstack, stackstate
from ops.cli.app import app
from ops.preflight import preflight
from ops.stackstate import WorkerGroup
from tests.unit.ops.conftest import SLEEPER

STUBBORN = (sys.executable, "-c", "import signal, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\n"
            "time.sleep(120)")


def test_preflight_names_the_worker_whose_task_module_does_not_import(
        home: Path, tmp_path: Path) -> None:
    (tmp_path / "good_tasks_w5.py").write_text("VALUE = 1\n")
    (tmp_path / "bad_tasks_w5.py").write_text("raise RuntimeError('cannot load model 42')\n")
    env = {"PYTHONPATH": str(tmp_path)}
    good = WorkerGroup("good", ("good_tasks_w5",), 2, str(tmp_path), env)
    bad = WorkerGroup("bad", ("good_tasks_w5", "bad_tasks_w5"), 1, str(tmp_path), env)
    launches = [(s, dict(g.env)) for g in (good, bad) for s in g.services()]
    launches.append((localstack.Service("sleeper", SLEEPER), {}))  # not -m: not checked
    launches.append((localstack.Service("nomodule", (sys.executable, "-m", "no_such_w5")),
                     {}))
    failures = preflight(launches)
    assert set(failures) == {"worker-bad-1", "nomodule"}
    assert "RuntimeError: cannot load model 42" in failures["worker-bad-1"]
    assert "No module named 'no_such_w5'" in failures["nomodule"]


def test_a_restart_with_a_failing_import_stops_nothing(home: Path, tmp_path: Path) -> None:
    (tmp_path / "broken_w5.py").write_text("import no_such_dependency_w5\n")
    pids = {name: localstack.start(localstack.Service(name, SLEEPER))
            for name in ("coordinator", "gateway")}
    stackstate.remember(WorkerGroup("broken", ("broken_w5",), 1, str(tmp_path),
                                    {"PYTHONPATH": str(tmp_path)}))
    result = CliRunner().invoke(app, ["restart"], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "worker-broken-1 would not start" in result.output
    assert "No module named 'no_such_dependency_w5'" in result.output
    assert "nothing was stopped" in result.output
    assert dict(localstack.running_services()) == pids  # the same processes, still running


def test_stop_all_signals_every_process_at_once_and_kills_the_stubborn(home: Path) -> None:
    quiet = localstack.Service("quiet", SLEEPER)
    stubborn = localstack.Service("stubborn", STUBBORN)
    pids = [localstack.start(quiet), localstack.start(stubborn)]
    deadline = time.monotonic() + 30
    while "up" not in stubborn.log_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)  # its SIGTERM handler is set
    assert localstack.stop_all([quiet, stubborn, localstack.Service("never", ())],
                               timeout_s=1.0) == ["quiet", "stubborn"]
    assert not any(localstack.alive(pid) for pid in pids)
    assert localstack.running_services() == []


def test_wait_ready_names_a_process_that_exits_and_quotes_its_log(home: Path) -> None:
    service = localstack.Service("worker-x-1", (sys.executable, "-c",
                                                "import sys; sys.exit('bad queue name')"))
    pid = localstack.start(service)
    while localstack.alive(pid):
        time.sleep(0.05)
    with pytest.raises(RuntimeError, match=r"worker-x-1 \(pid \d+\) exited:\nbad queue name"):
        localstack.wait_ready("http://127.0.0.1:9/ready", timeout_s=30,
                              pids={"worker-x-1": pid})


def test_worker_of_reads_queue_and_tasks_from_a_command_line() -> None:
    argv = (sys.executable, "-m", "services.worker", "--queue", "q", "--tasks", "a",
            "--tasks", "b")
    assert localstack.worker_of(argv) == ("q", ["a", "b"])
    assert localstack.worker_of((sys.executable, "-m", "services.gateway")) is None
    assert localstack.worker_of(SLEEPER) is None


def test_up_refuses_a_new_queue_whose_modules_do_not_import_and_forgets_it(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is started (no infra, no process): the refusal comes first. A new stack
    remembers the example's cpu worker all the same."""
    (tmp_path / "typo_w5.py").write_text("import json\njson.lods('{}')\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["up", "--no-infra", "--queue", "text", "--tasks",
                                      "typo_w5"], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert "the workers of queue text would not start" in result.output
    assert "AttributeError" in result.output and "lods" in result.output
    assert [g.queue for g in stackstate.remembered()] == ["cpu"]
    assert localstack.running_services() == []


def test_ps_shows_running_processes_and_remembered_workers_that_do_not_run(
        home: Path) -> None:
    pid = localstack.start(localstack.Service("gateway", SLEEPER))
    stackstate.remember(WorkerGroup("text", ("my_tasks",), 2))
    result = CliRunner().invoke(app, ["ps"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.output.splitlines()
            if line.startswith("│")}
    assert str(pid) in rows["gateway"]
    for name in ("worker-text-1", "worker-text-2"):
        assert "stopped" in rows[name] and " my_tasks " in rows[name]
    assert not (home / "stack.json").read_text().count("cpu")  # ps changes nothing
