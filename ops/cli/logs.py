"""``headwater logs RUN [NODE] [-f]``: a run's task logs (``task_logs``); and
``headwater logs [PROCESS] [-f] [-n N]`` or ``--process PROCESS``: the local stack's
process logs, the files ``$HEADWATER_HOME/logs/<process>.log`` that
``ops.localstack.start`` appends each process's output to (``headwater ps`` names them).

An argument is a process when ``--process`` names it, or when it names a local log and
no NODE follows; anything else is a run id. PROCESS is a process's name (``gateway``,
``worker-cpu-1``) or the start of names (``worker``: every worker); without any
argument, every process. With several logs each line is prefixed by its process. ``-f``
then prints what is appended, as ``tail -f`` does, until Ctrl-C; a log that shrinks
(truncated) is read again from its start.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer

from ops import localstack
from ops.cli.common import GATEWAY

BLOCK_BYTES = 65536
POLL_S = 0.25
"""How often ``-f`` looks for new lines, seconds."""


def log_files(process: str | None) -> list[Path]:
    """The log files of ``process`` (a name, else every name starting with it; None:
    all), sorted by name.

    Raises:
        typer.BadParameter: no log matches (the message lists those there are).
    """
    folder = localstack.home() / "logs"
    every = sorted(folder.glob("*.log")) if folder.exists() else []
    if process is None:
        return every
    exact = [p for p in every if p.stem == process]
    found = exact or [p for p in every if p.stem.startswith(process)]
    if not found:
        names = ", ".join(p.stem for p in every) or "none yet"
        raise typer.BadParameter(f"no log of {process!r} in {folder} (there are: {names})")
    return found


def tail(path: Path, lines: int) -> tuple[list[str], int]:
    """The last ``lines`` lines of ``path`` (0: none) and its size in bytes, reading
    backwards a block at a time (a log can be large)."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        data, start = b"", size
        while start > 0 and data.count(b"\n") <= lines and lines > 0:
            start = max(0, start - BLOCK_BYTES)
            f.seek(start)
            data = f.read(size - start)
    text = data.decode(errors="replace").splitlines()
    return (text[-lines:] if lines > 0 else []), size


def follow_files(paths: Sequence[Path], offsets: dict[Path, int],
                 emit: Callable[[Path, str], None], keep_going: Callable[[], bool]) -> None:
    """Emit each whole line appended to ``paths`` after ``offsets`` (bytes), polling every
    ``POLL_S`` while ``keep_going()``; a file smaller than its offset is read again from
    its start (it was truncated or replaced)."""
    partial: dict[Path, bytes] = {}
    while keep_going():
        for path in paths:
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                continue
            offset = offsets.get(path, 0)
            if size < offset:
                offset, partial[path] = 0, b""
            if size == offset:
                continue
            with open(path, "rb") as f:
                f.seek(offset)
                data = partial.get(path, b"") + f.read(size - offset)
            offsets[path] = size
            *whole, partial[path] = data.split(b"\n")
            for line in whole:
                emit(path, line.decode(errors="replace"))
        time.sleep(POLL_S)


def _local_process(name: str) -> bool:
    """Whether ``name`` names a local process's log (or the start of names)."""
    folder = localstack.home() / "logs"
    return folder.exists() and any(p.stem.startswith(name) for p in folder.glob("*.log"))


def logs(
    run: Annotated[str | None, typer.Argument(
        metavar="[RUN]", help="a run's id: its tasks' logs (or a local process, as "
                              "--process, when a log of that name exists and no NODE "
                              "follows)")] = None,
    node: Annotated[str | None, typer.Argument(
        help="one node of the run (default: every node)")] = None,
    follow_: Annotated[bool, typer.Option("--follow", "-f",
                       help="then print new lines as they come (a run: until it has "
                            "ended; a process: until Ctrl-C)")] = False,
    process: Annotated[str | None, typer.Option(
        "--process", "-p", help="a local process (gateway, worker-cpu-1) or the start of "
                                "names (worker): its log file")] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", min=0,
                     help="a process: how many of the last lines of each log")] = 20,
    gateway: str = GATEWAY,
) -> None:
    """Show a run's task logs, or the local stack's process logs.

    ``headwater logs RUN [NODE]`` prints what the run's tasks logged and printed, each
    line prefixed by node[index] and #attempt; ``-f`` follows while it runs.
    ``headwater logs [PROCESS]`` (or ``--process``) shows the local stack's process logs
    (``headwater ps`` lists them); e.g. ``headwater logs worker -f``.
    """
    if process is None and run is not None and (node is not None
                                                 or not _local_process(run)):
        _run_logs(gateway, run, node, follow_)
        return
    _process_logs(process or run, follow_, lines)


def _run_logs(gateway: str, run: str, node: str | None, follow_: bool) -> None:
    from ops.cli.task_logs import follow_run_logs, print_run_logs
    from ops.cli.workflows import client, gateway_errors

    with gateway_errors(gateway), client(gateway) as hw:
        if follow_:
            with contextlib.suppress(KeyboardInterrupt):
                follow_run_logs(hw, run, node)
        else:
            print_run_logs(hw, run, node)


def _process_logs(process: str | None, follow_: bool, lines: int) -> None:
    paths = log_files(process)
    if not paths:
        typer.echo(f"no logs yet in {localstack.home() / 'logs'}")
        return
    width = max(len(p.stem) for p in paths)

    def emit(path: Path, line: str) -> None:
        typer.echo(f"{path.stem:<{width}} | {line}" if len(paths) > 1 else line)

    offsets: dict[Path, int] = {}
    for path in paths:
        last, offsets[path] = tail(path, lines)
        for line in last:
            emit(path, line)
    if follow_:
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends it
            follow_files(paths, offsets, emit, lambda: True)
