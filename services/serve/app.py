"""``headwater serve``: one process running the gateway, a coordinator, the projector and
the workers of the named queues, on one event loop.

Each part is the same code as its own service and the same consumer-group member: a
coordinator started apart (``python -m services.coordinator``) joins the coordinators'
group and takes partitions from this one; a worker started apart shares its queue; the
projection is kept by this process's projector, or by any projector in its group.

The coordinator is a faust app, and faust insists on owning the loop and the signals
(its worker runs the loop in the main thread); uvicorn and the workers do not, so they
run as tasks of the faust app (``seam.background``) on the same loop. One loop, one
interpreter: the imports (faust, aiokafka, FastAPI, the task modules) are paid once,
which is where the saving in memory comes from (docs/operating.md, "One process").

Stop: the first SIGTERM or SIGINT makes ``/ready`` answer 503, then the gateway drains
(``services.gateway.server``) and the workers drain (``services.worker.drain``) at
once, for up to ``STOP_PARTS_S``; then the coordinator stops as it does alone
(``faust_seam.CoordinatorWorker``: the batch in hand finished, committed, the group
left), and the projector with it. A second signal exits at once. A coordinator that
must restart (``shutdown.restart``) starts this whole command again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator

import uvicorn

from services.common.probes import PROBES
from services.coordinator.app import create_app as coordinator_app
from services.coordinator.faust_seam import app as seam
from services.coordinator.faust_seam.partition_db import ChangelogFacts
from services.coordinator.settings import Settings as CoordinatorSettings
from services.gateway.app import create_app as gateway_app
from services.gateway.server import CLOSE_GRACE_S, GatewayServer
from services.gateway.settings import Settings as GatewaySettings
from services.worker.app import Worker
from services.worker.settings import Settings as WorkerSettings

log = logging.getLogger("headwater.serve")

STOP_PARTS_S = 45.0
"""How long the gateway and the workers may take to drain before the coordinator stops,
seconds: above the workers' and the gateway's ``HEADWATER_DRAIN_S`` (30 s by default)
and the gateway's ``CLOSE_GRACE_S``."""


@dataclasses.dataclass(frozen=True)
class Parts:
    """What one ``headwater serve`` process runs.

    Attributes:
        coordinator: the coordinator's settings (its projection on: the projector runs
            inside it).
        gateway: the gateway's settings.
        workers: one worker's settings per queue served.
    """

    coordinator: CoordinatorSettings
    gateway: GatewaySettings
    workers: tuple[WorkerSettings, ...]


def parts_from_env(queues: list[str], tasks: list[str] | None,
                   concurrency: int | None) -> Parts:
    """Every part's settings from the ``HEADWATER_*`` variables, the projection on, and
    each worker named ``<worker id>-<queue>`` (the workers of one process announce
    themselves apart).

    Args:
        queues: the queues to serve (none: no worker; the same queue twice counts once).
        tasks: modules with ``@task`` functions the workers import (``HEADWATER_TASKS``
            when None).
        concurrency: attempts at once per worker (``HEADWATER_CONCURRENCY`` when None).

    Raises:
        ValueError: a bad setting (the message names it).
    """
    coordinator = dataclasses.replace(CoordinatorSettings.from_env(), projection=True)
    workers = []
    for queue in dict.fromkeys(queues):
        one = WorkerSettings.from_env(queue, tasks, concurrency)
        workers.append(dataclasses.replace(one, worker_id=f"{one.worker_id}-{queue}"))
    return Parts(coordinator, GatewaySettings.from_env(), tuple(workers))


class PartGateway(GatewayServer):
    """The gateway's server as a part of a process whose signals are the coordinator's:
    it installs no signal handler, and drains when :meth:`stop` is called."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """No handlers: faust's worker holds the process's signals."""
        yield

    def stop(self) -> None:
        """Drain, then shut down (as the first SIGTERM does to the gateway alone)."""
        self.handle_exit(signal.SIGTERM, None)


def create_app(parts: Parts, facts: ChangelogFacts | None = None) -> seam.FaustApp:
    """The coordinator's faust app with the gateway and the workers as its background
    tasks. Run it with ``app.main()`` (argv ``worker``), as the coordinator.

    Args:
        parts: what to run.
        facts: the table changelog's facts (``services.coordinator.app.prepare``).
    """
    app = coordinator_app(parts.coordinator, facts)
    gateway = gateway_app(parts.gateway)
    config = uvicorn.Config(gateway, host=parts.gateway.host, port=parts.gateway.port,
                            log_level="warning", access_log=False,
                            timeout_graceful_shutdown=CLOSE_GRACE_S)
    server = PartGateway(config, gateway.state.hw)
    runtime = gateway.state.hw
    # Every part registered now: /ready must not say "ready" while one has not started.
    PROBES.part("gateway", lambda: "" if runtime.ready else "not connected yet")
    PROBES.part("projector")
    for settings in parts.workers:
        PROBES.part(f"worker {settings.queue}")
    workers = [Worker(settings) for settings in parts.workers]
    running: list[asyncio.Task[None]] = []

    def part(run: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        async def tracked() -> None:
            task = asyncio.current_task()
            assert task is not None
            running.append(task)
            await run()
        return tracked

    seam.background(app, part(server.serve))
    for worker in workers:
        seam.background(app, part(worker.run))

    async def stop_parts() -> None:
        log.warning("stopping: the gateway and %d workers drain first (up to %.0f s)",
                    len(workers), STOP_PARTS_S)
        server.stop()
        for worker in workers:
            worker.stop()
        pending = [t for t in running if not t.done()]
        if pending:
            _, late = await asyncio.wait(pending, timeout=STOP_PARTS_S)
            if late:
                log.warning("%d parts still draining after %.0f s: stopped with the "
                            "coordinator", len(late), STOP_PARTS_S)

    seam.before_stop(app, stop_parts)
    return app
