"""How long each service's graceful stop may take after SIGTERM, from the code's own
constants and the settings a deployment gives it: what a stop timeout
(``terminationGracePeriodSeconds``, compose's ``stop_grace_period``) must exceed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deploy_settings import environment

MARGIN_S = 5.0
"""What a stop timeout adds to a service's longest graceful stop, seconds: closing the
Kafka and PostgreSQL clients, faust's own stop (about a second,
``faust_seam.CoordinatorWorker``), the process's exit."""


def gateway_stop_s() -> float:
    """The drain window (``HEADWATER_DRAIN_S``), then uvicorn's ``CLOSE_GRACE_S``
    (``services/gateway/server.py``); ``HEADWATER_SHUTDOWN_DELAY`` is within the window."""
    from services.gateway.server import CLOSE_GRACE_S
    from services.gateway.settings import Settings

    settings = Settings.from_env()
    return max(settings.drain_s, settings.shutdown_delay_s) + CLOSE_GRACE_S


def worker_stop_s(argv: Sequence[str]) -> float:
    """The drain window (``HEADWATER_DRAIN_S``, ``services/worker/drain.py``), then for
    the attempts still running a cancel and a ``WorkerStopped`` report, ``STOP_GRACE_S``
    each (``services/worker/lifecycle.py``)."""
    from ops import localstack
    from services.worker.lifecycle import STOP_GRACE_S
    from services.worker.settings import Settings

    queue, tasks = localstack.worker_of(["python", *argv[1:]]) or ("", [])
    settings = Settings.from_env(queue or None, tasks or None)
    return settings.drain_s + 2 * STOP_GRACE_S


def coordinator_stop_s() -> float:
    """The batch in hand (``BATCH_GRACE_S``), leaving the group (``LEAVE_TIMEOUT_S``),
    and with ``HEADWATER_PROJECTION`` on the in-process projector's batch too."""
    from services.coordinator.app import BATCH_GRACE_S
    from services.coordinator.faust_seam.app import LEAVE_TIMEOUT_S
    from services.coordinator.settings import Settings
    from services.projector.writer import STOP_GRACE_S

    projection = STOP_GRACE_S if Settings.from_env().projection else 0.0
    return BATCH_GRACE_S + LEAVE_TIMEOUT_S + projection


def projector_stop_s() -> float:
    """The batch in hand, projected and committed (``STOP_GRACE_S``,
    ``services/projector/writer.py``)."""
    from services.projector.writer import STOP_GRACE_S

    return STOP_GRACE_S


def serve_stop_s(argv: Sequence[str]) -> float:
    """``headwater serve``: the gateway and the workers drain at once, for up to
    ``STOP_PARTS_S`` (``services/serve/app.py``), then the coordinator stops with its
    projector inside."""
    from services.coordinator.app import BATCH_GRACE_S
    from services.coordinator.faust_seam.app import LEAVE_TIMEOUT_S
    from services.projector.writer import STOP_GRACE_S
    from services.serve.app import STOP_PARTS_S

    parts = [gateway_stop_s()]
    if "--queue" in argv:
        parts.append(worker_stop_s(["python", "-m", "services.worker", *argv[3:]]))
    return min(max(parts), STOP_PARTS_S) + BATCH_GRACE_S + LEAVE_TIMEOUT_S + STOP_GRACE_S


def longest_stop_s(argv: Sequence[str], env: Mapping[str, str]) -> float:
    """The longest graceful stop of the service ``argv`` runs (``python -m services.X
    ...``) with the ``HEADWATER_*`` settings ``env``, seconds.

    Raises:
        ValueError: ``argv`` runs no Headwater service.
    """
    module = argv[2] if len(argv) > 2 else ""
    with environment(env):
        if module == "services.gateway":
            return gateway_stop_s()
        if module == "services.worker":
            return worker_stop_s(argv)
        if module == "services.coordinator":
            return coordinator_stop_s()
        if module == "services.projector":
            return projector_stop_s()
        if module == "services.serve":
            return serve_stop_s(argv)
    raise ValueError(f"{list(argv)} runs no Headwater service")
