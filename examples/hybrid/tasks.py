"""Headwater task registrations for the ``hybrid`` example, all on the ``hybrid``
queue (``python -m examples.hybrid`` starts a worker for it).

A thin layer over :mod:`~examples.hybrid.packages`, :mod:`~examples.hybrid.classify`,
:mod:`~examples.hybrid.retrieval`, :mod:`~examples.hybrid.tools`,
:mod:`~examples.hybrid.model` and :mod:`~examples.hybrid.publishing`, which hold the
logic as plain functions.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from examples.hybrid import classify, model, packages, policy, publishing, retrieval
from examples.hybrid import tools as loop_tools
from headwater import TaskContext, task

QUEUE = "hybrid"
TASKS_MODULE = __name__


@task(name="hybrid.inventory", queue=QUEUE)
def inventory(status_path: str = packages.STATUS_PATH, batch_size: int = 100
              ) -> dict[str, Any]:
    """The installed packages, briefly, in batches for the classify map.

    Returns:
        ``{"source", "packages": count, "briefs": [Brief...], "batches": [[Brief...]]}``.
    """
    briefs = [packages.brief(p) for p in packages.load_packages(status_path)]
    return {"source": status_path, "packages": len(briefs), "briefs": briefs,
            "batches": classify.batches(briefs, batch_size)}


@task(name="hybrid.classify", queue=QUEUE)
def classify_batch(batch: list[dict[str, Any]]) -> list[classify.Classified]:
    """Classify one batch of packages; see :func:`classify.classify_batch`."""
    return classify.classify_batch(batch)


@task(name="hybrid.profile", queue=QUEUE)
def profile(classified: list[list[dict[str, Any]] | None],
            briefs: list[dict[str, Any]]) -> classify.Profile:
    """The machine by class; see :func:`classify.profile`."""
    return classify.profile(classified, briefs)


@task(name="hybrid.corpus", queue=QUEUE)
def corpus(status_path: str = packages.STATUS_PATH) -> list[packages.Package]:
    """Every installed package with its whole description: the documents retrieval
    searches. On a Debian system that is about half a megabyte of JSON, over the claim
    check's threshold, so the output goes by reference: stored once, the run's history
    holding a reference, and a step given it gets the list back."""
    return list(packages.load_packages(status_path))


@task(name="hybrid.retrieve", queue=QUEUE)
def retrieve(question: str, category_of: dict[str, str],
             status_path: str = packages.STATUS_PATH, k: int = 5,
             corpus: list[packages.Package] | None = None) -> retrieval.Grounding:
    """The grounding passages for the question, among ``corpus`` if given, else the
    packages of ``status_path``; see :func:`retrieval.ground`."""
    return retrieval.ground(question, category_of, status_path, k, corpus)


@task(name="hybrid.decide", queue=QUEUE)
def decide(ctx: TaskContext, input: dict[str, Any], transcript: list[dict[str, Any]],
           step: int, tools: list[str], spent: float = 0.0
           ) -> Generator[str, None, dict[str, Any]]:
    """The research loop's decide task: stream the reasoning, return the decision.

    Called with the loop's input and transcript (the loop node's contract); the model
    named by ``HEADWATER_EXAMPLE_MODEL_URL`` decides when set, else the policy (see
    :func:`model.decide`). ``spent`` (the budget used so far) is not needed here.
    """
    view = policy.view_of(input, transcript, step, tools)
    return (yield from model.decide(view, model.ModelSettings.from_env(),
                                    heartbeat=ctx.heartbeat))


@task(name="hybrid.search", queue=QUEUE)
def search(query: str, status_path: str = packages.STATUS_PATH, k: int = 5,
           exclude: list[str] | None = None, feedback: list[str] | None = None
           ) -> loop_tools.Found:
    """Search the installed packages; see :func:`loop_tools.search`."""
    return loop_tools.search(query, status_path, k, exclude or (), feedback or ())


@task(name="hybrid.read", queue=QUEUE)
def read(package: str, status_path: str = packages.STATUS_PATH,
         doc_root: str = packages.DOC_ROOT) -> loop_tools.Reading:
    """Read one installed package; see :func:`loop_tools.read`."""
    return loop_tools.read(package, status_path, doc_root)


@task(name="hybrid.answer", queue=QUEUE)
def answer(question: str, evidence: list[dict[str, Any]], category: str = ""
           ) -> loop_tools.Answer:
    """Draft the answer; see :func:`loop_tools.answer`."""
    return loop_tools.answer(question, evidence, category)


@task(name="hybrid.publish", queue=QUEUE)
def publish(ctx: TaskContext, research: dict[str, Any], approval: dict[str, Any],
            profile: dict[str, Any]) -> publishing.Outcome:
    """Publish the approved answer as ``<workflow id>.md``; see :func:`publishing.publish`."""
    return publishing.publish(ctx.workflow_id, research, approval, profile)


@task(name="hybrid.shelve", queue=QUEUE)
def shelve(approval: dict[str, Any]) -> publishing.Outcome:
    """Record a rejected answer; see :func:`publishing.shelve`."""
    return publishing.shelve(approval)


@task(name="hybrid.report", queue=QUEUE)
def report(research: dict[str, Any], profile: dict[str, Any],
           published: dict[str, Any] | None = None, shelved: dict[str, Any] | None = None
           ) -> dict[str, Any]:
    """The workflow's output; see :func:`publishing.report`."""
    return publishing.report(research, profile, published, shelved)
