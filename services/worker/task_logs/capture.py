"""Routing what task code logs and prints to its attempt's log.

``CURRENT`` names the attempt whose task code runs in this context: set around the call
of the task function (``services.worker.calls``), and carried into the pool threads that
run sync task code (``Attempt.in_thread`` submits in a copy of the context). A handler on
the root logger and proxies of ``sys.stdout`` and ``sys.stderr``, installed once at the
worker's start (:func:`install`), hand each record and each write made where ``CURRENT``
is set to that attempt's log, and let everything pass on unchanged: the worker's log and
its streams read as before. The worker's own loggers (``headwater.worker``, ``services``)
are never captured, and neither is a logging handler's write to a stream (that line was
captured as its record already).
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import Callable
from typing import Any, TextIO

from services.worker.task_logs.attempt_log import AttemptLog

CURRENT: contextvars.ContextVar[AttemptLog | None] = contextvars.ContextVar(
    "headwater_attempt_log", default=None)
"""The log of the attempt whose task code runs in this context (None: none)."""
WORKER_LOGGERS = ("headwater.worker", "services")
"""Loggers (and their children) whose records are the worker's, never an attempt's."""
_FORMATTER = logging.Formatter()


def _workers(name: str) -> bool:
    return any(name == own or name.startswith(own + ".") for own in WORKER_LOGGERS)


def record_text(record: logging.LogRecord) -> str:
    """A record's message (without ``ctx.log``'s ``[trace=... dispatch=...]`` prefix,
    which the attempt's log says already), then its traceback and stack, if any."""
    message = record.getMessage()
    prefix = getattr(record, "log_prefix", "")
    if prefix and message.startswith(prefix):
        message = message[len(prefix):]
    if record.exc_info:
        message += "\n" + _FORMATTER.formatException(record.exc_info)
    elif record.exc_text:
        message += "\n" + record.exc_text
    if record.stack_info:
        message += "\n" + _FORMATTER.formatStack(record.stack_info)
    return message


class AttemptLogHandler(logging.Handler):
    """Hands a record logged where ``CURRENT`` is set to that attempt's log."""

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record as a line of the current attempt's log, if any."""
        attempt_log = CURRENT.get()
        if attempt_log is None or _workers(record.name):
            return
        try:
            attempt_log.add(record.levelname, "log", record.name, record_text(record),
                            int(record.created * 1000))
        except Exception:
            self.handleError(record)


class StreamProxy:
    """Stands for ``sys.stdout`` or ``sys.stderr``: writes go to the original stream, and
    also to the current attempt's log when ``CURRENT`` is set.

    Args:
        original: the stream it stands for.
        name: ``stdout`` or ``stderr``.
    """

    def __init__(self, original: TextIO, name: str) -> None:
        self.original = original
        self.name = name

    def write(self, text: str) -> int:
        """Write ``text`` to the original stream (and keep it in the attempt's log)."""
        attempt_log = CURRENT.get()
        if attempt_log is not None and isinstance(text, str) and not _from_logging():
            attempt_log.write(self.name, text)
        return self.original.write(text)

    def writelines(self, lines: Any) -> None:
        """Write each of ``lines``."""
        for line in lines:
            self.write(line)

    def close(self) -> None:
        """Nothing: the stream is the worker's, which every later attempt and the worker
        itself write to (task code that closes ``sys.stdout`` closes nothing)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.original, name)


def _from_logging() -> bool:
    """Whether the write comes from a ``logging`` handler (two frames up: the proxy's
    ``write``, then its caller): its record was captured by ``AttemptLogHandler``."""
    caller = sys._getframe(2)
    return str(caller.f_globals.get("__name__", "")).startswith("logging")


def install() -> Callable[[], None]:
    """Install the root logger's handler and the stream proxies (the worker's start).

    Returns:
        What takes them out again.
    """
    handler = AttemptLogHandler()
    root = logging.getLogger()
    root.addHandler(handler)
    proxies: dict[str, tuple[TextIO, StreamProxy]] = {}
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, StreamProxy):
            proxy = StreamProxy(stream, name)
            proxies[name] = (stream, proxy)
            setattr(sys, name, proxy)

    def uninstall() -> None:
        root.removeHandler(handler)
        for name, (stream, proxy) in proxies.items():
            if getattr(sys, name) is proxy:
                setattr(sys, name, stream)

    return uninstall
