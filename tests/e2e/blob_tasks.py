"""Tasks and a ``@workflow`` of the claim-check tests (``test_blobs_worker.py``): large
outputs, their consumers, a fan-in, and a checkpoint over the blob threshold resumed
after a retry."""

from __future__ import annotations

import hashlib
from typing import Any

from headwater import TaskContext, WorkflowContext, task, workflow

MB = 1024 * 1024


@task(name="blob.make", queue="cpu")
def make(mb: int) -> str:
    """A string of ``mb`` MiB (its JSON: 2 bytes more)."""
    return "x" * (mb * MB)


@task(name="blob.measure", queue="cpu")
def measure(doc: str) -> dict[str, Any]:
    """The length and digest of what it was given (a consumer proving it got it whole)."""
    return {"length": len(doc), "sha256": hashlib.sha256(doc.encode()).hexdigest()}


@task(name="blob.piece", queue="cpu")
def piece(item: int, mb: int = 1) -> str:
    """``mb`` MiB, different for each item."""
    return f"{item:08d}" + "y" * (mb * MB - 8)


@task(name="blob.fan_in", queue="cpu")
def fan_in(items: list[str]) -> dict[str, Any]:
    """The count and the total length of the pieces, and whether each is its item's."""
    return {"count": len(items), "total": sum(len(s) for s in items),
            "ordered": all(s.startswith(f"{i:08d}") for i, s in enumerate(items))}


@task(name="blob.checkpointed", queue="cpu")
def checkpointed(ctx: TaskContext, mb: int) -> dict[str, Any]:
    """Attempt 1 saves a checkpoint of ``mb`` MiB and fails; the next resumes from it."""
    if ctx.last_checkpoint is None:
        ctx.checkpoint({"done": 1, "state": "c" * (mb * MB)})
        raise RuntimeError("failing after the checkpoint, to be resumed")
    state = ctx.last_checkpoint
    return {"attempt": ctx.attempt, "done": state["done"], "length": len(state["state"])}


@workflow(name="blob.code", queue="cpu")
async def code(wf: WorkflowContext, mb: int) -> dict[str, Any]:
    """A step returning ``mb`` MiB, and the next step receiving it."""
    doc = await wf.run("blob.make", mb=mb)
    seen = len(doc)
    measured = await wf.run("blob.measure", doc=doc)
    return {"seen": seen, **measured}


@task(name="blob.texts", queue="cpu")
def texts(n: int) -> list[dict[str, Any]]:
    """``n`` small items of about 100 bytes of JSON each (together over the threshold)."""
    return [{"i": i, "text": f"{i:06d} " + "t" * 72} for i in range(n)]


@task(name="blob.text_of", queue="cpu")
def text_of(text: str) -> dict[str, Any]:
    """The item number a text starts with, and its length."""
    return {"i": int(text[:6]), "length": len(text)}


@task(name="blob.gather", queue="cpu")
def gather(results: list[dict[str, Any]]) -> dict[str, Any]:
    """How many results a map gave, and whether each is its item's, in order."""
    return {"count": len(results),
            "ordered": all(r["i"] == i and r["length"] == 79 for i, r in enumerate(results))}


@task(name="blob.report", queue="cpu")
def report(pages: int) -> dict[str, Any]:
    """A short summary beside ``pages`` fields of 100 bytes: no field is large, the
    object is (it goes by reference whole)."""
    return {"summary": f"{pages} pages", **{f"p{i}": "p" * 100 for i in range(pages)}}


@task(name="blob.echo", queue="cpu")
def echo(value: Any) -> Any:
    """What it was given."""
    return value
