"""Unit tests of the hybrid example's spec, its last steps (publish, shelve, report)
and the runner's view of the events (no services)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from examples.hybrid import progress, publishing, runner, tasks
from headwater.core.spec import NodeKind, parse_spec
from headwater.sdk import REGISTRY
from ops.cli.app import signal_fields

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "hybrid"
RESEARCH = {"question": "compress files", "answer": "gzip fits", "category": "c",
            "steps": 4, "citations": [{"package": "gzip", "version": "1", "relevance": 0.7}]}
PROFILE = {"packages": 3, "installed_mb": 1.5, "by_category": {"a": 2, "b": 1}}


def spec_doc() -> Any:
    return yaml.safe_load((EXAMPLE / "workflow.yaml").read_text())


def test_the_spec_is_valid_and_has_every_kind_it_shows() -> None:
    spec = parse_spec(spec_doc())
    kinds = {n.id: n.kind for n in spec.nodes}
    assert kinds["classify"] is NodeKind.MAP and kinds["research"] is NodeKind.LOOP
    assert kinds["approval"] is NodeKind.WAIT
    research = next(n for n in spec.nodes if n.id == "research")
    assert research.loop is not None and research.task == "hybrid.decide"
    assert [t.name for t in research.loop.tools] == ["search", "read", "answer"]
    assert research.loop.max_steps == research.input["max_steps"]  # the policy's bound
    approval = next(n for n in spec.nodes if n.id == "approval")
    assert approval.wait is not None and approval.wait.signal == "approval"
    assert {(f.name, f.type, f.required) for f in approval.wait.fields} == {
        ("approved", "boolean", True), ("note", "string", False)}
    assert {n.id: n.when for n in spec.nodes if n.when} == {
        "publish": "${nodes.approval.output.approved} == true",
        "shelve": "${nodes.approval.output.approved} == false"}


def test_every_task_of_the_spec_is_registered_on_the_example_queue() -> None:
    spec = parse_spec(spec_doc())
    named = {n.task for n in spec.nodes if n.task}
    named |= {t.task for n in spec.nodes if n.loop for t in n.loop.tools}
    for name in named:
        assert REGISTRY[name].queue == tasks.QUEUE, name
    assert {n.queue for n in spec.nodes if n.task} == {tasks.QUEUE}


def test_the_input_file_has_every_key_the_spec_reads() -> None:
    given = json.loads((EXAMPLE / "input.json").read_text())
    refs = set()
    for node in spec_doc()["nodes"]:
        text = json.dumps(node.get("input", {}))
        refs |= {part.split("}")[0] for part in text.split("${input.")[1:]}
    assert refs <= set(given), refs - set(given)


def test_publish_writes_the_file_whole_and_again_the_same(tmp_path: Path) -> None:
    approval = {"approved": True, "note": "ship it"}
    first = publishing.publish("wf/1", RESEARCH, approval, PROFILE, tmp_path)
    path = Path(first["path"])
    assert path == tmp_path / "wf_1.md" and first == {"published": True,
                                                       "path": str(path), "note": "ship it"}
    text = path.read_text()
    assert text.startswith("# compress files\n\ngzip fits\n")
    assert "- `gzip` 1 (relevance 0.70)" in text and "approved: ship it" in text
    assert "- a: 2" in text
    assert publishing.publish("wf/1", RESEARCH, approval, PROFILE, tmp_path) == first
    assert path.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wf_1.md"]  # no temporary left


def test_publish_dir_follows_the_settings(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.delenv(publishing.PUBLISH_DIR_SETTING, raising=False)
    monkeypatch.setenv("HEADWATER_HOME", str(tmp_path))
    assert publishing.publish_dir() == tmp_path / "published"
    monkeypatch.setenv(publishing.PUBLISH_DIR_SETTING, str(tmp_path / "out"))
    assert publishing.publish_dir() == tmp_path / "out"


def test_report_joins_whichever_branch_ran() -> None:
    shelved = publishing.shelve({"approved": False, "note": "not now"})
    assert shelved == {"published": False, "path": "", "note": "not now"}
    out = publishing.report(RESEARCH, PROFILE, None, shelved)
    assert out["published"] is False and out["note"] == "not now"
    assert out["machine"] == PROFILE and out["answer"] == "gzip fits"
    published = {"published": True, "path": "/p.md", "note": ""}
    assert publishing.report(RESEARCH, PROFILE, published, None)["path"] == "/p.md"
    assert publishing.report(RESEARCH, PROFILE, None, None)["published"] is False


def test_inventory_batches_the_packages(tmp_path: Path) -> None:
    from hybrid_fixtures import write_status

    out = tasks.inventory(write_status(tmp_path), batch_size=4)
    assert out["packages"] == 9 and [len(b) for b in out["batches"]] == [4, 4, 1]
    assert out["briefs"][0] == {"name": "gzip", "version": "1.12-1", "section": "utils",
                                "installed_kb": 245, "summary": "GNU compression utilities"}


EVENTS: list[tuple[str, dict[str, Any]]] = [
    ("WorkflowAccepted", {"at_ms": 1_000}),
    ("TaskDispatched", {"node": "inventory", "at_ms": 1_000}),
    ("NodeFinished", {"node": "inventory", "status": "succeeded", "at_ms": 1_500}),
    ("MapExpanded", {"node": "classify", "count": 8, "at_ms": 1_500}),
    ("TaskDispatched", {"node": "research", "at_ms": 2_000}),
    ("TaskOutputStreamed", {"node": "research", "chunk": "step 0: read", "at_ms": 2_100}),
    ("TaskOutputStreamed", {"node": "research", "chunk": " gzip\nstep", "at_ms": 2_100}),
    ("LoopStepDecided", {"node": "research", "step": 0, "tool": "read",
                         "input": {"package": "gzip"}, "at_ms": 2_200}),
    ("TaskFailed", {"node": "research", "attempt": 1, "error_type": "LookupError",
                    "error": "no such package", "at_ms": 2_300}),
    ("WaitStarted", {"node": "approval", "signal": "approval", "at_ms": 3_000}),
    ("SignalConsumed", {"node": "approval", "name": "approval",
                        "fields": {"approved": True}, "at_ms": 4_000}),
    ("NodeFinished", {"node": "approval", "status": "succeeded", "at_ms": 4_000}),
    ("ConditionEvaluated", {"node": "shelve", "value": False, "at_ms": 4_000}),
    ("WorkflowSucceeded", {"output": {"answer": "gzip fits", "published": True,
                                      "path": "/p.md", "machine": PROFILE}, "at_ms": 5_000}),
]


def test_progress_tells_each_step_and_times_the_nodes() -> None:
    seen = progress.Progress()
    lines = [line for kind, data in EVENTS for line in seen.apply(kind, data)]
    assert lines == [
        "[  0.50s] inventory: succeeded",
        "[  0.50s] classify: 8 items",
        "           research > step 0: read gzip",
        "           research > step",
        "[  1.20s] research step 0: read 'gzip'",
        "[  1.30s] research: attempt 1 failed: LookupError: no such package",
        "[  2.00s] approval: waiting for signal 'approval'",
        '[  3.00s] approval: took approval {"approved": true}',
        "[  3.00s] approval: succeeded",
        "[  3.00s] shelve: when is false",
        "[  4.00s] workflow succeeded"]
    assert seen.status == "succeeded"
    summary = seen.summary()
    assert summary[1] == "gzip fits" and "published to /p.md" in summary
    assert "this machine: 3 packages, 1.5 MB: a 2, b 1" in summary
    assert "inventory       succeeded        0.50" in summary
    assert "approval        succeeded        1.00" in summary
    assert summary[-1] == "workflow        succeeded        4.00"


def test_runner_arguments_and_signal_command() -> None:
    args = runner.parse_args(["--approve", "--question", "q", "--note", "ok"])
    assert args.approve and not args.reject and args.question == "q"
    assert runner.workflow_input(args)["question"] == "q"
    with pytest.raises(SystemExit):
        runner.parse_args(["--approve", "--reject"])
    command = runner.signal_command("wf-1", "true, it's $HOME")
    argv = shlex.split(command.split("   (or")[0])
    assert argv[:6] == [".venv/bin/headwater", "signal", "wf-1", "approval", "--field",
                        "approved=true"]
    assert argv[6:] == ["--field", 'note="true, it\'s $HOME"']
    assert signal_fields(argv[5::2]) == {"approved": True, "note": "true, it's $HOME"}


def test_runner_without_a_gateway_says_how_to_start_it(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    assert runner.main(["--gateway", "http://127.0.0.1:9", "--no-worker"]) == 2
    assert "headwater up" in capsys.readouterr().err
