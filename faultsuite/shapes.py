"""The shapes of the workflows a fault-injection run submits: specs over deterministic
tasks, and how much work each does (``Sizes``).

Every task's output depends on its input alone (``e2e.digest``; ``e2e.flaky``, whose
``attempt`` field the specs never pass on), so a run under faults must end every
workflow exactly as a fault-free run of the same batch does: same status, same node
statuses, same output. Attempts lost to a fault are retried, so each spec allows more
attempts than the task needs and a short heartbeat timeout (a killed worker's attempt
is retried after it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


PAUSE_AFTER_S = 0.5
"""The paused shape's run is paused this long after its submission was accepted, s."""
PAUSED_FOR_S = 2.0
"""And resumed this long after its pause was accepted, s."""


def paused(s: Sizes) -> Spec:
    """``a``, then a durable sleep and ``c`` side by side, then ``b`` after the sleep: the
    client pauses the run while ``a`` runs and resumes it ``PAUSED_FOR_S`` later, so ``c``
    is held and the sleep's timer may come due while it is paused."""
    return _flow("fault-paused", [
        _digest("a", "${input.seed}", s.seconds),
        {"id": "nap", "kind": "sleep", "duration": SLEEP_S / 2, "needs": ["a"]},
        _digest("c", "${nodes.a.output}", s.seconds, ["a"]),
        _digest("b", "${nodes.a.output}", s.seconds, ["nap"]),
    ], output={"b": "${nodes.b.output}", "c": "${nodes.c.output}"})


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

RERUN_ITEMS = 20
"""Items of the rerun shape's map; the one at index ``RERUN_REFUSED`` fails its first run."""
RERUN_REFUSED = 7


def rerun(s: Sizes) -> Spec:
    """A map whose item ``input.refuse`` fails for good (so the run fails), then a digest
    of the list: the batch reruns it with nothing refused (``batch.Submission.rerun_of``),
    and the rerun reuses the items that succeeded."""
    return _flow("fault-rerun", [
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.refuse_digest",
         "max_concurrency": s.map_concurrency,
         "input": {"value": "${item}", "refuse": "${input.refuse}", "salt": "m",
                   "seconds": s.map_seconds}},
        _digest("sum", "${nodes.m.output}", s.seconds, ["m"]),
    ], output={"items": "${nodes.m.output}", "sum": "${nodes.sum.output}"})


LARGE_BYTES = 400_000
"""The size of the large shape's values, bytes: over the claim check's threshold
(``HEADWATER_BLOB_THRESHOLD_BYTES``, 256 KiB by default), so each goes by reference."""
LARGE_ITEMS = 3
"""Map items of the large shape, each returning a value of ``LARGE_BYTES``."""


def large(s: Sizes) -> Spec:
    """Payloads by reference: an input field of ``LARGE_BYTES`` (the gateway stores it),
    a task and a map's items returning as much (their workers store them), and a digest
    of all three (its worker resolves the references): its output must not depend on
    which attempt or which process stored a blob."""
    return _flow("fault-large", [
        {"id": "a", "task": "e2e.inflate",
         "input": {"value": "${input.seed}", "size": LARGE_BYTES}},
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.inflate",
         "input": {"value": "${item}", "size": LARGE_BYTES}},
        _digest("d", {"a": "${nodes.a.output}", "m": "${nodes.m.output}",
                      "big": "${input.big}"}, s.seconds, ["a", "m"]),
    ], output={"a": "${nodes.a.output}", "d": "${nodes.d.output}"})


LIMITED_ITEMS = 6
"""Map items of the limited shape, at most ``LIMITED_AT_ONCE`` of one key at once."""
LIMITED_AT_ONCE = 2
LIMITED_KEY = "shared"
"""The key every workflow of the limited shape takes (its input's ``customer``): they
all wait for the same limiters."""


def limited(s: Sizes) -> Spec:
    """Keyed limits: a map whose items hold a permit of ``concurrency`` keyed by the
    input's ``customer`` (``LIMITED_AT_ONCE`` at once, the rest queued in its limiter),
    then a digest under a ``rate_limit`` of the same key (5 a second). The limiters are
    runs of their own, on other partitions than the workflow's."""
    return _flow("fault-limited", [
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.digest",
         "input": {"value": "${item}", "salt": "m", "seconds": s.map_seconds},
         "concurrency": {"key": "${input.customer}", "limit": LIMITED_AT_ONCE}},
        _digest("r", "${nodes.m.output}", s.seconds, ["m"],
                rate_limit={"key": "${input.customer}", "limit": 5, "window_s": 1}),
    ], output={"items": "${nodes.m.output}", "r": "${nodes.r.output}"})


CACHED_ITEMS = 6
"""Map items of the cached shape."""
CACHED_KEYS = 3
"""The keys the cached shape's items take, shared by every workflow of the shape in a
batch: one attempt computes each key while the others wait for it or take its output."""
CACHED_TTL = "1h"


def cached(s: Sizes) -> Spec:
    """Task result caching: a map whose items are cached by the item (``CACHED_KEYS``
    keys, each taken by items of this and of other workflows of the batch, so lookups
    hit, miss and wait for an attempt computing the key), then a digest of the list
    cached by the run's seed (a key of its own: a miss, then a store). The outputs do
    not depend on which attempt computed a key."""
    return _flow("fault-cached", [
        {"id": "m", "kind": "map", "over": "${input.items}", "task": "e2e.digest",
         "input": {"value": "${item}", "salt": "c", "seconds": s.map_seconds},
         "cache": {"key": "${item}", "ttl": CACHED_TTL}},
        _digest("d", "${nodes.m.output}", s.seconds, ["m"],
                cache={"key": "${input.seed}", "ttl": CACHED_TTL}),
    ], output={"items": "${nodes.m.output}", "d": "${nodes.d.output}"})


DEADLINE = "4s"
"""The deadline shape's deadline (a span from the run's start)."""
DEADLINE_SLEEP_S = 600
"""How long the deadline shape's tasks would sleep, seconds: far past its deadline."""


def deadline(s: Sizes) -> Spec:
    """A run that cannot end before its ``deadline`` (``DEADLINE``): ``hang`` sleeps
    ``DEADLINE_SLEEP_S``, and so does the one task of ``kid``, a child workflow. The
    deadline fails the run (``DeadlineExceeded``), its attempt and its child cancelled:
    whatever a fault delays or repeats, it ends so, with both nodes cancelled."""
    nap = {"id": "nap", "task": "e2e.sleep", "input": {"seconds": DEADLINE_SLEEP_S}}
    spec = _flow("fault-deadline", [
        {"id": "hang", "task": "e2e.sleep", "input": {"seconds": DEADLINE_SLEEP_S}},
        {"id": "kid", "kind": "workflow", "workflow": _flow("fault-deadline-kid", [nap])},
    ])
    spec["deadline"] = DEADLINE
    return spec


SHAPES: dict[str, Callable[[Sizes], Spec]] = {
    "chain": chain, "diamond": diamond, "map": fan_out, "flaky": flaky,
    "error_route": error_route, "continue_on_error": continue_on_error, "failing": failing,
    "wait": wait, "sleep": sleep, "child": child, "loop": loop, "branch": branch,
    "restart": restart, "rerun": rerun, "large": large, "limited": limited,
    "cached": cached, "deadline": deadline, "paused": paused,
}
"""Every shape with its spec inline, in the order a batch cycles through them."""
DIAMOND_DEFINITION = "fault-diamond"
"""The definition of the diamond shape: version 1 ``diamond``, version 2 ``diamond_v2``."""
CHILD_DEFINITION = "fault-child-inner"
"""The definition the child shape's ``kind: workflow`` node names (one version)."""
