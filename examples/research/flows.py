"""The research assistant as Python code: two ``@workflow`` functions over the hybrid
example's tasks (:mod:`examples.hybrid.tasks`, queue ``hybrid``).

``research`` classifies the installed packages, reads their descriptions once
(``hybrid.corpus``: half a megabyte, which goes by reference), calls
``research.search`` (a child workflow) for the passages among them that ground the
question, drafts the answer in a loop of at
most ``MAX_ROUNDS`` rounds of decide and a tool, waits for the ``approval`` signal,
holds an approved answer for ``hold_s`` seconds (a day unless the input says) and
publishes it, or shelves a rejected one. What ``examples/hybrid/workflow.yaml`` says
with node kinds (a map, a loop, a wait, ``when`` branches) is plain Python here:
``wf.gather``, a ``for`` loop, ``await wf.signal``, ``if``.

The functions only decide; the work (reading files, ranking, writing the published
answer) is in the tasks, each a step of the run's history. Given the same input and the
same installed packages they issue the same steps and return the same output, so the
run's history replays to the same result wherever it is folded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson

from examples.hybrid import packages, tasks
from headwater import WorkflowContext, workflow

QUEUE = "research"
"""The queue of the workflows' activations (their tasks run on ``hybrid``)."""
FLOWS_MODULE = __name__
DAY = 86_400.0
"""Seconds in a day."""
MAX_ROUNDS = 6
"""Draft rounds at most: the hybrid loop's ``max_steps`` (its policy drafts the answer
while a round is left to finish with it)."""
BUDGET = 4000.0
"""What the rounds may spend, as decide reports it (a model's tokens; the policy's 0)."""
APPROVAL_TIMEOUT = 7 * DAY
"""How long the run waits for the ``approval`` signal before it fails, seconds."""
BATCH_SIZE = 100
"""Packages per classify step."""
RETRY: dict[str, Any] = {"max_attempts": 3, "backoff_base": 0.5, "backoff_max": 10.0,
                         "multiplier": 2.0, "jitter": 0.2}
"""Each step's retry policy (the hybrid spec's)."""
STEP_TIMEOUT = 120.0
"""Seconds per attempt of decide and of each tool."""
TOOLS: dict[str, Callable[..., Any]] = {
    "search": tasks.search, "read": tasks.read, "answer": tasks.answer}
"""The tools a draft round may call, by the names decide picks from."""


class DraftExhausted(RuntimeError):
    """The draft loop ended without an answer: its rounds or its budget ran out."""


@workflow(name="research.search", queue=QUEUE, retry=RETRY)
async def search(wf: WorkflowContext, question: str, category_of: dict[str, str],
                 status_path: str = packages.STATUS_PATH, k: int = 5,
                 corpus: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The child workflow: the passages that ground ``question``, BM25 over the
    installed packages' descriptions (``corpus``, as the parent read it, else the
    status file's), each with its package's class (``retrieval.Grounding``)."""
    grounding: dict[str, Any] = await wf.run(
        tasks.retrieve, question=question, category_of=category_of,
        status_path=status_path, k=k, corpus=corpus)
    return grounding


def digest(value: Any) -> str:
    """The cache key of a batch: the SHA-256 of its canonical JSON (the same batch gives
    the same key in every run, so the function stays deterministic)."""
    return "sha256:" + hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
                                      ).hexdigest()


async def classify(wf: WorkflowContext, status_path: str) -> dict[str, Any]:
    """Read the installed packages and classify them, a step per batch, at most four
    at once, each cached for a week by its batch (a later run over the same packages
    pays for no batch again); return the machine's profile (``classify.Profile``)."""
    inventory = await wf.run(tasks.inventory, status_path=status_path,
                             batch_size=BATCH_SIZE)
    classified = await wf.gather(*(wf.run(tasks.classify_batch, batch=batch,
                                          cache_key=digest(batch), cache_ttl="7d")
                                   for batch in inventory["batches"]), max_concurrency=4)
    wf.progress(0.2, f"classified {inventory['packages']} packages in "
                     f"{len(classified)} batches")
    profile: dict[str, Any] = await wf.run(tasks.profile, classified=classified,
                                           briefs=inventory["briefs"])
    return profile


async def draft(wf: WorkflowContext, question: str, grounding: dict[str, Any],
                status_path: str, doc_root: str) -> dict[str, Any]:
    """Draft the answer: each round decide (``hybrid.decide``: the policy, or a model
    when the worker has one) picks a tool and its input, the tool runs, and its output
    goes into the transcript the next round decides on; decide finishes with the answer
    the ``answer`` tool drafted. The hybrid spec's ``kind: loop``, as a ``for`` loop.

    Raises:
        DraftExhausted: ``MAX_ROUNDS`` rounds or ``BUDGET`` went by without an answer.
    """
    loop_input = {"question": question, "grounding": grounding, "status_path": status_path,
                  "doc_root": doc_root, "max_steps": MAX_ROUNDS}
    transcript: list[dict[str, Any]] = []
    spent = 0.0
    for step in range(MAX_ROUNDS):
        decision = await wf.run(tasks.decide, input=loop_input, transcript=transcript,
                                step=step, tools=list(TOOLS), spent=spent,
                                timeout=STEP_TIMEOUT)
        spent += float(decision.get("spend") or 0)
        if spent > BUDGET:
            raise DraftExhausted(f"the draft spent {spent:g}, over its budget of {BUDGET:g}")
        if "finish" in decision:
            wf.progress(0.7, f"drafted the answer in {step} rounds")
            finished: dict[str, Any] = decision["finish"]
            return finished
        tool = str(decision["tool"])
        output = await wf.run(TOOLS[tool], timeout=STEP_TIMEOUT, **decision["input"])
        transcript.append({"step": step, "tool": tool, "input": decision["input"],
                           "output": output})
    raise DraftExhausted(f"no answer within {MAX_ROUNDS} rounds")


@workflow(name="research", queue=QUEUE, retry=RETRY)
async def research(wf: WorkflowContext, question: str, top_k: int = 5,
                   status_path: str = packages.STATUS_PATH,
                   doc_root: str = packages.DOC_ROOT, hold_s: float = DAY) -> dict[str, Any]:
    """Research ``question`` over the installed packages and publish the approved answer.

    Args:
        question: what to research.
        top_k: grounding passages to retrieve.
        status_path, doc_root: dpkg's status file and the packages' docs.
        hold_s: how long an approved answer is held before it is published, seconds.

    Returns:
        ``publishing.report``'s output: the answer, its citations, the rounds, the
        machine's classes and what became of the answer (published, its path, the
        approval's note).
    """
    profile = await classify(wf, status_path)
    # The documents, read once: about 0.5 MB of JSON on a Debian system, so the step's
    # output and the child's input go by reference (stored once, by digest); this
    # function and the child's task get the list back.
    corpus = await wf.run(tasks.corpus, status_path=status_path)
    grounding = await wf.call(search, {"question": question, "status_path": status_path,
                                       "category_of": profile["category_of"], "k": top_k,
                                       "corpus": corpus})
    answer = await draft(wf, question, grounding, status_path, doc_root)
    approval = await wf.signal("approval", timeout=APPROVAL_TIMEOUT) or {}
    published = shelved = None
    if approval.get("approved") is True:
        wf.progress(0.8, f"approved; held {hold_s:g} s before it is published")
        await wf.sleep(hold_s)
        published = await wf.run(tasks.publish, research=answer, approval=approval,
                                 profile=profile)
    else:
        shelved = await wf.run(tasks.shelve, approval=approval)
    report: dict[str, Any] = await wf.run(tasks.report, research=answer, profile=profile,
                                          published=published, shelved=shelved)
    return report
