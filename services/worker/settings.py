"""Worker settings, from ``HEADWATER_*`` variables and the command line."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from services.common.settings import CommonSettings, env_int, env_str


@dataclass(frozen=True)
class Settings(CommonSettings):
    """Worker settings.

    Attributes:
        queue: the queue (worker pool) served (``HEADWATER_QUEUE``, ``--queue``).
        task_modules: modules to import so that their ``@task`` functions register
            (``HEADWATER_TASKS``, comma-separated; ``--tasks``).
        concurrency: attempts run at once (``HEADWATER_CONCURRENCY``).
        worker_id: this process's name in reports (``HEADWATER_WORKER_ID``).
    """

    queue: str = "cpu"
    task_modules: tuple[str, ...] = ()
    concurrency: int = 8
    worker_id: str = ""

    @classmethod
    def from_env(cls, queue: str | None = None, tasks: list[str] | None = None,
                 concurrency: int | None = None) -> Settings:
        """Read the environment; explicit arguments (from the command line) win."""
        modules = tasks or [m for m in env_str("TASKS", "").split(",") if m]
        return cls(
            **cls.common_from_env(),  # type: ignore[arg-type]
            queue=queue or env_str("QUEUE", "cpu"),
            task_modules=tuple(modules),
            concurrency=concurrency or env_int("CONCURRENCY", 8),
            worker_id=env_str("WORKER_ID", f"{socket.gethostname()}-{os.getpid()}"),
        )
