"""The ``@workflow``s of the code workflow tests that deploy new code mid-run, rerun
from a step and continue as new, on the queue ``cv`` (only those tests start its
workers). Which code a worker runs is chosen by ``CV_CODE`` when it imports the module,
as a deploy would bring other code under the same workflow name:

- ``v1``: ``cv.flow`` runs ``cv.first``, then ``cv.second``, a gather of
  ``cv.square``, a sleep, and waits for the signal ``go``;
- ``v2``: the same, but its second step is ``cv.second_v2``: a run begun on v1 parts
  from its history at step 1;
- ``v3``: the change behind ``wf.patched("second-v2")``: a run begun on v1 keeps the old
  step, a run begun on v3 takes the new one.

``cv.parent`` calls the ``@workflow`` ``cv.kid`` (three steps in a row), the same in every
version but for the ``code`` each names in its output.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from headwater import WorkflowContext, task, workflow

QUEUE = "cv"
CODE = os.environ.get("CV_CODE", "v1")
"""The code this process runs (``v1``, ``v2`` or ``v3``)."""
ONCE = {"max_attempts": 1}
"""A step tried once: its failure is the run's at once."""


@task(name="cv.first", queue=QUEUE)
def first(x: int) -> int:
    """One more than ``x``."""
    return x + 1


@task(name="cv.second", queue=QUEUE)
def second(x: int) -> int:
    """``x`` times ten (the old second step)."""
    return x * 10


@task(name="cv.second_v2", queue=QUEUE)
def second_v2(x: int) -> int:
    """``x`` times a hundred (the new second step)."""
    return x * 100


@task(name="cv.square", queue=QUEUE)
def square(x: int) -> int:
    """``x`` squared."""
    return x * x


@task(name="cv.count", queue=QUEUE)
def count(tag: str, marks: str) -> str:
    """Append a line to ``marks/<tag>`` and return ``<tag>#<lines>``: how many times the
    step ran, which the test reads from the file."""
    path = Path(marks) / tag
    with path.open("a", encoding="utf-8") as f:
        f.write("ran\n")
    return f"{tag}#{len(path.read_text(encoding='utf-8').splitlines())}"


@task(name="cv.check", queue=QUEUE)
def check(marks: str) -> str:
    """Fail while ``marks/broken`` exists (counted in ``marks/check`` either way)."""
    path = Path(marks)
    with (path / "check").open("a", encoding="utf-8") as f:
        f.write("ran\n")
    if (path / "broken").exists():
        raise RuntimeError("the check is broken")
    return "checked"


@task(name="cv.add", queue=QUEUE)
def add(acc: int, x: int) -> int:
    """``acc + x``."""
    return acc + x


async def _second_step(wf: WorkflowContext, a: int) -> int:
    """The step the versions differ in."""
    if CODE == "v2":
        return int(await wf.run(second_v2, x=a))
    if CODE == "v3" and wf.patched("second-v2"):
        return int(await wf.run(second_v2, x=a))
    return int(await wf.run(second, x=a))


@workflow(name="cv.flow", queue=QUEUE)
async def flow(wf: WorkflowContext, x: int, n: int = 3, nap: float = 0.3) -> dict[str, Any]:
    """Two task steps (the second one the versions change), a gather of ``n``
    squares, a sleep of ``nap`` seconds and the signal ``go``."""
    a = int(await wf.run(first, x=x))
    b = await _second_step(wf, a)
    squares = await wf.gather(*(wf.run(square, x=i) for i in range(n)))
    await wf.sleep(nap)
    go = await wf.signal("go", timeout=600)
    return {"a": a, "b": b, "squares": squares, "go": go, "code": CODE}


@workflow(name="cv.steps", queue=QUEUE)
async def steps(wf: WorkflowContext, marks: str) -> dict[str, str]:
    """Steps 0-3 count ``a`` to ``d``, step 4 is the check (which fails while
    ``marks/broken`` exists), step 5 counts ``e``."""
    out = {tag: str(await wf.run(count, tag=tag, marks=marks)) for tag in "abcd"}
    out["check"] = str(await wf.run(check, marks=marks, retry=ONCE))
    out["e"] = str(await wf.run(count, tag="e", marks=marks))
    return out


@workflow(name="cv.loop", queue=QUEUE, max_events=300)
async def loop(wf: WorkflowContext, total: int, every: int = 0, done: int = 0,
               acc: int = 0, generation: int = 1) -> dict[str, int]:
    """``total`` steps adding each step's number to ``acc``; with ``every``, it continues
    as new after each ``every`` steps, carrying on where it was."""
    while done < total:
        acc = int(await wf.run(add, acc=acc, x=done))
        done += 1
        if every and done % every == 0 and done < total:
            wf.continue_as_new(total=total, every=every, done=done, acc=acc,
                               generation=generation + 1)
    return {"done": done, "acc": acc, "generations": generation}


@workflow(name="cv.kid", queue=QUEUE)
async def kid(wf: WorkflowContext, x: int) -> dict[str, Any]:
    """``cv.first`` three times in a row from ``x``: four activations."""
    for _ in range(3):
        x = int(await wf.run(first, x=x))
    return {"x": x, "code": CODE}


@workflow(name="cv.parent", queue=QUEUE)
async def parent(wf: WorkflowContext, x: int) -> dict[str, Any]:
    """``cv.kid`` of ``x``, as a child run."""
    return {"kid": await wf.call(kid, {"x": x}), "code": CODE}
