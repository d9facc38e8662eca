"""The ``limiter`` node kind: the one node of a limiter, the run that keeps one key of a
``concurrency`` or ``rate_limit`` (``headwater.core.limits``).

A limiter is not submitted: the first ``PermitRequested`` for its id creates it
(``WorkflowAccepted`` with ``LIMITER_SPEC``), and it never ends. Its node's state
(``NodeState.limiter``) holds only what is live: the limit, the holders (holder id ->
units), the requests waiting in the order they came, and for a rate limit the grants of
the current window. It grants in order: a concurrency permit while fewer than ``limit``
hold one, a rate permit while the units granted in the last ``window`` leave room (else
its timer ``limit:window`` fires when they will). A release frees a holder's permit or
drops its waiting request. At most ``MAX_QUEUED`` requests wait: one more is refused
(``PermitRefused``), and its attempt fails, retryable, to ask again later. Requests
and releases are idempotent by holder id (an attempt's dispatch id): a copy changes
nothing. docs/architecture.md §4n.
"""
