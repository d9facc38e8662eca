"""Child runs started by task code (``TaskContext.call`` and kin), through the client.

Each child is a run of a stored definition submitted by ``POST /v1/workflows`` with an
id derived from the task and the call's place in it, not from the attempt:
``<workflow_id>:<node>[.<index>]:call.<n>`` (``n`` counts the calls of the attempt from
0, ``call_parallel`` taking one number per child, in order). A retried attempt (after
a failure, or a worker killed mid-way) that makes the same calls in the same order
names the same children: the gateway answers their ids with the runs it has (200), so
none is started twice, and results already there are returned at once. Task code must
therefore make its calls in a deterministic order with the same inputs (another input
for an id taken answers 409, raised as ``Conflict``).

A child runs as its parent's tenant: the parent's run document is read once per attempt
for it (``GET /v1/workflows/{id}``; with auth on the worker's token, one for every
tenant or the parent's own, may read it).

Each submission names the calling attempt (``parent``): the child is linked to the
caller's workflow (both documents show the link) and is cancelled when that workflow
ends, whether it fails, is cancelled or passes its deadline (``headwater/core/calls.py``).
The first attempt's link stands: a retry's submission of the same id is the same run.

A child that fails or is cancelled raises ``CallFailed`` (not retried: another attempt
would find the same ended child); a child the gateway refuses for good (an unknown
definition 404, a deleted one 410, an input or name it does not take 422) raises
``CallRefused`` (not retried either: another attempt would be refused the same way).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from headwater.client.aio import AsyncClient
from headwater.client.sync import Client
from headwater.errors import (
    CallFailed,
    CallRefused,
    Gone,
    HeadwaterHTTPError,
    NotFound,
    ResultTimeout,
    Unprocessable,
    WorkflowCancelled,
    WorkflowFailed,
)

MAX_ID_CHARS = 200
"""The longest workflow id (``headwater.topics.WORKFLOW_ID_PATTERN``)."""
POLL_S = 2.0
"""How long a blocking call waits for a child before checking whether its attempt must
stop, seconds."""
Invocation = tuple[str, Any]
"""``(definition, input)``: one child run (``name`` or ``name@3``, and its input)."""


_UNKNOWN = object()
"""The parent's tenant before it is read."""
REFUSED = (NotFound, Gone, Unprocessable)
"""The gateway's answers to a child run that no later attempt can change: 404, 410, 422."""


def _refused(definition: str, error: HeadwaterHTTPError) -> CallRefused:
    return CallRefused(definition, error.status, error.detail or error.title)


def child_id(workflow_id: str, node: str, index: int | None, n: int) -> str:
    """The id of an attempt's ``n``-th child run: ``<workflow_id>:<node>[.<index>]:call.<n>``,
    or ``call-<sha256 hex, 40 chars>`` of that when it would be over ``MAX_ID_CHARS``."""
    task = node if index is None else f"{node}.{index}"
    full = f"{workflow_id}:{task}:call.{n}"
    if len(full) <= MAX_ID_CHARS:
        return full
    return "call-" + hashlib.sha256(full.encode()).hexdigest()[:40]


def _failed(workflow_id: str, error: WorkflowFailed | WorkflowCancelled) -> CallFailed:
    if isinstance(error, WorkflowFailed):
        return CallFailed(workflow_id, "failed", error.error)
    return CallFailed(workflow_id, "cancelled", error.reason)


class Calls:
    """The child runs of one attempt.

    Args:
        workflow_id: the attempt's workflow.
        node: its node.
        index: its map index, or None.
        gateway_url: the gateway to submit to (the worker's ``HEADWATER_GATEWAY_URL``);
            the clients send the worker's ``HEADWATER_TOKEN`` (their default), which a
            gateway with auth on needs.
        check: raises ``AttemptCancelled`` once the attempt must stop (blocking waits
            call it every ``POLL_S``).
        attempt: the attempt's number: each child's submission names the attempt as
            its parent (``parent``), so the child is linked to the caller's workflow and
            cancelled when it ends; None submits unlinked runs.
    """

    def __init__(self, workflow_id: str, node: str, index: int | None, gateway_url: str,
                 check: Callable[[], None], attempt: int | None = None) -> None:
        self._task = (workflow_id, node, index)
        self._parent = None if attempt is None else {
            "workflow_id": workflow_id, "node": node, "index": index, "attempt": attempt}
        self.gateway_url = gateway_url
        self._check = check
        self._next = 0
        self._tenant: object | str | None = _UNKNOWN

    @property
    def _inherited(self) -> str | None:
        """The parent run's tenant, which its children run as (read once per attempt)."""
        return self._tenant if isinstance(self._tenant, str) else None

    def _ids(self, count: int) -> list[str]:
        first, self._next = self._next, self._next + count
        return [child_id(*self._task, n) for n in range(first, first + count)]

    def run(self, invocations: Sequence[Invocation]) -> list[Any]:
        """Submit every child, then wait for each; blocking (for sync task code).

        Returns:
            Their outputs, in the order given.

        Raises:
            RuntimeError: called on a running event loop (it would block it).
            CallFailed: a child failed or was cancelled (the first in order).
            CallRefused: the gateway refused a child for good (404, 410, 422).
            AttemptCancelled: the attempt must stop.
            HeadwaterHTTPError: another refusal (an id taken by another input 409,
                a queue full 429 ...).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("ctx.call and ctx.call_parallel block; from async task "
                               "code use await ctx.acall(...) / ctx.acall_parallel(...)")
        ids = self._ids(len(invocations))
        with Client(self.gateway_url) as client:
            if self._tenant is _UNKNOWN:
                self._tenant = client.get(self._task[0]).tenant
            for workflow_id, (definition, workflow_input) in zip(ids, invocations,
                                                                 strict=True):
                self._check()
                try:
                    client.submit(definition=definition, input=workflow_input,
                                  id=workflow_id, tenant=self._inherited,
                                  parent=self._parent)
                except REFUSED as e:
                    raise _refused(definition, e) from e
            return [self._wait(client, workflow_id) for workflow_id in ids]

    def _wait(self, client: Client, workflow_id: str) -> Any:
        while True:
            self._check()
            try:
                return client.result(workflow_id, timeout=POLL_S)
            except ResultTimeout:
                continue
            except (WorkflowFailed, WorkflowCancelled) as e:
                raise _failed(workflow_id, e) from e

    async def arun(self, invocations: Sequence[Invocation]) -> list[Any]:
        """``run`` for async task code: the children are awaited together (a cancel of
        the attempt cancels the wait).

        Returns:
            Their outputs, in the order given.

        Raises:
            CallFailed, CallRefused, HeadwaterHTTPError: as ``run``.
        """
        ids = self._ids(len(invocations))
        async with AsyncClient(self.gateway_url) as client:
            if self._tenant is _UNKNOWN:
                self._tenant = (await client.get(self._task[0])).tenant
            for workflow_id, (definition, workflow_input) in zip(ids, invocations,
                                                                 strict=True):
                try:
                    await client.submit(definition=definition, input=workflow_input,
                                        id=workflow_id, tenant=self._inherited,
                                        parent=self._parent)
                except REFUSED as e:
                    raise _refused(definition, e) from e
            outcomes = await asyncio.gather(*(client.result(i) for i in ids),
                                            return_exceptions=True)
        results = []
        for workflow_id, value in zip(ids, outcomes, strict=True):
            if isinstance(value, (WorkflowFailed, WorkflowCancelled)):
                raise _failed(workflow_id, value) from value
            if isinstance(value, BaseException):
                raise value
            results.append(value)
        return results
