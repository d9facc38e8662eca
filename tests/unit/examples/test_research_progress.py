"""What the research example's runner prints of a run's events: the events of a run in
``headwater.testing.Environment``, given to ``Progress`` as the event stream gives them
(type and fields)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hybrid_fixtures import write_status

from examples.hybrid.publishing import PUBLISH_DIR_SETTING
from examples.research import flows
from examples.research.progress import Progress, decision_line, waits_for
from headwater.testing import Environment


async def test_the_lines_follow_the_function_from_classify_to_publish(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEADWATER_EXAMPLE_MODEL_URL", raising=False)
    monkeypatch.setenv(PUBLISH_DIR_SETTING, str(tmp_path))
    env = Environment()
    run = await env.start(flows.research, question="compress files",
                          status_path=write_status(tmp_path), doc_root=str(tmp_path))
    await env.signal(run, "approval", {"approved": True})
    await env.result(run)
    progress = Progress()
    lines = [line for e in env.history(run)
             for line in progress.apply(e.type, dataclasses.asdict(e.body))]
    said = [line.split("] ", 1)[1] for line in lines]
    assert said[0] == "the function: hybrid.inventory"
    assert "the function: child workflow research.search" in said
    assert said.count("the function: hybrid.decide") == 5  # its stream: see the e2e test
    assert "the function: wait for signal 'approval' (timeout 604800 s)" in said
    assert 'signal \'approval\' received: {"approved": true}' in said
    assert said[-4:] == ["the timer fired", "the function: hybrid.publish",
                         "the function: hybrid.report", "the function: returned"]
    assert progress.status == "succeeded"
    summary = progress.summary()
    assert f"published       {tmp_path / (run + '.md')}" in summary
    assert any(s.startswith("hybrid.classify ") and s.split()[1] == "1" for s in summary)


def test_a_decision_reads_as_the_steps_it_issued() -> None:
    decision: dict[str, Any] = {"steps": [
        {"op": "task", "name": "t.a"}, {"op": "task", "name": "t.a"},
        {"op": "sleep", "seconds": 60}, {"op": "signal", "name": "go", "timeout": 5}]}
    assert decision_line(decision) == "t.a x2, sleep 60 s, wait for signal 'go' (timeout 5 s)"
    assert waits_for(decision, "go") and not waits_for(decision, "approval")
    assert decision_line({"steps": [], "finish": 1}) == "returned"
    assert decision_line({"steps": [], "fail": {"type": "E", "message": "m"}}) == "raised E: m"
    assert decision_line({"steps": []}) == "waits"
