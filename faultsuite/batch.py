"""The workflows a fault-injection run submits (``make_batch``): the shapes of
``faultsuite.shapes`` in turn, each with its id, input and the signals it is sent.

Some workflows run registered definitions (``definitions``, registered over HTTP before
the batch is submitted, version after version): two are submitted by name
(``BY_DEFINITION``: ``fault-diamond@1`` and ``fault-diamond``, whose latest version is
2), and the child shape's ``kind: workflow`` node names ``fault-child-inner``. Each
submission says which definition and version its run, and each of its child runs, must
record (docs/definitions.md, "A run's definition").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from faultsuite import bulk
from faultsuite.code import CHILD_RUNS, code
from faultsuite.shapes import (
    CACHED_ITEMS,
    CACHED_KEYS,
    CHILD_DEFINITION,
    CHILDREN,
    DIAMOND_DEFINITION,
    LARGE_BYTES,
    LARGE_ITEMS,
    LIMITED_ITEMS,
    LIMITED_KEY,
    PAUSE_AFTER_S,
    PAUSED_FOR_S,
    RERUN_ITEMS,
    RERUN_REFUSED,
    RESTART_ITEMS,
    SHAPES,
    Sizes,
    Spec,
    child,
    child_inner,
    diamond,
    diamond_v2,
)


@dataclass(frozen=True)
class Signal:
    """A signal the run sends to a workflow of the batch, over HTTP, while it runs.

    Attributes:
        name: the signal (a ``wait`` node's ``signal``).
        fields: its fields.
        after_s: seconds after the workflow's submission was accepted.
        signal_id: its id: sent again after an error, it is taken once.
    """

    name: str
    fields: dict[str, Any]
    after_s: float
    signal_id: str


@dataclass(frozen=True)
class Definition:
    """A definition a batch runs, registered before the batch is submitted.

    Attributes:
        name: its name (``PUT /v1/definitions/{name}``).
        versions: the spec of version 1, 2, ...: on a fresh sandbox each ``PUT`` of the
            next one makes that version.
    """

    name: str
    versions: tuple[Spec, ...]

    def latest(self) -> str:
        """``name@<latest version>``, as a run of ``name`` records it."""
        return f"{self.name}@{len(self.versions)}"


@dataclass(frozen=True)
class Submission:
    """One workflow of a batch, submitted over HTTP with an explicit id.

    Attributes:
        id: its workflow id (the idempotency key of its submission).
        shape: which shape it is (a key of ``SHAPES`` or ``BY_DEFINITION``).
        spec: the workflow spec (by definition: the version's spec, which the body does
            not carry).
        input: the workflow input.
        signals: the signals to send it once it is accepted.
        definition: the definition it is submitted by (``name`` or ``name@N``), or None
            (the spec is in the body).
        runs: ``name@version`` its run must record, or None (an inline spec: none).
        children_run: ``name@version`` each of its child runs must record, or None.
        needs: the definitions to register before it is submitted.
        rerun_of: the workflow of the batch it reruns (``POST /v1/workflows/{id}/rerun``
            with its ``id`` and ``input``, once that one has ended), or None.
        pause: ``(after_s, for_s)``: pause it ``after_s`` after it was accepted and
            resume it ``for_s`` after the pause was (``POST .../pause``, ``/resume``);
            None: it is not paused.
        labels: the run's labels (the bulk shape's: ``bulk.LABEL``), or None.
    """

    id: str
    shape: str
    spec: Spec
    input: dict[str, Any] = field(default_factory=dict)
    signals: tuple[Signal, ...] = ()
    definition: str | None = None
    runs: str | None = None
    children_run: str | None = None
    needs: tuple[Definition, ...] = ()
    rerun_of: str | None = None
    pause: tuple[float, float] | None = None
    labels: dict[str, str] | None = None

    def body(self) -> dict[str, Any]:
        """The ``POST /v1/workflows`` body (the same on every retry); a rerun's, of
        ``POST /v1/workflows/{rerun_of}/rerun``."""
        if self.rerun_of is not None:
            return {"id": self.id, "input": self.input}
        if self.definition is not None:
            return {"id": self.id, "definition": self.definition, "input": self.input}
        if self.labels:
            return {"id": self.id, "workflow": self.spec, "input": self.input,
                    "labels": self.labels}
        return {"id": self.id, "workflow": self.spec, "input": self.input}


BY_DEFINITION: dict[str, tuple[str, int]] = {
    "definition_pinned": (f"{DIAMOND_DEFINITION}@1", 1),
    "definition_latest": (DIAMOND_DEFINITION, 2),
}
"""The shapes submitted by a definition (``{"id", "definition", "input"}``): the reference
submitted, and the version its run must record (a bare name runs the latest)."""
ALL_SHAPES = ("chain", "restart", "definition_latest", "map", "flaky", "error_route",
              "continue_on_error", "definition_pinned", "failing", "wait", "sleep", "paused",
              "child", "loop", "branch", "diamond", "code", "large", "limited", "cached",
              "deadline",
              "rerun")
"""Every shape, in the order a batch cycles through them. The runs by name come early
(3rd and 8th), where the gateway's first ``gateway.after_produce`` kill falls in the
suites (``suite.FIRST_HITS``): the submission whose answer is lost is then often one by
name, sent again for the same run. A short batch (``--batch 3``) has one too. The
restart shape comes second, so that its long map items are in flight when a run's first
worker is killed (``suite.FIRST_HITS``: the 7th or 20th attempt started), and a lost
attempt restarts it; a short batch has it too. Each workflow of the rerun shape (last)
adds its rerun to the batch, after every other workflow. The code shape is a
``@workflow`` (``faultsuite.code``), sent the signal its function waits for. The large
shape's values go by reference (``shapes.large``); the limited shape's attempts wait for
keyed limits (``shapes.limited``); the cached shape's items share their cache keys with
the other workflows of the shape (``shapes.cached``); the deadline shape's run is failed
by its deadline, its attempt and child workflow cancelled (``shapes.deadline``). The
paused shape's run is paused while its first task runs and resumed later
(``Submission.pause``); it comes 12th, so a batch of 12 has it."""

DEFAULT_SIZES = Sizes()
"""The sizes of a batch unless told (``Sizes``' defaults)."""


def definitions(s: Sizes) -> dict[str, Definition]:
    """The definitions the shapes run, by name, each with its versions in order."""
    return {DIAMOND_DEFINITION: Definition(DIAMOND_DEFINITION, (diamond(s), diamond_v2(s))),
            CHILD_DEFINITION: Definition(CHILD_DEFINITION, (child_inner(s),))}


def make_batch(tag: str, size: int, sizes: Sizes = DEFAULT_SIZES,
               shapes: Sequence[str] = ALL_SHAPES) -> list[Submission]:
    """``size`` workflows cycling through ``shapes``; ids ``<tag>-<shape>-<n>``; then
    ``bulk.RUNS`` labelled workflows (``<tag>-bulk-<n>``: the bulk cancel's targets,
    ``faultsuite.bulk``) and the reruns of the rerun shape.

    The same arguments give the same batch (ids, specs, references and inputs), so a
    fault-free run and a run under faults can be compared workflow by workflow.

    Raises:
        ValueError: an unknown shape.
    """
    unknown = [s for s in shapes if s not in ALL_SHAPES]
    if unknown:
        raise ValueError(f"unknown shapes {unknown} (one of {list(ALL_SHAPES)})")
    registry = definitions(sizes)
    batch = [_submission(tag, n, shapes[n % len(shapes)], sizes, registry)
             for n in range(size)]
    labelled = [Submission(f"{tag}-bulk-{n:03d}", "bulk", bulk.spec(), {"seed": f"{tag}-b{n}"},
                           labels={bulk.LABEL: tag}) for n in range(bulk.RUNS)]
    return batch + labelled + [_rerun(s) for s in batch if s.shape == "rerun"]



def _rerun(source: Submission) -> Submission:
    """The rerun of a workflow of the rerun shape: the same items, none refused."""
    return Submission(f"{source.id}-again", "rerun", source.spec,
                      {**source.input, "refuse": None}, rerun_of=source.id)


def _input(tag: str, shape: str, n: int, sizes: Sizes) -> dict[str, Any]:
    """The input of workflow number ``n`` of ``shape``."""
    workflow_input: dict[str, Any] = {"seed": f"{tag}-{n}"}
    if shape == "map":
        workflow_input["items"] = [f"{n}.{i}" for i in range(sizes.map_items)]
    elif shape == "child":
        workflow_input["children"] = [f"{n}.{i}" for i in range(CHILDREN)]
    elif shape == "branch":
        workflow_input["flag"] = n % 2 == 0
    elif shape == "restart":
        workflow_input["items"] = [f"{n}.{i}" for i in range(RESTART_ITEMS)]
    elif shape == "large":
        workflow_input["items"] = [f"{n}.{i}" for i in range(LARGE_ITEMS)]
        workflow_input["big"] = f"{n}." * (LARGE_BYTES // 2)
    elif shape == "limited":
        workflow_input["items"] = [f"{n}.{i}" for i in range(LIMITED_ITEMS)]
        workflow_input["customer"] = LIMITED_KEY
    elif shape == "cached":
        workflow_input["items"] = [f"{tag}.k{(n + i) % CACHED_KEYS}"
                                   for i in range(CACHED_ITEMS)]
    elif shape == "rerun":
        workflow_input["items"] = [f"{n}.{i}" for i in range(RERUN_ITEMS)]
        workflow_input["refuse"] = f"{n}.{RERUN_REFUSED}"
    return workflow_input


def _submission(tag: str, n: int, shape: str, sizes: Sizes,
                registry: dict[str, Definition]) -> Submission:
    """Workflow number ``n`` of the batch ``tag``, of ``shape``: its submission, with the
    definitions it needs and what its runs must record."""
    wid, workflow_input = f"{tag}-{shape}-{n:03d}", _input(tag, shape, n, sizes)
    if shape in BY_DEFINITION:
        ref, version = BY_DEFINITION[shape]
        d = registry[ref.partition("@")[0]]
        return Submission(wid, shape, d.versions[version - 1], workflow_input,
                          definition=ref, runs=f"{d.name}@{version}", needs=(d,))
    if shape == "child":
        inner = registry[CHILD_DEFINITION]
        return Submission(wid, shape, child(sizes), workflow_input,
                          children_run=inner.latest(), needs=(inner,))
    signals = (Signal("approval", {"approved": True, "note": f"ok {n}"}, 1.0,
                      f"{wid}-approval"),) if shape in ("wait", "code") else ()
    if shape == "code":
        return Submission(wid, shape, code(sizes), workflow_input, signals,
                          children_run=CHILD_RUNS)
    pause = (PAUSE_AFTER_S, PAUSED_FOR_S) if shape == "paused" else None
    return Submission(wid, shape, SHAPES[shape](sizes), workflow_input, signals, pause=pause)


def needed(batch: Sequence[Submission]) -> list[Definition]:
    """The definitions ``batch`` needs, each once, in the order first needed."""
    found: dict[str, Definition] = {}
    for s in batch:
        for d in s.needs:
            found.setdefault(d.name, d)
    return list(found.values())
