"""The research example's workflow tested as its user would: ``headwater.testing``'s
``Environment`` runs it in this process, on the real core and the hybrid example's
real tasks over a small dpkg status file, with no broker; the test sends the approval
signal, and the day an approved answer is held passes on the test's clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hybrid_fixtures import write_status

from examples.hybrid.publishing import PUBLISH_DIR_SETTING
from examples.research import flows
from headwater.core import events as ev
from headwater.core.limits import reserved_id
from headwater.errors import WorkflowFailed
from headwater.testing import Environment
from headwater.workflows.decorator import info_of
from tests.unit.headwater.workflows.redecide import redecided

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
DAY_MS = 86_400_000


@pytest.fixture
def given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The workflow's input over the fixture's nine packages; the policy decides (no
    model), answers are published under ``tmp_path``."""
    monkeypatch.delenv("HEADWATER_EXAMPLE_MODEL_URL", raising=False)
    monkeypatch.setenv(PUBLISH_DIR_SETTING, str(tmp_path / "published"))
    return {"question": "compress files", "top_k": 3, "status_path": write_status(tmp_path),
            "doc_root": str(tmp_path / "doc")}


def expected(given: dict[str, Any], published: bool, path: str, note: str) -> dict[str, Any]:
    return {
        "question": "compress files",
        "answer": "No installed package clearly matches 'compress files'; the closest "
                  "are:\n- gzip 1.12-1: GNU compression utilities",
        "citations": [{"package": "gzip", "version": "1.12-1",
                       "summary": "GNU compression utilities", "relevance": 0.298}],
        "steps": 4, "category": "system administration",
        "machine": {"packages": 9, "installed_mb": 57.8, "by_category": {
            "system administration": 3, "databases": 1, "development": 1,
            "language runtimes": 1, "networking": 1, "other": 1, "shared libraries": 1}},
        "published": published, "path": path, "note": note}


def at_ms(env: Environment, run: str, body: type, task: str | None = None) -> list[int]:
    """When the run's history recorded ``body`` events (of ``task``, if given)."""
    return [e.body.at_ms for e in env.history(run) if isinstance(e.body, body)
            and (task is None or getattr(e.body, "task", None) == task)]


async def test_an_approved_answer_is_published_a_day_later_in_under_a_second(
        given: dict[str, Any], tmp_path: Path) -> None:
    began = time.perf_counter()
    env = Environment(now=START)
    run = await env.start(flows.research, given, id="research-1")
    await env.signal(run, "approval", {"approved": True, "note": "fine"})
    out = await env.result(run)
    took = time.perf_counter() - began
    assert took < 1.0, f"{took:.3f} s"
    path = tmp_path / "published" / "research-1.md"
    assert out == expected(given, True, str(path), "fine")
    assert path.read_text().startswith("# compress files\n")
    approved, = at_ms(env, run, ev.SignalConsumed)
    published, = at_ms(env, run, ev.TaskDispatched, "hybrid.publish")
    assert published - approved >= DAY_MS  # held a day, on the test's clock
    assert datetime.fromtimestamp(published / 1000, UTC) >= START + timedelta(days=1)


async def test_the_draft_is_bounded_and_the_search_is_a_child_workflow(
        given: dict[str, Any]) -> None:
    env = Environment(now=START)
    run = await env.start(flows.research, given)
    await env.signal(run, "approval", {"approved": True})
    await env.result(run)
    dispatched = [e.body for e in env.history(run) if isinstance(e.body, ev.TaskDispatched)]
    steps = [b.task for b in dispatched if b.index is not None and b.index % 2]
    assert steps.count("hybrid.classify") == 1  # nine packages: one batch
    assert 1 < steps.count("hybrid.decide") <= flows.MAX_ROUNDS
    assert steps.count("hybrid.answer") == 1
    assert [b.task for b in dispatched].count("workflow") == 1  # the search: a child run
    child, = (s for wid, s in env.states.items() if wid != run and not reserved_id(wid))
    assert child.spec.name == "research.search"
    assert child.output["passages"][0]["package"] == "gzip"


async def test_a_second_run_over_the_same_packages_takes_the_classes_from_the_cache(
        given: dict[str, Any]) -> None:
    env = Environment(now=START)
    first = await env.start(flows.research, given, id="first")
    await env.signal(first, "approval", {"approved": False})
    again = await env.start(flows.research, given, id="again")
    await env.signal(again, "approval", {"approved": False})
    assert await env.result(again) == await env.result(first)
    [hit] = [e.body for e in env.history(again) if isinstance(e.body, ev.TaskCached)]
    assert hit.task == "hybrid.classify" and hit.source["workflow_id"] == "first"
    assert not [e for e in env.history(again) if isinstance(e.body, ev.TaskDispatched)
                and e.body.task == "hybrid.classify"]


async def test_a_rejected_answer_is_shelved_at_once(given: dict[str, Any],
                                                     tmp_path: Path) -> None:
    env = Environment(now=START)
    run = await env.start(flows.research, given)
    await env.signal(run, "approval", {"approved": False, "note": "not now"})
    assert await env.result(run) == expected(given, False, "", "not now")
    assert not at_ms(env, run, ev.TimerFired)  # no hold
    assert not (tmp_path / "published").exists()


async def test_without_an_approval_in_a_week_the_run_fails(given: dict[str, Any]) -> None:
    env = Environment(now=START)
    run = await env.start(flows.research, given)
    with pytest.raises(WorkflowFailed, match="TimeoutError"):
        await env.result(run)
    failed, = at_ms(env, run, ev.WorkflowFailed)
    assert failed - round(START.timestamp() * 1000) >= 7 * DAY_MS


async def test_a_run_replayed_from_the_start_at_every_activation_decides_the_same(
        given: dict[str, Any]) -> None:
    # what a worker does after a crash: the run's history gives the same steps
    outputs: list[Any] = []
    histories: list[list[ev.HistoryEvent]] = []
    for cache in (True, False):
        env = Environment(now=START, cache=cache)
        run = await env.start(flows.research, given, id="same")
        await env.signal(run, "approval", {"approved": True})
        outputs.append(await env.result(run))
        histories.append(env.history(run))
    assert outputs[0] == outputs[1]
    info = info_of(flows.research)
    assert info is not None
    for history in histories:  # each decision is what a replay of its history decides
        checked = await redecided(history, info)
        assert checked and all(recorded == fresh for _, recorded, fresh in checked), checked
