"""``headwater serve --queue cpu --tasks MODULE``: the gateway, a coordinator, the
projector and the workers of the named queues in one process (``services.serve``), the
small deployment's one container beside Kafka and PostgreSQL. Settings are the
services' ``HEADWATER_*`` variables (docs/settings.md); the probes are on
``HEADWATER_METRICS_PORT`` (9180), the API on ``HEADWATER_GATEWAY_PORT`` (8080)."""

from __future__ import annotations

from typing import Annotated

import typer


def serve(
    queue: Annotated[list[str] | None, typer.Option(
        "--queue", "-q", help="a queue whose worker runs here (repeatable; none: no "
                              "worker)")] = None,
    tasks: Annotated[list[str] | None, typer.Option(
        "--tasks", help="module with @task functions the workers import (repeatable; "
                        "default: HEADWATER_TASKS)")] = None,
    concurrency: Annotated[int | None, typer.Option(
        min=1, help="attempts at once per worker (default: HEADWATER_CONCURRENCY)")] = None,
) -> None:
    """Run the gateway, a coordinator, the projector and the workers of the named queues
    in one process, until SIGTERM or Ctrl-C."""
    import os
    import sys

    from services.serve.__main__ import main

    if os.getcwd() not in sys.path:  # a --tasks module beside the caller, as python -m finds it
        sys.path.insert(0, os.getcwd())
    argv = [arg for q in queue or () for arg in ("--queue", q)]
    argv += [arg for t in tasks or () for arg in ("--tasks", t)]
    if concurrency is not None:
        argv += ["--concurrency", str(concurrency)]
    main(argv)
