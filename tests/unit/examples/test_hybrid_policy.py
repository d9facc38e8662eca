"""Unit tests of the hybrid example's decide policy, and a whole research loop run
in-process the way the loop node runs it (no services)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hybrid_fixtures import write_status

from examples.hybrid import model, policy, retrieval, tools

TOOLS = ["search", "read", "answer"]


def hit(package: str, relevance: float) -> dict[str, Any]:
    return {"package": package, "score": 1.0, "relevance": relevance, "section": "utils",
            "summary": f"{package} summary"}


def loop_input(*passages: dict[str, Any], max_steps: int = 6) -> dict[str, Any]:
    return {"question": "compress files", "status_path": "/s", "doc_root": "/d",
            "max_steps": max_steps,
            "grounding": {"passages": list(passages), "category": "system administration"}}


def read_entry(step: int, package: str) -> dict[str, Any]:
    return {"step": step, "tool": "read", "input": {"package": package},
            "output": {"package": package, "version": "1", "summary": f"{package} s",
                       "excerpt": "x" * 500}}


def search_entry(step: int, *hits: dict[str, Any]) -> dict[str, Any]:
    return {"step": step, "tool": "search", "input": {"query": "q"},
            "output": {"query": "compress files more", "hits": list(hits)}}


ANSWER = {"step": 3, "tool": "answer", "input": {},
          "output": {"question": "compress files", "answer": "gzip", "citations": []}}

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], int, list[str], str, Any]] = [
    ("a strong passage is read first",
     loop_input(hit("gzip", 0.7), hit("zstd", 0.4)), [], 0, TOOLS, "read", "gzip"),
    ("weak passages call for a search",
     loop_input(hit("gpgv", 0.3)), [], 0, TOOLS, "search", "compress files"),
    ("no passage at all: search",
     loop_input(), [], 0, TOOLS, "search", "compress files"),
    ("the next best unread candidate is read",
     loop_input(hit("gzip", 0.7), hit("zstd", 0.6)), [read_entry(0, "gzip")], 1, TOOLS,
     "read", "zstd"),
    ("search hits become candidates",
     loop_input(hit("gzip", 0.7)), [read_entry(0, "gzip"), search_entry(1, hit("xz", 0.65))],
     2, TOOLS, "read", "xz"),
    ("enough evidence: answer",
     loop_input(hit("gzip", 0.8), hit("zstd", 0.75), hit("xz", 0.3)),
     [read_entry(0, "gzip"), read_entry(1, "zstd")], 2, TOOLS, "answer", None),
    ("two steps left: answer, whatever else scores",
     loop_input(hit("gzip", 0.9), hit("zstd", 0.9), max_steps=3), [read_entry(0, "gzip")], 1,
     TOOLS, "answer", None),
    ("nothing left to read or search: answer",
     loop_input(hit("gzip", 0.2)),
     [search_entry(0), search_entry(1), read_entry(2, "gzip")], 3, TOOLS, "answer", None),
    ("only the tools offered are scored",
     loop_input(hit("gzip", 0.7)), [], 0, ["search", "answer"], "search", "compress files"),
    ("equal scores: read before answer",
     loop_input(hit("a", 0.6), hit("b", 0.6)), [read_entry(0, "a")], 1, TOOLS, "read", "b"),
]


@pytest.mark.parametrize(("case", "given", "transcript", "step", "offered", "tool", "target"),
                         CASES, ids=[c[0] for c in CASES])
def test_policy_picks_the_best_scoring_tool(
        case: str, given: dict[str, Any], transcript: list[dict[str, Any]], step: int,
        offered: list[str], tool: str, target: Any) -> None:
    view = policy.view_of(given, transcript, step, offered)
    choice = policy.choose(view)
    assert choice.decision["tool"] == tool, (case, policy.scores(view))
    args = choice.decision["input"]
    if tool == "read":
        assert args == {"package": target, "status_path": "/s", "doc_root": "/d"}
    elif tool == "search":
        assert args["query"] == target and args["k"] == policy.DEFAULT_BOUNDS.search_k
        assert args["exclude"] == sorted(view.candidates)
        assert args["feedback"] == [r["package"] for r in view.read]
    else:
        assert args["question"] == "compress files"
        assert [e["package"] for e in args["evidence"]] == [r["package"] for r in view.read]
        assert all(len(e["excerpt"]) <= 300 for e in args["evidence"])
    assert choice.reason.startswith(f"step {step}: {tool}")


def test_a_drafted_answer_finishes_the_loop() -> None:
    view = policy.view_of(loop_input(hit("gzip", 0.7)), [read_entry(0, "gzip"), ANSWER], 4,
                          TOOLS)
    choice = policy.choose(view)
    assert choice.decision == {"finish": {**ANSWER["output"], "steps": 4}}


def test_scores_are_bounded_and_reads_are_capped() -> None:
    bounds = policy.Bounds(max_reads=1, max_searches=0)
    view = policy.view_of(loop_input(hit("gzip", 0.7), hit("zstd", 0.6)),
                          [read_entry(0, "gzip")], 1, TOOLS)
    assert policy.scores(view, bounds) == {"read": 0.0, "answer": 1.0, "search": 0.0}
    assert all(0.0 <= s <= 1.0 for s in policy.scores(view).values())


def test_the_policy_needs_a_question_and_its_tools() -> None:
    with pytest.raises(ValueError, match="needs a 'question'"):
        policy.view_of({"grounding": {}}, [], 0, TOOLS)
    view = policy.view_of(loop_input(), [], 0, ["lookup"])
    with pytest.raises(ValueError, match="none of"):
        policy.choose(view)
    with pytest.raises(ValueError, match="unknown tool"):
        policy.tool_input("lookup", view)
    with pytest.raises(ValueError, match="no package to read"):
        policy.tool_input("read", view)


def test_the_same_inputs_give_the_same_decision() -> None:
    given = loop_input(hit("gzip", 0.5), hit("zstd", 0.5), hit("xz", 0.5))
    decisions = {repr(policy.choose(policy.view_of(given, [], 0, TOOLS)).decision)
                 for _ in range(5)}
    assert len(decisions) == 1


def run_loop(question: str, status: str, max_steps: int = 6) -> tuple[Any, list[Any], list[str]]:
    """The research loop as the loop node runs it: decide, the tool, the transcript."""
    grounding = retrieval.ground(question, {}, status, k=3)
    given = {"question": question, "grounding": grounding, "status_path": status,
             "doc_root": "/nonexistent", "max_steps": max_steps}
    run = {"search": tools.search, "read": tools.read, "answer": tools.answer}
    transcript: list[dict[str, Any]] = []
    chunks: list[str] = []
    for step in range(max_steps):
        decide = model.decide(policy.view_of(given, transcript, step, TOOLS), None)
        while True:
            try:
                chunks.append(next(decide))
            except StopIteration as stop:
                decision = stop.value
                break
        assert decision["spend"] == 0
        if "finish" in decision:
            return decision["finish"], transcript, chunks
        output = run[decision["tool"]](**decision["input"])
        transcript.append({"step": step, "tool": decision["tool"],
                           "input": decision["input"], "output": output})
    raise AssertionError(f"no finish within {max_steps} steps: {transcript}")


def test_a_whole_loop_finishes_within_its_bound(tmp_path: Path) -> None:
    status = write_status(tmp_path)
    answer, transcript, chunks = run_loop("tools to compress files", status)
    used = [e["tool"] for e in transcript]
    assert used[-1] == "answer" and "read" in used
    assert answer["steps"] == len(transcript)
    assert {c["package"] for c in answer["citations"]} <= {"gzip", "xz-utils", "zstd"}
    assert answer["citations"], answer
    assert len(chunks) == len(transcript) + 1  # one reason per decision
    # A replay of the same inputs decides the same way.
    assert run_loop("tools to compress files", status)[1] == transcript


def test_a_tight_bound_still_ends_with_an_answer(tmp_path: Path) -> None:
    status = write_status(tmp_path)
    answer, transcript, _ = run_loop("tools to compress files", status, max_steps=2)
    assert [e["tool"] for e in transcript] == ["answer"] and answer["steps"] == 1
