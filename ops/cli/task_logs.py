"""``headwater logs RUN [NODE] [-f]``: a run's task logs from the gateway, each line
prefixed by its task (``node`` or ``node[index]``) and attempt (``#2``).

Without ``-f``: every line so far (``GET /v1/workflows/{id}/logs``). With ``-f``: those,
then new lines as they come, polling each task of the run (``GET .../tasks/{node}/
{index}/logs?after=``) every ``POLL_S``, until the run has ended and each task's log is
complete.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from headwater.client import Client, TaskLogLine

POLL_S = 0.5
"""How often ``-f`` asks for new lines, seconds."""


def label(node: str, index: int | None) -> str:
    """A task as the lines name it: ``node`` or ``node[index]``."""
    return node if index is None else f"{node}[{index}]"


def text(line: TaskLogLine) -> str:
    """A line as printed: its task and attempt, then the message (each of its lines so
    prefixed); a logged record's level and logger in brackets, ``[stderr]`` for stderr."""
    source = (f"[{line.level} {line.logger}] " if line.stream == "log"
              else "[stderr] " if line.stream == "stderr" else "")
    prefix = f"{label(line.node, line.index)} #{line.attempt} | "
    first, *rest = line.message.split("\n")
    return "\n".join([f"{prefix}{source}{first}", *(f"{prefix}  {r}" for r in rest)])


def print_run_logs(hw: Client, workflow_id: str, node: str | None) -> None:
    """Print every line of the run so far (of ``node`` alone unless None); none: say so
    on stderr (the tasks logged and printed nothing, or have not started)."""
    lines = hw.run_logs(workflow_id, node)
    for line in lines:
        typer.echo(text(line))
    if not lines:
        where = f"node {node} of {workflow_id}" if node else workflow_id
        typer.echo(f"no log lines from the tasks of {where} (they logged and printed "
                   "nothing at INFO or above, or have not run yet)", err=True)


def follow_run_logs(hw: Client, workflow_id: str, node: str | None,
                    poll_s: float = POLL_S) -> None:
    """Print the run's lines as they come until it has ended and every task's log is
    complete (see the module's docstring)."""
    from headwater.client import logs

    cursors: dict[tuple[str, int | None], str | None] = {}
    complete: set[tuple[str, int | None]] = set()
    while True:
        run = hw.get(workflow_id)
        for task in _tasks(run.raw, node):
            if task in complete:
                continue
            while True:
                page = hw.fetch(logs.task_page(workflow_id, *task, cursors.get(task)))
                for doc in page["lines"]:
                    typer.echo(text(logs.line_from(doc, *task)))
                cursors[task] = page["next"] or cursors.get(task)
                if page["complete"]:
                    complete.add(task)
                if len(page["lines"]) < logs.PAGE:
                    break
        if run.done and set(_tasks(hw.get(workflow_id).raw, node)) <= complete:
            return
        time.sleep(poll_s)


def _tasks(doc: dict[str, Any], node: str | None) -> list[tuple[str, int | None]]:
    """The run's tasks (``node`` and ``index``) in order, of ``node`` alone unless None."""
    found = {(t["node"], t.get("index")) for t in doc.get("tasks") or ()
             if node is None or t["node"] == node}
    return sorted(found, key=lambda t: (t[0], -1 if t[1] is None else t[1]))
