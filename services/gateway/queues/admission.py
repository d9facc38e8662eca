"""Admission of an HTTP submission, once its spec is resolved and checked: queue
placement, workers that serve its tasks, and back-pressure.

- A task node (``task``, ``map``, a ``loop``'s ``decide``) without ``queue`` goes to a
  queue whose live workers serve its task: the default queue (``cpu``) if its workers
  do, else the first such queue by name; none live: likewise among the queues whose
  workers served it lately (the registry's horizon, below); none: the default queue, as
  the spec says. Nodes of inline child workflows likewise. A loop's tools without their
  own ``queue`` run on the loop's.
- A node that requires tags (``requires: [gpu]``, ``headwater.core.selectors``) and
  names no ``queue`` goes, among those queues, to one with a worker announcing them,
  if there is one.
- 400 when no live worker of a node's queue serves its task and none did for the
  registry's horizon (``WorkerRegistry.serving_lately``, ``Settings.unserved_after_s``:
  a queue whose only worker restarts is not refused meanwhile); the problem names the
  node, the task and the queue, and, for a task no worker serves anywhere, the served
  task names closest to it (``did_you_mean``: ``my.cuont`` -> ``my.count``). Not so
  when the submission says ``queue_anyway: true``, nor while the gateway's worker
  registry is not ``trusted`` (just started: ``Settings.announce_grace_s``).
- 400 likewise when a node requires tags that no live worker of its queue announces
  all of, nor one did for the horizon (``WorkerRegistry.tags_lately``): the problem
  names the node, the task, the queue, the tags required and missing, and the tags each
  live worker of the queue announces (``worker_tags``). ``queue_anyway: true`` queues
  it: it waits on its selector topic until a worker announcing the tags starts.
- 429 with ``Retry-After`` when the backlog of a queue the spec needs is at or over its
  ``maxdepth`` (``Settings.queue_maxdepth``; 0: unlimited). Figures Kafka cannot give
  now refuse nothing (logged): the submission's own produce answers 503 if Kafka is
  gone.

The placed spec is what the run records; the submission's body hash (its idempotency)
is the body as sent. Submissions produced straight to Kafka are not admitted: they
queue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.core.ids import QUEUE_PATTERN
from headwater.core.selectors import missing, satisfies
from headwater.core.spec.fields import DEFAULT_QUEUE
from headwater.core.suggest import closest, did_you_mean
from services.gateway.edge.problems import Problem
from services.gateway.queues.figures import QueueFigures, maxdepth_of
from services.gateway.queues.workers import WorkerRegistry, served

log = logging.getLogger("headwater.gateway")

FULL_RETRY_AFTER_S = "5"
"""The ``Retry-After`` of a 429 for a full queue, seconds (a worker takes a few
dispatches meanwhile; the figures are a second old at most)."""
TASK_KINDS = {"task": "task", "map": "task", "loop": "decide"}
"""Node kinds that run a task on a queue, and the field that names it."""
SELECTING_KINDS = frozenset({"task", "map"})
"""Node kinds that may require tags (``requires``)."""
Tagged = Mapping[str, set[tuple[str, ...]]]
"""Queue -> the sets of tags its workers announce (``WorkerRegistry.tags_lately``)."""


def parse_maxdepth(text: str) -> tuple[tuple[str, int], ...]:
    """Parse ``HEADWATER_QUEUE_MAXDEPTH``: ``"gpu=100,cpu=0"`` (``*`` for the queues not
    named), into ``(queue, maxdepth)`` pairs.

    Raises:
        ValueError: a part is not ``queue=N`` with N an integer >= 0 (the message names
            the variable and the part).
    """
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        queue, _, depth = part.partition("=")
        queue = queue.strip()
        if (queue != "*" and not QUEUE_PATTERN.fullmatch(queue)) or not depth.strip().isdigit():
            raise ValueError(f"HEADWATER_QUEUE_MAXDEPTH: {part!r} is not queue=N "
                             "(N an integer, 0 for unlimited)")
        out.append((queue, int(depth)))
    return tuple(out)


@dataclass(frozen=True)
class Need:
    """A task a spec runs on a queue: ``where`` names the node (and tool, child);
    ``requires`` the tags its worker must announce (sorted; none: any worker)."""

    where: str
    task: str
    queue: str
    requires: tuple[str, ...] = ()


def place(spec: dict[str, Any], serving: Mapping[str, set[str]],
          lately: Mapping[str, set[str]] | None = None, tagged: Tagged | None = None,
          ) -> tuple[dict[str, Any], list[Need]]:
    """Place the spec's task nodes without ``queue`` (see the module docstring) and list
    what it needs; the spec is not changed (a changed copy is returned).

    Args:
        spec: a raw spec that passed validation.
        serving: queue -> the tasks its live workers serve.
        lately: queue -> the tasks served there live or within the horizon
            (``WorkerRegistry.serving_lately``), for tasks no live worker serves; None:
            ``serving``.
        tagged: queue -> the sets of tags its workers announce, to place a node that
            requires tags on a queue with a worker that matches; None: by task alone.

    Returns:
        The placed spec and every ``(node, task, queue, requires)`` it runs.
    """
    needs: list[Need] = []
    fallback = serving if lately is None else lately

    def where_to(task: str, requires: tuple[str, ...]) -> str:
        pool = serving if served(serving, task) else fallback
        if requires and tagged is not None:
            fitting = {q: tasks for q, tasks in pool.items()
                       if any(satisfies(tags, requires) for tags in tagged.get(q, ()))}
            pool = fitting if served(fitting, task) else pool
        return choose_queue(pool, task)

    return _place(spec, where_to, "", needs), needs


def needed_queues(spec: dict[str, Any]) -> list[str]:
    """The queues a placed spec's tasks run on (a node without ``queue``: the default),
    sorted; what a submission's ``warnings`` are judged by."""
    _, needs = place(spec, {})
    return sorted({n.queue for n in needs})


WhereTo = Callable[[str, tuple[str, ...]], str]
"""The queue of a node without one, by its task and the tags it requires."""


def _place(spec: dict[str, Any], where_to: WhereTo, where: str,
           needs: list[Need]) -> dict[str, Any]:
    nodes = spec.get("nodes")
    if not isinstance(nodes, list):
        return spec
    placed = [_place_node(n, where_to, where, needs) if isinstance(n, dict) else n
              for n in nodes]
    return {**spec, "nodes": placed}


def _place_node(node: dict[str, Any], where_to: WhereTo, where: str,
                needs: list[Need]) -> dict[str, Any]:
    here = f"{where}node {node.get('id')!r}"
    kind = node.get("kind", "task")
    child = node.get("workflow")
    if kind == "workflow" and isinstance(child, dict):
        return {**node, "workflow": _place(child, where_to, f"{here} (child workflow): ",
                                           needs)}
    if kind == "schedule" and isinstance(child, dict):
        # Its runs are placed as children are, but not admitted: they start later, when
        # the queues' backlog and workers are what they will be then.
        return {**node, "workflow": _place(child, where_to, f"{here} (scheduled runs): ",
                                           [])}
    task = node.get(TASK_KINDS.get(kind, ""))
    if not isinstance(task, str):
        return node
    requires = _requires(node) if kind in SELECTING_KINDS else ()
    if "queue" not in node:
        queue = where_to(task, requires)
        node = node if queue == DEFAULT_QUEUE else {**node, "queue": queue}
    queue = str(node.get("queue", DEFAULT_QUEUE))
    needs.append(Need(here, task, queue, requires))
    for tool in node.get("tools", ()) if kind == "loop" else ():
        tool = {"name": tool} if isinstance(tool, str) else tool
        if isinstance(tool, dict) and isinstance(tool.get("task", tool.get("name")), str):
            needs.append(Need(f"{here} tool {tool.get('name')!r}",
                              str(tool.get("task", tool.get("name"))),
                              str(tool.get("queue", queue))))
    return node


def _requires(node: dict[str, Any]) -> tuple[str, ...]:
    """A node's ``requires`` as the spec parser keeps it (sorted, each once)."""
    given = node.get("requires")
    return tuple(sorted({t for t in given if isinstance(t, str)})) if isinstance(
        given, list) else ()


def choose_queue(serving: Mapping[str, set[str]], task: str) -> str:
    """Where a node of ``task`` without ``queue`` goes: the default queue if its live
    workers serve the task, else the first queue by name whose live workers do, else the
    default queue."""
    queues = [q for q in served(serving, task) if QUEUE_PATTERN.fullmatch(q)]
    return DEFAULT_QUEUE if not queues or DEFAULT_QUEUE in queues else queues[0]


def unserved(needs: list[Need], serving: Mapping[str, set[str]],
             lately: Mapping[str, set[str]] | None = None) -> Problem | None:
    """The 400 for the first need no live worker of its queue serves (``serving``) and,
    given ``lately`` (``WorkerRegistry.serving_lately``), none served within the
    horizon either; or None."""
    served_lately = serving if lately is None else lately
    for need in needs:
        if need.task in served_lately.get(need.queue, set()):
            continue
        workers = "has no live worker" if need.queue not in serving else \
            "has live workers, none of which serves it"
        elsewhere = served(serving, need.task)
        known = {t for tasks in (*serving.values(), *served_lately.values()) for t in tasks}
        likely = [] if elsewhere else closest(need.task, known)
        suggested: dict[str, Any] = {"did_you_mean": likely} if likely else {}
        hint = (f"; served on {', '.join(elsewhere)}: set the node's queue" if elsewhere
                else f"; no worker serves it anywhere{did_you_mean(need.task, likely)}: "
                     f"start a worker of queue {need.queue} with the task's module")
        return Problem(400, "No worker serves the task",
                       f"{need.where}: task {need.task!r} on queue {need.queue!r}, which "
                       f"{workers}{hint}, or submit with queue_anyway: true to queue it "
                       "anyway", task=need.task, queue=need.queue,
                       **suggested,
                       errors=[f"{need.where}: no live worker of queue {need.queue} serves "
                               f"task {need.task}"])
    return None


def unmatched(needs: list[Need], tagged: Tagged,
              live_tags: Mapping[str, list[tuple[str, ...]]]) -> Problem | None:
    """The 400 for the first need whose ``requires`` no worker of its queue announces
    all of (``tagged``: live or within the horizon); or None.

    Args:
        needs: what the placed spec runs (``place``).
        tagged: queue -> the sets of tags its workers announce
            (``WorkerRegistry.tags_lately``).
        live_tags: queue -> each live worker's tags, for the problem's ``worker_tags``.
    """
    for need in needs:
        if not need.requires or any(satisfies(tags, need.requires)
                                    for tags in tagged.get(need.queue, ())):
            continue
        have = sorted(live_tags.get(need.queue, []))
        announced = {t for tags in have for t in tags}
        lacking = missing(announced, need.requires)
        selector = f"[{', '.join(need.requires)}]"
        workers = ("has no live worker" if need.queue not in live_tags else
                   "has live workers announcing " + ", ".join(
                       f"[{', '.join(tags)}]" if tags else "no tags"
                       for tags in sorted(set(have))))
        why = (f"no worker announces {', '.join(lacking)}" if lacking
               else "no one worker announces them all")
        return Problem(400, "No worker matches the selector",
                       f"{need.where}: task {need.task!r} on queue {need.queue!r} requires "
                       f"the tags {selector}, and {why}: the queue {workers}; start a "
                       f"worker of queue {need.queue} with HEADWATER_WORKER_TAGS="
                       f"{','.join(need.requires)}, or submit with queue_anyway: true to "
                       "queue it until one starts", task=need.task, queue=need.queue,
                       requires=list(need.requires), missing=list(lacking),
                       worker_tags=[list(tags) for tags in have],
                       errors=[f"{need.where}: no live worker of queue {need.queue} "
                               f"announces the tags {selector}"])
    return None


def live_tags(registry: WorkerRegistry) -> dict[str, list[tuple[str, ...]]]:
    """Queue -> each live worker's tags (a worker without tags: ``()``)."""
    found: dict[str, list[tuple[str, ...]]] = {}
    for record in registry.live():
        found.setdefault(record.queue, []).append(record.tags)
    return found


@dataclass(frozen=True)
class Admission:
    """What admission reads: the workers, the queues' figures and their maxdepths."""

    registry: WorkerRegistry
    figures: QueueFigures
    maxdepth: Mapping[str, int]

    async def admit(self, spec: dict[str, Any], queue_anyway: bool) -> dict[str, Any]:
        """The placed spec, or a refusal.

        Raises:
            Problem: 400 a task no live worker of its queue serves, nor one did within
                the registry's horizon, or tags a node requires that no worker of its
                queue announces (without ``queue_anyway``); 429 a needed queue at or
                over its maxdepth.
        """
        serving, lately = self.registry.serving(), self.registry.serving_lately()
        tagged = self.registry.tags_lately()
        placed, needs = place(spec, serving, lately, tagged)
        if not queue_anyway and self.registry.trusted:
            problem = unserved(needs, serving, lately) or unmatched(
                needs, tagged, live_tags(self.registry))
            if problem is not None:
                raise problem
        for queue in sorted({n.queue for n in needs}):
            depth = maxdepth_of(self.maxdepth, queue)
            if depth > 0:
                await self._room(queue, depth)
        return placed

    def placed(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The spec placed on the queues of the workers that serve its tasks
        (``place``), refusing nothing: what a trigger submits (its records wait on their
        topic, not in a queue's backlog)."""
        serving, lately = self.registry.serving(), self.registry.serving_lately()
        return place(spec, serving, lately, self.registry.tags_lately())[0]

    async def _room(self, queue: str, depth: int) -> None:
        try:
            backlog = (await self.figures.lag(queue)).backlog
        except Exception as e:  # refuse nothing on figures Kafka cannot give now
            log.warning("no backlog of queue %s (%r); admitting without it", queue, e)
            return
        if backlog >= depth:
            raise Problem(429, "Queue full", f"queue {queue!r} has {backlog} dispatches "
                          f"waiting, at or over its maxdepth of {depth}; retry later",
                          headers={"Retry-After": FULL_RETRY_AFTER_S}, queue=queue,
                          backlog=backlog, maxdepth=depth)


_installed: list[Admission] = []


def install(admission: Admission | None) -> None:
    """Make ``admission`` the one ``admit`` uses (None: admit everything as it is)."""
    _installed[:] = [admission] if admission is not None else []


def placed(spec: dict[str, Any]) -> dict[str, Any]:
    """``Admission.placed`` through the running gateway's ``Admission``; the spec
    unchanged when none is installed."""
    return _installed[0].placed(spec) if _installed else spec


async def admit(spec: dict[str, Any], queue_anyway: bool = False) -> dict[str, Any]:
    """Admit a resolved, checked spec through the running gateway's ``Admission``; the
    spec unchanged when none is installed (not connected yet, or a test).

    Raises:
        Problem: 400 or 429 (``Admission.admit``).
    """
    return await _installed[0].admit(spec, queue_anyway) if _installed else spec
