"""py-spy sampling a deployment's processes through a benchmark's measured window
(``load.window``): one ``py-spy record`` per process, started as the window opens and
stopped by its pid with SIGINT (on which it writes what it recorded) as it closes.

``py-spy record --pid P --format raw --rate R --nonblocking``: collapsed stacks, the
process never paused to read them (a sample may be torn, which costs a little
accuracy, not the measured figures), threads only while not idle (no ``--idle``), with
or without the GIL (no ``--gil``). Reading another process's memory needs ptrace rights:
root, or ``kernel.yama.ptrace_scope`` 0 for one's own processes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from load.deploy import running
from ops.sandbox import Sandbox

PROFILED = ("coordinator", "worker-", "gateway")
"""The services sampled: names starting so (every coordinator and every worker)."""
STOP_WAIT_S = 30.0
"""How long py-spy may take to write its file after SIGINT, seconds."""
log = logging.getLogger("load.profile")


def py_spy() -> str | None:
    """The py-spy executable beside this Python (the ``bench`` extra), or on the PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


@dataclass(frozen=True)
class Window:
    """One measured window, sampled.

    Attributes:
        label: the window's label (``load.window.measured``).
        directory: where its files are: ``<service>.raw.txt`` (collapsed stacks) and
            ``<service>.log`` (py-spy's own output) per process.
        seconds: how long the window lasted.
        services: the services sampled, by name.
    """

    label: str
    directory: Path
    seconds: float
    services: tuple[str, ...]

    def raw(self, service: str) -> Path:
        """The collapsed stacks of ``service`` (absent if py-spy wrote none)."""
        return self.directory / f"{service}.raw.txt"


class Sampler:
    """Samples every window it is entered around (``load.window.watching(s.window)``).

    Attributes:
        out: the run's directory; a window's files go to ``out/<label>/``.
        rate: samples per second.
        windows: the windows sampled so far, in order.
    """

    def __init__(self, out: Path, rate: int, executable: str) -> None:
        self.out = out
        self.rate = rate
        self.windows: list[Window] = []
        self._executable = executable

    @contextlib.contextmanager
    def window(self, sandbox: Sandbox, label: str) -> Iterator[None]:
        """Sample the profiled services of ``sandbox`` while the block runs."""
        directory = self._directory(label)
        targets = {s.name: running(sandbox, s.name)[1] for s in sandbox.services
                   if s.name.startswith(PROFILED)}
        spies = {name: self._start(pid, directory, name) for name, pid in targets.items()}
        start = time.monotonic()
        try:
            yield
        finally:
            seconds = time.monotonic() - start
            for name, spy in spies.items():
                _stop(spy, name)
            self.windows.append(Window(directory.name, directory, seconds, tuple(targets)))

    def _directory(self, label: str) -> Path:
        """``out/<label>``, made; ``<label>-2``, ... when a window of that label ran."""
        taken = {w.directory.name for w in self.windows}
        name, n = label, 1
        while name in taken:
            n += 1
            name = f"{label}-{n}"
        path = self.out / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _start(self, pid: int, directory: Path, name: str) -> subprocess.Popen[bytes]:
        command = [self._executable, "record", "--pid", str(pid), "--format", "raw",
                   "--rate", str(self.rate), "--nonblocking",
                   "--output", str(directory / f"{name}.raw.txt")]
        with (directory / f"{name}.log").open("wb") as out:
            return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT)


def _stop(spy: subprocess.Popen[bytes], name: str) -> None:
    """SIGINT ``spy`` by its pid and wait for it to write its file; SIGKILL it if it has
    not ended within ``STOP_WAIT_S`` (its file is then missing)."""
    if spy.poll() is not None:
        log.warning("py-spy of %s ended early (status %s): see its .log", name, spy.returncode)
        return
    os.kill(spy.pid, signal.SIGINT)
    try:
        spy.wait(STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        log.warning("py-spy of %s still ran %.0f s after SIGINT; killed", name, STOP_WAIT_S)
        spy.kill()
        spy.wait()
