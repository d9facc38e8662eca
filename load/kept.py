"""Deployments kept from one benchmark to the next, for ``--quick`` (the CI smoke test).

Starting a private deployment (a database, a topic prefix, four or five processes made
ready) and stopping it again costs seconds, several times what a benchmark's quick sizes
measure; a quick run that started one per benchmark phase spent most of its time doing
that. Inside ``sharing`` a deployment that ends without an error is kept, idle, rather
than stopped, and the next ``load.deploy.deployment`` asked for the same settings (workers,
concurrency, coordinators, extra environment) gets it again: the benchmark still makes
it ready, and still runs through it everything it would run through a fresh one.

A kept deployment is given out again only as it was started: one whose processes were
added to (B8's workers, B9's second coordinator) or one of whose processes is gone is
stopped instead. At most ``keep`` deployments run at once (the idle ones, least recently
used first, are stopped to make room), and one asked for ``fresh`` (B9, whose figures are
its whole table's) starts with no other deployment running. The full run (``make bench``)
does not share: every benchmark phase gets a fresh deployment.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ops import localstack
from ops.sandbox import Sandbox, home_kept, set_home, stop_sandbox

Key = tuple[int, int, int, tuple[tuple[str, str], ...]]
"""A deployment's settings: workers, concurrency, coordinators, extra environment."""
log = logging.getLogger("load.kept")


def key_of(workers: int, concurrency: int, coordinators: int,
           env: Mapping[str, str] | None) -> Key:
    """The settings a deployment is started with, as a key to find a kept one by."""
    return workers, concurrency, coordinators, tuple(sorted((env or {}).items()))


def services_of(sandbox: Sandbox) -> tuple[str, ...]:
    """The names of a sandbox's processes, to tell later whether any were added."""
    return tuple(s.name for s in sandbox.services)


def all_running(sandbox: Sandbox) -> bool:
    """Whether every process of ``sandbox`` is alive (its pid file names a live process)."""
    with home_kept():
        set_home(str(sandbox.home))  # pid files are read under the sandbox's own home
        return all(localstack.read_pid(s.pid_file) is not None for s in sandbox.services)


def discard(sandbox: Sandbox) -> None:
    """Stop a deployment's processes, drop its database and topics, delete its home."""
    stop_sandbox(sandbox)
    shutil.rmtree(sandbox.home, ignore_errors=True)


@dataclass
class _Idle:
    """A kept deployment and what it was when started."""

    key: Key
    sandbox: Sandbox
    services: tuple[str, ...]


class Pool:
    """The idle deployments of a ``sharing`` block, least recently used first.

    Attributes:
        keep: the most deployments running at once (the one in use included), at least 1.
        idle: the kept deployments, oldest first.
    """

    def __init__(self, keep: int, running: Callable[[Sandbox], bool] = all_running,
                 stop: Callable[[Sandbox], None] = discard) -> None:
        self.keep = max(keep, 1)
        self.idle: list[_Idle] = []
        self._running = running
        self._stop = stop

    def take(self, key: Key) -> Sandbox | None:
        """The kept deployment started with ``key``, no longer idle, or None (start one:
        call ``make_room`` first). ``HEADWATER_HOME`` is pointed at it, as starting it
        did, so that its processes' pid files are found."""
        for i, kept in enumerate(self.idle):
            if kept.key == key:
                del self.idle[i]
                set_home(str(kept.sandbox.home))
                return kept.sandbox
        return None

    def make_room(self, fresh: bool = False) -> None:
        """Stop idle deployments, oldest first, until one more may start: with ``fresh``,
        all of them."""
        while self.idle and (fresh or len(self.idle) >= self.keep):
            self._stop(self.idle.pop(0).sandbox)

    def give_back(self, key: Key, sandbox: Sandbox, started_as: tuple[str, ...]) -> bool:
        """Keep ``sandbox``, idle, for the next benchmark that asks for ``key``.

        Args:
            key: the settings it was started with.
            sandbox: the deployment, done with.
            started_as: ``services_of`` it when it was handed out.

        Returns:
            True if it was kept; False if processes were added to it or one is gone
            (the caller stops it).
        """
        if services_of(sandbox) != started_as or not self._running(sandbox):
            return False
        self.idle.append(_Idle(key, sandbox, started_as))
        while len(self.idle) > self.keep:
            self._stop(self.idle.pop(0).sandbox)
        return True

    def close(self) -> None:
        """Stop every idle deployment."""
        self.make_room(fresh=True)


_POOL: list[Pool] = []


def pool() -> Pool | None:
    """The pool of the ``sharing`` block running now, or None (no sharing)."""
    return _POOL[-1] if _POOL else None


@contextlib.contextmanager
def sharing(keep: int) -> Iterator[Pool]:
    """Keep deployments between benchmarks while the block runs; stop the kept ones at
    its end.

    Args:
        keep: the most deployments running at once (see ``Pool``).
    """
    shared = Pool(keep)
    _POOL.append(shared)
    try:
        yield shared
    finally:
        _POOL.pop()
        shared.close()
