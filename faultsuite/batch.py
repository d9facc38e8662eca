"""The workflows a fault-injection run submits: varied shapes over deterministic tasks.

Every task's output depends on its input alone (``e2e.digest``; ``e2e.flaky``, whose
``attempt`` field the specs never pass on), so a run under faults must end every
workflow exactly as a fault-free run of the same batch does: same status, same node
statuses, same output. Attempts lost to a fault are retried, so each spec allows more
attempts than the task needs and a short heartbeat timeout (a killed worker's attempt
is retried after it).

Some workflows run registered definitions (``definitions``, registered over HTTP before
the batch is submitted, version after version): two are submitted by name
(``BY_DEFINITION``: ``fault-diamond@1`` and ``fault-diamond``, whose latest version is
2), and the child shape's ``kind: workflow`` node names ``fault-child-inner``. Each
submission says which definition and version its run, and each of its child runs, must
record (docs/definitions.md, "A run's definition").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Spec = dict[str, Any]

RETRY = {"max_attempts": 8, "backoff_base": 0.2, "backoff_max": 1.0, "multiplier": 2.0,
         "jitter": 0.0}
"""Attempts in all, and seconds between them: a fault costs at most an attempt or two."""
HEARTBEAT_TIMEOUT_S = 2.0
"""How long an attempt on a killed worker stays silent before it is retried, seconds."""
FLAKY_SUCCEEDS_ON = 3
"""The attempt at which ``e2e.flaky`` stops failing (two retries in a fault-free run)."""


@dataclass(frozen=True)
class Sizes:
    """How much work each shape does.

    Attributes:
        seconds: how long each plain task sleeps, seconds.
        map_items: items of the map shape.
        map_concurrency: the map's ``max_concurrency``.
        map_seconds: how long each map item sleeps, seconds.
    """

    seconds: float = 0.2
    map_items: int = 100
    map_concurrency: int = 10
    map_seconds: float = 0.05


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

    def body(self) -> dict[str, Any]:
        """The ``POST /v1/workflows`` body (the same on every retry)."""
        if self.definition is not None:
            return {"id": self.id, "definition": self.definition, "input": self.input}
        return {"id": self.id, "workflow": self.spec, "input": self.input}


def _flow(name: str, nodes: list[Spec], output: Any = None) -> Spec:
    spec: Spec = {"name": name, "retry": RETRY, "heartbeat_timeout": HEARTBEAT_TIMEOUT_S,
                  "nodes": nodes}
    if output is not None:
        spec["output"] = output
    return spec


def _digest(node: str, value: Any, seconds: float, needs: Sequence[str] = (),
            **extra: Any) -> Spec:
    spec: Spec = {"id": node, "task": "e2e.digest",
                  "input": {"value": value, "salt": node, "seconds": seconds}}
    if needs:
        spec["needs"] = list(needs)
    spec.update(extra)
    return spec


def chain(s: Sizes) -> Spec:
    """a -> b -> c -> d, each digesting the one before."""
    return _flow("fault-chain", [
        _digest("a", "${input.seed}", s.seconds),
        _digest("b", "${nodes.a.output}", s.seconds, ["a"]),
        _digest("c", "${nodes.b.output}", s.seconds, ["b"]),
        _digest("d", "${nodes.c.output}", s.seconds, ["c"]),
    ])


def diamond(s: Sizes) -> Spec:
    """a -> (b, c) -> d: a fan-out and a fan-in."""
    return _flow("fault-diamond", [
        _digest("a", "${input.seed}", s.seconds),
        _digest("b", "${nodes.a.output}", s.seconds, ["a"]),
        _digest("c", "${nodes.a.output}", s.seconds, ["a"]),
        _digest("d", {"b": "${nodes.b.output}", "c": "${nodes.c.output}"}, s.seconds,
                ["b", "c"]),
    ])


def fan_out(s: Sizes) -> Spec:
    """A map over ``input.items`` (results in input order), then a digest of the list."""
    return _flow("fault-map", [
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.digest",
         "max_concurrency": s.map_concurrency,
         "input": {"value": "${item}", "salt": "m", "seconds": s.map_seconds}},
        _digest("sum", "${nodes.m.output}", s.seconds, ["m"]),
    ], output={"items": "${nodes.m.output}", "sum": "${nodes.sum.output}"})


def flaky(s: Sizes) -> Spec:
    """``e2e.flaky`` fails until its third attempt, then a digest of its value."""
    return _flow("fault-flaky", [
        {"id": "f", "task": "e2e.flaky",
         "input": {"succeed_on": FLAKY_SUCCEEDS_ON, "value": "${input.seed}"}},
        _digest("g", "${nodes.f.output.value}", s.seconds, ["f"]),
    ], output={"f": "${nodes.f.output.value}", "g": "${nodes.g.output}"})


def error_route(s: Sizes) -> Spec:
    """``bad`` fails for good and routes to ``handle``; its dependent is skipped."""
    return _flow("fault-error-route", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "bad", "task": "e2e.fatal", "needs": ["a"], "on_error": "handle"},
        _digest("after", "${nodes.bad.output}", s.seconds, ["bad"]),
        {"id": "handle", "task": "e2e.digest",
         "input": {"value": "${error.type}", "salt": "handle", "seconds": s.seconds}},
    ])


def continue_on_error(s: Sizes) -> Spec:
    """``bad`` fails for good with ``continue_on_error``; its dependent still runs."""
    return _flow("fault-continue", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "bad", "task": "e2e.fatal", "needs": ["a"], "continue_on_error": True},
        _digest("after", "${nodes.bad.output.error.type}", s.seconds, ["bad"]),
    ], output={"after": "${nodes.after.output}"})


def failing(s: Sizes) -> Spec:
    """``bad`` fails for good without a route: the workflow fails, ``after`` never runs."""
    return _flow("fault-failing", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "bad", "task": "e2e.fatal", "needs": ["a"]},
        _digest("after", "${nodes.bad.output}", s.seconds, ["bad"]),
    ])


def wait(s: Sizes) -> Spec:
    """``a``, then a wait for the signal ``approval`` (sent mid-run), then a digest of
    the signal's note."""
    return _flow("fault-wait", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "approval", "kind": "wait", "signal": "approval", "needs": ["a"],
         "timeout": 600, "fields": {"approved": "boolean", "note": "string"}},
        _digest("b", {"a": "${nodes.a.output}", "note": "${nodes.approval.output.note}"},
                s.seconds, ["approval"]),
    ], output={"b": "${nodes.b.output}", "approved": "${nodes.approval.output.approved}"})


def sleep(s: Sizes) -> Spec:
    """``a``, a durable sleep of ``SLEEP_S``, then ``b``."""
    return _flow("fault-sleep", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "nap", "kind": "sleep", "duration": SLEEP_S, "needs": ["a"]},
        _digest("b", "${nodes.a.output}", s.seconds, ["nap"]),
    ])


def diamond_v2(s: Sizes) -> Spec:
    """``diamond`` with an output naming each branch: version 2 of ``fault-diamond`` (a
    run of the other version ends with another output)."""
    spec = diamond(s)
    spec["output"] = {"b": "${nodes.b.output}", "c": "${nodes.c.output}",
                      "d": "${nodes.d.output}"}
    return spec


def child_inner(s: Sizes) -> Spec:
    """``x -> y`` on ``input.value``, output ``y``'s: the definition ``fault-child-inner``
    that the child shape runs."""
    return _flow("fault-child-inner", [
        _digest("x", "${input.value}", s.seconds),
        _digest("y", "${nodes.x.output}", s.seconds, ["x"]),
    ], output="${nodes.y.output}")


def child(s: Sizes) -> Spec:
    """``a``, then a map of ``CHILDREN`` child workflows of the definition
    ``fault-child-inner`` (named, not inline: the gateway resolves it; two tasks each, at
    most two at once), then a digest of their outputs (in input order)."""
    return _flow("fault-child", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "kids", "kind": "workflow", "needs": ["a"], "over": "${input.children}",
         "max_concurrency": 2, "definition": CHILD_DEFINITION,
         "input": {"value": {"a": "${nodes.a.output}", "item": "${item}"}}},
        _digest("b", "${nodes.kids.output}", s.seconds, ["kids"]),
    ], output={"kids": "${nodes.kids.output}", "b": "${nodes.b.output}"})


def loop(s: Sizes) -> Spec:
    """A bounded loop: ``e2e.decide`` calls the ``digest`` tool ``LOOP_STEPS`` times on
    its last output, then finishes; then a digest of the loop's output."""
    return _flow("fault-loop", [
        {"id": "agent", "kind": "loop", "decide": "e2e.decide", "max_steps": LOOP_STEPS + 2,
         "tools": [{"name": "digest", "task": "e2e.digest"}],
         "input": {"seed": "${input.seed}", "steps": LOOP_STEPS, "tool": "digest"}},
        _digest("b", "${nodes.agent.output}", s.seconds, ["agent"]),
    ], output={"agent": "${nodes.agent.output}", "b": "${nodes.b.output}"})


def restart(s: Sizes) -> Spec:
    """``a``, a map of ``RESTART_ITEMS`` slow items, then ``b``, with
    ``restart_on_failure``: an attempt lost with its worker restarts the whole run (up to
    ``RESTART_MAX`` times, then it is retried), which must end as a fault-free run does.
    Its items take ``RESTART_ITEM_S`` each, so a worker's death is likely to find them
    running."""
    spec = _flow("fault-restart", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.digest",
         "needs": ["a"], "max_concurrency": RESTART_ITEMS,
         "input": {"value": {"a": "${nodes.a.output}", "item": "${item}"}, "salt": "m",
                   "seconds": RESTART_ITEM_S}},
        _digest("b", "${nodes.m.output}", s.seconds, ["m"]),
    ], output={"m": "${nodes.m.output}", "b": "${nodes.b.output}"})
    spec.update(restart_on_failure=True, max_restarts=RESTART_MAX)
    return spec


def branch(s: Sizes) -> Spec:
    """``a``, then ``yes`` or ``no`` as ``input.flag`` says (``when``), then a join of
    both (the skipped branch's output is null)."""
    return _flow("fault-branch", [
        _digest("a", "${input.seed}", s.seconds),
        _digest("yes", "${nodes.a.output}", s.seconds, ["a"], when="${input.flag} == true"),
        _digest("no", "${nodes.a.output}", s.seconds, ["a"], when="not ${input.flag}"),
        _digest("join", {"yes": "${nodes.yes.output}", "no": "${nodes.no.output}"},
                s.seconds, ["yes", "no"]),
    ])


SLEEP_S = 1.5
"""How long the sleep shape sleeps, seconds."""
CHILDREN = 3
"""Child workflows of the child shape."""
LOOP_STEPS = 4
"""Tool calls of the loop shape."""
RESTART_ITEMS = 4
"""Map items of the restart shape (all in flight at once)."""
RESTART_MAX = 5
"""Restarts the restart shape allows before a lost attempt is retried instead."""
RESTART_ITEM_S = 1.5
"""How long each map item of the restart shape takes, seconds."""

SHAPES: dict[str, Callable[[Sizes], Spec]] = {
    "chain": chain, "diamond": diamond, "map": fan_out, "flaky": flaky,
    "error_route": error_route, "continue_on_error": continue_on_error, "failing": failing,
    "wait": wait, "sleep": sleep, "child": child, "loop": loop, "branch": branch,
    "restart": restart,
}
"""Every shape with its spec inline, in the order a batch cycles through them."""
DIAMOND_DEFINITION = "fault-diamond"
"""The definition of the diamond shape: version 1 ``diamond``, version 2 ``diamond_v2``."""
CHILD_DEFINITION = "fault-child-inner"
"""The definition the child shape's ``kind: workflow`` node names (one version)."""
BY_DEFINITION: dict[str, tuple[str, int]] = {
    "definition_pinned": (f"{DIAMOND_DEFINITION}@1", 1),
    "definition_latest": (DIAMOND_DEFINITION, 2),
}
"""The shapes submitted by a definition (``{"id", "definition", "input"}``): the reference
submitted, and the version its run must record (a bare name runs the latest)."""
ALL_SHAPES = ("chain", "restart", "definition_latest", "map", "flaky", "error_route",
              "continue_on_error", "definition_pinned", "failing", "wait", "sleep", "child",
              "loop", "branch", "diamond")
"""Every shape, in the order a batch cycles through them. The runs by name come early
(3rd and 8th), where the gateway's first ``gateway.after_produce`` kill falls in the
suites (``suite.FIRST_HITS``): the submission whose answer is lost is then often one by
name, sent again for the same run. A short batch (``--batch 3``) has one too. The
restart shape comes second, so that its long map items are in flight when a run's first
worker is killed (``suite.FIRST_HITS``: the 7th or 20th attempt started), and a lost
attempt restarts it; a short batch has it too."""


def definitions(s: Sizes) -> dict[str, Definition]:
    """The definitions the shapes run, by name, each with its versions in order."""
    return {DIAMOND_DEFINITION: Definition(DIAMOND_DEFINITION, (diamond(s), diamond_v2(s))),
            CHILD_DEFINITION: Definition(CHILD_DEFINITION, (child_inner(s),))}


def make_batch(tag: str, size: int, sizes: Sizes = Sizes(),
               shapes: Sequence[str] = ALL_SHAPES) -> list[Submission]:
    """``size`` workflows cycling through ``shapes``; ids ``<tag>-<shape>-<n>``.

    The same arguments give the same batch (ids, specs, references and inputs), so a
    fault-free run and a run under faults can be compared workflow by workflow.

    Raises:
        ValueError: an unknown shape.
    """
    unknown = [s for s in shapes if s not in ALL_SHAPES]
    if unknown:
        raise ValueError(f"unknown shapes {unknown} (one of {list(ALL_SHAPES)})")
    registry = definitions(sizes)
    return [_submission(tag, n, shapes[n % len(shapes)], sizes, registry)
            for n in range(size)]


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
                      f"{wid}-approval"),) if shape == "wait" else ()
    return Submission(wid, shape, SHAPES[shape](sizes), workflow_input, signals)


def needed(batch: Sequence[Submission]) -> list[Definition]:
    """The definitions ``batch`` needs, each once, in the order first needed."""
    found: dict[str, Definition] = {}
    for s in batch:
        for d in s.needs:
            found.setdefault(d.name, d)
    return list(found.values())
