"""What ``headwater status`` and ``submit --follow`` say of attempts that wait on a
queue: a node whose attempts are all dispatched but none started shows as waiting on its
queue, with the queue's state when it cannot take them (``queue_state`` of
``GET /v1/workflows/{id}``'s tasks: ``no_live_workers``, ``unserved``, ``unmatched``), and the
document's ``warnings`` are printed; so are the signals a run waits for and the
progress its running attempts reported (``print_waiting``), and a paused run says since
when and by whom (``paused_note``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from headwater import errors

if TYPE_CHECKING:
    from headwater.client import Client

WARN_AFTER_S = 5.0
"""How long ``submit --follow`` follows a run before it reads its warnings once, seconds
(a worker announces itself within a few seconds of starting)."""


def node_status(node: Mapping[str, Any], tasks: Iterable[Mapping[str, Any]]) -> str:
    """A node's status as ``status`` shows it: ``running, worker w-1 lost`` when an
    attempt of it runs on a lost worker (``worker_state``), ``running, waiting on
    queue cpu (no_live_workers)`` when its open attempts are dispatched and none
    started (with the queue's ``queue_state`` if it has one), else the node's own
    status.

    Args:
        node: one of the document's ``nodes``.
        tasks: the document's ``tasks`` rows.
    """
    mine = [t for t in tasks if t.get("node") == node.get("id")]
    waiting = [t for t in mine if t.get("status") == "dispatched"]
    status = str(node.get("status"))
    lost = sorted({str(t.get("worker")) for t in mine if t.get("status") == "running"
                   and t.get("worker_state") == "lost"})
    if lost:
        return f"{status}, worker {', '.join(lost)} lost"
    if not waiting or any(t.get("status") == "running" for t in mine):
        return status
    queues: dict[str, set[str]] = {}
    for t in waiting:
        queues.setdefault(str(t.get("queue")), set()).update(
            [t["queue_state"]] if t.get("queue_state") else [])
    where = ", ".join(q + (f" ({', '.join(sorted(s))})" if s else "")
                      for q, s in sorted(queues.items()))
    return f"{status}, waiting on queue {where}"


def print_warnings(doc: Mapping[str, Any], out: Console) -> None:
    """Print each of the document's ``warnings`` (none: nothing)."""
    for warning in doc.get("warnings") or []:
        out.print(f"[yellow]warning:[/] {escape(str(warning))}")


def print_waiting(doc: Mapping[str, Any], out: Console) -> None:
    """Print the signals the run waits for (``waiting``: node and item, since when,
    until when) and each running attempt's last progress report (a task's, or a code
    workflow's ``wf.progress``); nothing for a run with neither."""
    for w in doc.get("waiting") or []:
        where = f"{w.get('node')}" + (f"[{w['index']}]" if w.get("index") is not None else "")
        until = f", times out at {w['timeout_at']}" if w.get("timeout_at") else ""
        out.print(f"waiting for signal {escape(repr(w.get('signal')))} at {escape(where)} "
                  f"since {escape(str(w.get('since')))}{escape(until)}")
    for t in doc.get("tasks") or []:
        if t.get("status") == "running" and (t.get("message") or t.get("progress")):
            done = f" {round(100 * float(t['progress']))}%" if t.get("progress") else ""
            note = f": {t['message']}" if t.get("message") else ""
            out.print(f"{escape(str(t.get('key')))} running{done}{escape(note)}")


def warn_later(hw: Client, workflow_id: str, out: Console,
               delay_s: float = WARN_AFTER_S) -> threading.Timer:
    """Read the run once after ``delay_s`` seconds (in a thread) and print its warnings;
    cancel the returned timer once the run is over. A read that fails prints nothing."""

    def check() -> None:
        with contextlib.suppress(errors.HeadwaterError):
            print_warnings(hw.get(workflow_id).raw, out)

    timer = threading.Timer(delay_s, check)
    timer.daemon = True
    timer.start()
    return timer


def paused_note(paused: Any) -> str:
    """`` (paused since T by B: why)`` for a paused run's ``paused``; "" otherwise."""
    if not isinstance(paused, dict):
        return ""
    by = f" by {paused['by']}" if paused.get("by") else ""
    why = f": {paused['reason']}" if paused.get("reason") else ""
    return escape(f" (paused since {paused.get('since')}{by}{why})")
