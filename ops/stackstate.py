"""The workers the local stack remembers, so that ``headwater up`` after ``down``, and
``headwater restart``, bring every one of them back: ``$HEADWATER_HOME/stack.json``.

    {"version": 1,
     "workers": [{"queue": "text", "tasks": ["my_tasks"], "count": 2,
                  "directory": "/home/me/project",
                  "env": {"PYTHONPATH": "/home/me/project", "HEADWATER_CONCURRENCY": "4"}}]}

One entry per queue (every worker of a queue imports the same task modules, since they
share its partitions): ``headwater up --queue Q ...`` replaces Q's entry, ``headwater
worker stop Q`` removes it. The file is written whole (a temporary file renamed over it),
so a reader never sees half of it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops import localstack

STATE_VERSION = 1


class StackStateError(ValueError):
    """Raised when ``stack.json`` cannot be read: the message names the file and the
    fault (remove or fix the file; the workers' own logs and pid files are untouched)."""


@dataclass(frozen=True)
class WorkerGroup:
    """The workers of one queue, as the stack starts them.

    Attributes:
        queue: the queue they serve.
        tasks: the task modules each imports (``--tasks``).
        count: how many processes: ``worker-<queue>-1`` to ``worker-<queue>-<count>``.
        directory: where ``headwater up`` ran (first on their ``PYTHONPATH``, so that
            ``tasks`` import from there).
        env: the extra environment they start with (``PYTHONPATH`` and ``--env`` pairs),
            on top of that of the command that starts them.
    """

    queue: str
    tasks: tuple[str, ...]
    count: int = 1
    directory: str = ""
    env: Mapping[str, str] = field(default_factory=dict)

    def services(self) -> list[localstack.Service]:
        """Its processes."""
        return localstack.worker_services(self.queue, self.tasks, self.count)

    def to_json(self) -> dict[str, Any]:
        """Its entry in ``stack.json``."""
        return {"queue": self.queue, "tasks": list(self.tasks), "count": self.count,
                "directory": self.directory, "env": dict(self.env)}

    @classmethod
    def from_json(cls, doc: Any) -> WorkerGroup:
        """The group of one ``stack.json`` entry.

        Raises:
            StackStateError: the entry is not of that shape.
        """
        try:
            group = cls(queue=doc["queue"], tasks=tuple(doc["tasks"]), count=doc["count"],
                        directory=doc.get("directory", ""), env=dict(doc.get("env", {})))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StackStateError(f"{state_file()}: bad worker entry {doc!r} ({e})") from e
        ok = (isinstance(group.queue, str) and group.queue
              and all(isinstance(t, str) for t in group.tasks)
              and isinstance(group.count, int) and group.count >= 1
              and all(isinstance(v, str) for v in (*group.env, *group.env.values())))
        if not ok:
            raise StackStateError(f"{state_file()}: bad worker entry {doc!r}")
        return group


def state_file() -> Path:
    """``$HEADWATER_HOME/stack.json``."""
    return localstack.home() / "stack.json"


def remembered() -> list[WorkerGroup]:
    """The remembered worker groups, in the order first launched. Without a state file
    (a stack started before the stack remembered its workers), the workers that have a
    pid file (running, or crashed since) and a launch record, grouped by queue.

    Raises:
        StackStateError: the file is not JSON or not of the documented shape.
    """
    path = state_file()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return _from_launch_records()
    except OSError as e:
        raise StackStateError(f"{path}: cannot read it ({e.strerror})") from e
    try:
        doc = json.loads(text)
        entries = doc["workers"]
    except (ValueError, KeyError, TypeError) as e:
        raise StackStateError(f"{path}: not a stack state file ({e})") from e
    if not isinstance(entries, list):
        raise StackStateError(f"{path}: \"workers\" is not a list")
    return [WorkerGroup.from_json(entry) for entry in entries]


def adopt() -> list[WorkerGroup]:
    """``remembered()``, written to the state file when there was none (the workers of a
    stack started before it remembered them are remembered from then on, even once
    ``down`` has removed their pid files).

    Raises:
        StackStateError: the file is not JSON or not of the documented shape.
    """
    groups = remembered()
    if groups and not state_file().exists():
        _save(groups)
    return groups


def remember(group: WorkerGroup) -> WorkerGroup | None:
    """Record ``group`` in place of its queue's entry (at the end if new).

    Returns:
        The entry it replaced, or None.

    Raises:
        StackStateError: the present file cannot be read.
    """
    groups = remembered()
    before = next((g for g in groups if g.queue == group.queue), None)
    _save([group if g.queue == group.queue else g for g in groups]
          + ([group] if before is None else []))
    return before


def forget(queue: str) -> WorkerGroup | None:
    """Remove ``queue``'s entry; return it (None if there was none).

    Raises:
        StackStateError: the present file cannot be read.
    """
    groups = remembered()
    gone = next((g for g in groups if g.queue == queue), None)
    _save([g for g in groups if g.queue != queue])
    return gone


def _save(groups: list[WorkerGroup]) -> None:
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"version": STATE_VERSION,
                               "workers": [g.to_json() for g in groups]}, indent=2) + "\n")
    os.replace(tmp, path)


def _from_launch_records() -> list[WorkerGroup]:
    run = localstack.home() / "run"
    found: dict[str, WorkerGroup] = {}
    for pid_file in sorted(run.glob("worker-*.pid")) if run.exists() else []:
        launch = localstack.launched(pid_file.stem)
        worker = launch and localstack.worker_of(launch[0].argv)
        index = pid_file.stem.rsplit("-", 1)[-1]
        if not launch or not worker or not worker[0] or not index.isdigit():
            continue
        if pid_file.stem != f"worker-{worker[0]}-{index}":
            continue  # a name the stack does not give its workers
        env = launch[1]
        directory = env.get("PYTHONPATH", "").split(os.pathsep)[0]
        count = max(int(index), found[worker[0]].count if worker[0] in found else 0)
        found[worker[0]] = WorkerGroup(worker[0], tuple(worker[1]), count, directory, env)
    return list(found.values())
