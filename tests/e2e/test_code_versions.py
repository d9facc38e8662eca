"""New code deployed under a running code workflow, on the real stack (``code_versions``:
which code a ``cv`` worker runs is chosen when it starts).

A run of ``cv.flow`` begun on v1 waits for its signal after its task steps; its worker is
stopped (by pid) and one running v2, whose second step is another task, started. The
signal wakes the function on v2, which parts from the history at step 1: the run is not
failed; its document names the step, the recorded and the new operation
(``nondeterministic``) and warns of it, ``headwater status`` prints the warning, and the
coordinator counts the attempts as ``nondeterministic``. v1 deployed again (the fix),
the activation's next retry decides as the history did and the run ends with v1's
output.

``wf.patched``: with v3 deployed (the change behind ``wf.patched("second-v2")``), a run
begun on v1 keeps its old step and a run begun on v3 takes the new one; both end
correctly, and no attempt is nondeterministic.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from code_kit import (
    Workers,
    code_stack,
    document,
    ended,
    served,
    signal,
    start_run,
    waiting_for_signal,
)
from prometheus_client.parser import text_string_to_metric_families
from stackkit import Stack

from tests.polling import scaled, wait_until_async

REPO = Path(__file__).resolve().parents[2]
GO = {"ok": True}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, services: None) -> Iterator[Stack]:
    """A private stack; its ``cv`` worker is the tests' (``workers``)."""
    with code_stack(tmp_path_factory.mktemp("code-versions")) as own:
        yield own


@pytest.fixture(scope="module")
def workers(stack: Stack) -> Workers:
    return Workers(stack)


def expected(x: int, b: int, code: str) -> dict[str, Any]:
    """``cv.flow``'s output for ``x`` whose second step gave ``b``, on ``code``."""
    return {"a": x + 1, "b": b, "squares": [0, 1, 4], "go": GO, "code": code}


async def nondeterministic_attempts(stack: Stack) -> float:
    """``headwater_attempts_total{outcome="nondeterministic"}`` on the coordinator's
    ``/metrics`` (summed over its task and workflow labels)."""
    launch = json.loads((Path(stack.home) / "run" / "coordinator.launch.json").read_text())
    async with httpx.AsyncClient(timeout=10) as client:
        answer = await client.get(f"http://127.0.0.1:{launch['metrics_port']}/metrics")
    assert answer.status_code == 200, answer.text[:300]
    return sum(s.value for family in text_string_to_metric_families(answer.text)
               for s in family.samples if s.name == "headwater_attempts_total"
               and s.labels.get("outcome") == "nondeterministic")


async def status_printed(stack: Stack, workflow_id: str) -> str:
    """What ``headwater status ID`` prints (a process of its own, 200 columns wide)."""
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", "from ops.cli import main; main()", "status",
                         workflow_id, "--gateway", stack.gateway],
        cwd=REPO, capture_output=True, text=True, timeout=scaled(60), check=False,
        env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def test_code_deployed_mid_run_waits_nondeterministic_until_fixed(
        stack: Stack, workers: Workers) -> None:
    workers.deploy("v1")
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.flow", "v1")
        wid = await start_run(client, "cv.flow", {"x": 4})
        waiting = await document(client, wid, lambda d: waiting_for_signal(d)
                                 and d["waiting"], "waiting for go")
        assert [(w["node"], w["index"], w["signal"]) for w in waiting["waiting"]] == [
            ("main", None, "go")], waiting["waiting"]
        assert waiting["next_wakeup"]["reason"] == "wait timeout", waiting["next_wakeup"]
        before = await nondeterministic_attempts(stack)

        workers.deploy("v2")  # v1 stopped by its pid; v2 changes step 1
        await served(client, "cv.flow", "v2")
        await signal(client, wid, "go", GO)
        doc = await document(client, wid, lambda d: (d["nondeterministic"] or {}).get(
            "attempt", 0) >= 2, "nondeterministic twice", timeout_s=60)
        assert doc["status"] == "running", doc
        parted = doc["nondeterministic"]
        assert parted["node"] == "main" and parted["index"] % 2 == 0, parted
        assert parted["error"] == ("nondeterministic at step 1: the history has task "
                                   "cv.second (activation 1), the code now issues task "
                                   "cv.second_v2"), parted
        activation = next(t for t in doc["tasks"] if t["index"] == parted["index"])
        assert activation["error_type"] == "NondeterminismError", activation
        warning = next(w for w in doc["warnings"] if w.startswith("nondeterministic"))
        assert "main[" in warning and "cv.second_v2" in warning and "waits" in warning
        # The warning stands from an attempt's failure until its retry is dispatched:
        # ask again until a ``headwater status`` falls in such a window.
        shown = await wait_until_async(lambda: status_printed(stack, wid), 60,
                                       "the warning in headwater status", until=lambda out: (
                                           "warning:" in out
                                           and "nondeterministic at step 1" in out))
        assert "task cv.second_v2" in shown, shown
        # Counted once the coordinator carried out the batch (the projection may be
        # ahead of it).
        await wait_until_async(lambda: nondeterministic_attempts(stack), scaled(30),
                               "two nondeterministic attempts counted",
                               until=lambda n: n - before >= 2)

        workers.deploy("v1")  # the fix: the code the run began on
        doc = await ended(client, wid, timeout_s=150)
        assert doc["status"] == "succeeded", (doc, stack.logs())
        assert doc["output"] == expected(4, 50, "v1"), doc["output"]
        assert doc["nondeterministic"] is None, doc["nondeterministic"]
        assert not any("nondeterministic" in w for w in doc.get("warnings") or []), doc
        done = next(t for t in doc["tasks"] if t["index"] == parted["index"])
        assert done["status"] == "succeeded" and done["attempt"] > parted["attempt"], done


async def test_a_patched_change_serves_old_and_new_runs(stack: Stack,
                                                        workers: Workers) -> None:
    workers.deploy("v1")
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=30) as client:
        await served(client, "cv.flow", "v1")
        old = await start_run(client, "cv.flow", {"x": 1})
        await document(client, old, waiting_for_signal, "the old run waiting for go")
        before = await nondeterministic_attempts(stack)

        workers.deploy("v3")  # wf.patched("second-v2")
        await served(client, "cv.flow", "v3")
        new = await start_run(client, "cv.flow", {"x": 2})
        await document(client, new, waiting_for_signal, "the new run waiting for go")
        for wid in (old, new):
            await signal(client, wid, "go", GO)
        old_doc, new_doc = await ended(client, old), await ended(client, new)
        assert old_doc["status"] == "succeeded", (old_doc, stack.logs())
        assert new_doc["status"] == "succeeded", (new_doc, stack.logs())
        assert old_doc["output"] == expected(1, 20, "v3"), old_doc["output"]  # cv.second
        assert new_doc["output"] == expected(2, 300, "v3"), new_doc["output"]  # cv.second_v2
        steps = {wid: {t["index"]: t["task"] for t in doc["tasks"] if t["index"] % 2}
                 for wid, doc in ((old, old_doc), (new, new_doc))}
        assert steps[old][3] == "cv.second", steps[old]
        assert steps[new][3] == "headwater.patch" and steps[new][5] == "cv.second_v2", \
            steps[new]
        assert "headwater.patch" not in steps[old].values(), steps[old]
        assert await nondeterministic_attempts(stack) == before
