"""Which ``@workflow``s a worker announces, and with which code version.

A worker serves the activations of every ``@workflow`` of its queue that its task
modules registered (``headwater.workflows.decorator.WORKFLOWS``; the activation is a
task under the workflow's name). It names each in its announcements
(``headwater.announcement.AnnouncedWorkflow``): the spec document of a run
(``WorkflowInfo.spec()``), the input schema, the HTTP path and a code version, which
the gateway turns into the workflow's definition
(``services/gateway/definitions/announced.py``).

The code version is ``HEADWATER_CODE_VERSION`` when the worker names one (a release
tag, a git commit), else a digest of the function's source: a change to the function's
body makes a new definition version, a worker restarted on the same code does not.
A child that a run starts by ``wf.call`` of a ``@workflow`` records the version this
rule gives (``pin_children``): its activations travel in the lane of the code that
called it, as the parent's do (``headwater.topics.Topics.lane``).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import Any

from headwater.announcement import AnnouncedWorkflow
from headwater.core.kinds.code.records import MAX_CODE_VERSION_CHARS
from headwater.workflows import activation
from headwater.workflows.decorator import WORKFLOWS, WorkflowInfo

SOURCE_DIGEST_CHARS = 16
"""Hex digits of the SHA-256 of a function's source kept as its code version."""


@functools.cache
def source_version(fn: Callable[..., Any]) -> str:
    """A digest of ``fn``'s source (SHA-256, ``SOURCE_DIGEST_CHARS`` hex digits), or of
    its module and name when the source cannot be read (a frozen or generated
    function). Kept per function: a child step asks it at each ``wf.call``, and a
    module's source does not change under a running process."""
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        text = f"{fn.__module__}.{fn.__qualname__}"
    return hashlib.sha256(text.encode()).hexdigest()[:SOURCE_DIGEST_CHARS]


def announced(info: WorkflowInfo, code_version: str | None = None) -> AnnouncedWorkflow:
    """What a worker says of one workflow it serves.

    Args:
        info: the ``@workflow``.
        code_version: the worker's ``HEADWATER_CODE_VERSION`` (None: the source's
            digest, ``source_version``).
    """
    return AnnouncedWorkflow(info.name, info.spec(), info.input_schema, info.path,
                             version_of(info, code_version))


def version_of(info: WorkflowInfo, code_version: str | None = None) -> str:
    """The code version a worker names for ``info``: ``code_version`` (its
    ``HEADWATER_CODE_VERSION``) or the source's digest, cut to what a spec takes."""
    return (code_version or source_version(info.fn))[:MAX_CODE_VERSION_CHARS]


def pin_children(code_version: str | None = None) -> None:
    """Have the children this process's runs start by ``wf.call`` of a ``@workflow``
    record the code version it announces for that workflow (``version_of``;
    ``headwater.workflows.activation.CODE_VERSION``). A child on another queue records
    it too: its workers, deployed from the same code, announce the same (else a worker
    of its workflow adopts the lane, ``services.worker.lanes``).

    Args:
        code_version: the worker's ``HEADWATER_CODE_VERSION``, or None.
    """
    activation.CODE_VERSION[:] = [functools.partial(version_of, code_version=code_version)]


def served_workflows(queue: str, code_version: str | None = None,
                     ) -> tuple[AnnouncedWorkflow, ...]:
    """The ``@workflow``s whose activations a worker of ``queue`` runs, by name.

    Args:
        queue: the worker's queue.
        code_version: the worker's ``HEADWATER_CODE_VERSION``, or None.
    """
    return tuple(announced(info, code_version)
                 for name, info in sorted(WORKFLOWS.items()) if info.queue == queue)
