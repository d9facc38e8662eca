"""The workers the local stack remembers (``ops.stackstate``, ``stack.json``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ops import localstack, stackstate
from ops.stackstate import StackStateError, WorkerGroup


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    return tmp_path


def test_groups_round_trip_through_the_file_in_launch_order(home: Path) -> None:
    text = WorkerGroup("text", ("my_tasks", "more"), 2, "/proj",
                       {"PYTHONPATH": "/proj", "HEADWATER_CONCURRENCY": "4"})
    cpu = WorkerGroup("cpu", (localstack.EXAMPLE_TASKS,), 1, "/repo", {"PYTHONPATH": "/repo"})
    assert stackstate.remember(text) is None
    assert stackstate.remember(cpu) is None
    assert stackstate.remembered() == [text, cpu]
    doc = json.loads((home / "stack.json").read_text())
    assert doc["version"] == 1 and doc["workers"][0]["queue"] == "text"
    assert [s.name for s in text.services()] == ["worker-text-1", "worker-text-2"]
    assert text.services()[0].argv[1:] == ("-m", "services.worker", "--queue", "text",
                                           "--tasks", "my_tasks", "--tasks", "more")
    assert list(home.glob(".stack.json.*")) == []  # the temporary file was renamed


def test_a_queue_launched_again_replaces_its_entry_in_place(home: Path) -> None:
    first = WorkerGroup("text", ("old",), 2)
    stackstate.remember(first)
    stackstate.remember(WorkerGroup("cpu", ("x",)))
    again = WorkerGroup("text", ("new",), 1)
    assert stackstate.remember(again) == first
    assert stackstate.remembered() == [again, WorkerGroup("cpu", ("x",))]


def test_forgetting_a_queue_removes_it_only(home: Path) -> None:
    stackstate.remember(WorkerGroup("a", ("m",)))
    stackstate.remember(WorkerGroup("b", ("m",)))
    assert stackstate.forget("a") == WorkerGroup("a", ("m",))
    assert stackstate.forget("a") is None
    assert [g.queue for g in stackstate.remembered()] == ["b"]


@pytest.mark.parametrize(("text", "fault"), [
    ("{not json", "not a stack state file"),
    ('{"version": 1}', "not a stack state file"),
    ('{"workers": {}}', '"workers" is not a list'),
    ('{"workers": [{"queue": "a"}]}', "bad worker entry"),
    ('{"workers": [{"queue": "a", "tasks": ["m"], "count": 0}]}', "bad worker entry"),
    ('{"workers": [{"queue": "", "tasks": ["m"], "count": 1}]}', "bad worker entry"),
    ('{"workers": [{"queue": "a", "tasks": ["m"], "count": 1, "env": {"A": 1}}]}',
     "bad worker entry"),
])
def test_a_damaged_file_is_an_error_naming_it(home: Path, text: str, fault: str) -> None:
    (home / "stack.json").write_text(text)
    with pytest.raises(StackStateError, match=fault) as caught:
        stackstate.remembered()
    assert str(home / "stack.json") in str(caught.value)


def test_without_a_file_the_workers_with_pid_files_are_remembered(home: Path) -> None:
    """A stack started before the memory existed: its workers' launch records say what
    they were; ``adopt`` writes them down, so that ``down`` (which removes the pid files)
    does not lose them."""
    py = sys.executable
    for name, queue in (("worker-text-1", "text"), ("worker-text-2", "text"),
                        ("worker-cpu-1", "cpu"), ("hybrid-thing", "cpu")):
        localstack.Service(name, ()).launch_file.parent.mkdir(parents=True, exist_ok=True)
        service = localstack.Service(name, (py, "-m", "services.worker", "--queue", queue,
                                            "--tasks", f"{queue}_tasks"))
        service.launch_file.write_text(json.dumps({"argv": list(service.argv),
                                                   "env": {"PYTHONPATH": f"/{queue}"}}))
        service.pid_file.write_text(str(os.getpid()))
    localstack.Service("worker-gone-1", ()).launch_file.write_text("{}")  # no pid file
    groups = stackstate.adopt()
    assert groups == [
        WorkerGroup("cpu", ("cpu_tasks",), 1, "/cpu", {"PYTHONPATH": "/cpu"}),
        WorkerGroup("text", ("text_tasks",), 2, "/text", {"PYTHONPATH": "/text"})]
    for path in (home / "run").glob("*.pid"):
        path.unlink()
    assert stackstate.remembered() == groups


def test_no_file_and_no_workers_is_an_empty_memory(home: Path) -> None:
    assert stackstate.adopt() == []
    assert not (home / "stack.json").exists()
