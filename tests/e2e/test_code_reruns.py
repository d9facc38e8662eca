"""A failed code run run again on the real stack, from what failed and from a step:
``cv.steps`` counts ``a`` to ``d`` (steps 0-3, each run appending a line to a file the
test reads), checks (step 4, failing while the file ``broken`` exists) and counts
``e`` (step 5). After it failed at the check and ``broken`` was removed:

- ``POST /v1/workflows/{id}/rerun`` reuses steps 0-3 (``TaskReused``, their tasks not
  run again) and runs the check and ``e``;
- ``POST /v1/workflows/{id}/reset`` with ``{"node": "main:2"}`` reuses steps 0-1 and
  runs ``c`` on;
- ``headwater rerun ID --from main:3`` reuses steps 0-2 and runs ``d`` on.

Each new run's output holds the source's outputs of the steps it reused (``c#1``) and
new ones of those it ran (``d#3``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from code_kit import Workers, code_stack, ended, served, start_run
from stackkit import Stack, history

from headwater.core import events as ev
from tests.polling import scaled

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack with one ``cv`` worker on the code v1."""
    with code_stack(tmp_path_factory.mktemp("code-reruns")) as own:
        Workers(own).deploy("v1")
        yield own


def ran(marks: Path) -> dict[str, int]:
    """How many times each counting step and the check ran."""
    return {p.name: len(p.read_text(encoding="utf-8").splitlines())
            for p in sorted(marks.iterdir()) if p.name != "broken"}


async def steps_of(stack: Stack, workflow_id: str) -> dict[str, list[int]]:
    """The step numbers the run reused (``TaskReused``) and dispatched, from its history
    on the events topic."""
    found: dict[str, list[int]] = {"reused": [], "dispatched": []}
    for e in await history(stack, workflow_id):
        body = e.body
        if isinstance(body, ev.TaskReused | ev.TaskDispatched) and body.index is not None \
                and body.index % 2 == 1:
            key = "reused" if isinstance(body, ev.TaskReused) else "dispatched"
            found[key].append((body.index - 1) // 2)
    return found


async def rerun_by_cli(stack: Stack, workflow_id: str, step: str) -> str:
    """``headwater rerun ID --from STEP``, in a process of its own; the new run's id."""
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", "from ops.cli import main; main()", "rerun",
                         workflow_id, "--from", step, "--gateway", stack.gateway],
        cwd=REPO, capture_output=True, text=True, timeout=scaled(60), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    words = done.stdout.split()
    assert words[0] == "workflow" and f"from {step}" in done.stdout, done.stdout
    return words[1]


def outputs(**by_tag: int) -> dict[str, Any]:
    """The output of ``cv.steps`` whose counting steps gave ``<tag>#<n>``."""
    return {**{tag: f"{tag}#{n}" for tag, n in by_tag.items()}, "check": "checked"}


async def test_a_failed_code_run_reruns_and_resets_from_a_step(stack: Stack,
                                                               tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    (marks / "broken").touch()
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.steps", "v1")
        source = await start_run(client, "cv.steps", {"marks": str(marks)})
        failed = await ended(client, source)
        assert failed["status"] == "failed", failed
        assert "the check is broken" in failed["error"], failed["error"]
        assert ran(marks) == {"a": 1, "b": 1, "c": 1, "check": 1, "d": 1}
        (marks / "broken").unlink()

        # Rerun: steps 0-3 reused, the check and e run.
        answer = await client.post(f"/v1/workflows/{source}/rerun", json={})
        assert answer.status_code == 202, answer.text
        rerun = answer.json()["id"]
        doc = await ended(client, rerun)
        assert doc["status"] == "succeeded", doc
        assert doc["output"] == outputs(a=1, b=1, c=1, d=1, e=1), doc["output"]
        assert ran(marks) == {"a": 1, "b": 1, "c": 1, "check": 2, "d": 1, "e": 1}
        assert await steps_of(stack, rerun) == {"reused": [0, 1, 2, 3], "dispatched": [4, 5]}
        assert doc["rerun_of"] == source, doc
        assert doc["reused"] == {"nodes": [], "items": {"main": 4}}, doc["reused"]

        # Reset to step 2 over HTTP: steps 0-1 reused, c on run again.
        answer = await client.post(f"/v1/workflows/{source}/reset", json={"node": "main:2"})
        assert answer.status_code == 202, answer.text
        assert answer.json()["reset"] == "main:2", answer.json()
        reset = answer.json()["id"]
        doc = await ended(client, reset)
        assert doc["status"] == "succeeded", doc
        assert doc["output"] == outputs(a=1, b=1, c=2, d=2, e=2), doc["output"]
        assert ran(marks) == {"a": 1, "b": 1, "c": 2, "check": 3, "d": 2, "e": 2}
        assert await steps_of(stack, reset) == {"reused": [0, 1],
                                                "dispatched": [2, 3, 4, 5]}

        # Reset to step 3 by the CLI: steps 0-2 reused (c's output is the source's).
        by_cli = await rerun_by_cli(stack, source, "main:3")
        doc = await ended(client, by_cli)
        assert doc["status"] == "succeeded", doc
        assert doc["output"] == outputs(a=1, b=1, c=1, d=3, e=3), doc["output"]
        assert ran(marks) == {"a": 1, "b": 1, "c": 2, "check": 4, "d": 3, "e": 3}
        assert await steps_of(stack, by_cli) == {"reused": [0, 1, 2], "dispatched": [3, 4, 5]}

        # A step that is not a number, and a reset of a node no code node: 422 naming it.
        bad = await client.post(f"/v1/workflows/{source}/reset", json={"node": "main:x"})
        assert bad.status_code == 422 and "step number" in bad.text, bad.text
        bad = await client.post(f"/v1/workflows/{source}/reset", json={"node": "nope:1"})
        assert bad.status_code == 422 and "nope" in bad.text, bad.text
