"""Values held by reference, put back by the client, without I/O.

A run's document shows each value over the gateway's threshold as a reference
``{"$blob": "sha256:...", "bytes": N, "href": "/v1/workflows/{id}/blobs/{digest}"}``
(``headwater/blobs.py``). Where ``Client`` and ``AsyncClient`` hand back a run's input
or output (``get``, ``result``, a waiting ``run``) or a task's (``task``), they fetch
each blob (streamed, ``BlobFetch``) and put the value back, following the references
inside blobs (a blob's own large parts) and walking the ``path`` of a reference to a
part of one, unless made with ``resolve_blobs=False``: then the references stay,
``href`` and all. A blob's bytes are checked against its digest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import orjson

from headwater import blobs, errors
from headwater.client.http import Call, segment
from headwater.client.tasks import Task
from headwater.client.types import Run, Workflow

__all__ = ["BlobFetch", "blob_call", "resolved_run", "resolved_task", "resolved_workflow"]


def blob_call(workflow_id: str, digest: str, href: str | None = None) -> Call:
    """The request that streams blob ``digest`` of run ``workflow_id``: its ``href`` as
    the gateway gave it, else the path built (a reference inside a blob has none)."""
    path = href if isinstance(href, str) and href.startswith("/v1/") else \
        f"/v1/workflows/{segment(workflow_id)}/blobs/{digest}"
    return Call("GET", path, headers={"Accept": "application/json"})


class BlobFetch:
    """The blobs one value needs, fetched one after another: ``calls`` yields the
    request of each blob not fetched yet (those found inside a fetched one too), the
    caller hands its bytes to ``take``, and ``value`` puts them back.

    Args:
        workflow_id: the run whose document holds the value.
        value: the value, with references.
    """

    def __init__(self, workflow_id: str, value: Any) -> None:
        self.workflow_id = workflow_id
        self._value = value
        self._fetched: dict[str, bytes] = {}
        self._todo: dict[str, str | None] = {}
        self._want(value)

    def _want(self, value: Any) -> None:
        for ref in blobs.refs_in(value):
            digest = ref[blobs.REF_KEY]
            if digest not in self._fetched and digest not in self._todo:
                self._todo[digest] = ref.get("href")

    def calls(self) -> Iterator[tuple[str, Call]]:
        """Each blob still to fetch: its digest and its request."""
        while self._todo:
            digest, href = next(iter(self._todo.items()))
            yield digest, blob_call(self.workflow_id, digest, href)
            self._todo.pop(digest, None)

    def take(self, digest: str, data: bytes) -> None:
        """A fetched blob's bytes.

        Raises:
            UnexpectedAnswer: they are not the blob ``digest`` names (another digest).
        """
        if blobs.digest_of(data) != digest:
            raise errors.UnexpectedAnswer("GET", blob_call(self.workflow_id, digest).path,
                                          200, "the bytes do not have the blob's digest")
        self._fetched[digest] = data
        self._todo.pop(digest, None)
        if blobs.REF_KEY.encode() in data:
            self._want(orjson.loads(data))

    def value(self) -> Any:
        """The value with every reference replaced by what it names (for a reference
        with a ``path``, the part of the blob's value there).

        Raises:
            blobs.BlobPathError: a reference's path is not in its blob's value.
        """
        return blobs.resolve(self._value, self._fetched)


def has_refs(value: Any) -> bool:
    """Whether ``value`` holds a reference."""
    return next(blobs.refs_in(value), None) is not None


def resolved_workflow(workflow: Workflow, input: Any, output: Any) -> Workflow:
    """``workflow`` with its ``input`` and ``output`` put back (``raw`` stays the
    document as the gateway sent it)."""
    return dataclasses.replace(workflow, input=input, output=output)


def resolved_task(task: Task, input: Any, output: Any) -> Task:
    """``task`` with its ``input`` and ``output`` put back (``raw`` stays the answer
    as the gateway sent it)."""
    return dataclasses.replace(task, input=input, output=output)


def resolved_run(run: Run, workflow: Workflow | None) -> Run:
    """``run`` with its document's values put back."""
    return dataclasses.replace(run, workflow=workflow)
