"""The ``code`` node kind: a ``@workflow`` function, run durably.

A code workflow's spec has one ``code`` node, whose ``task`` is the function's name. Its
tasks alternate: index ``2k`` is activation k, in which a worker runs the function
(from its start over the journal, or on from where its cached instance stopped) until it
waits on steps it has not got results for; the activation's output is its decision, the
steps it issued since the last (``journal.py``), or its end (``finish``: the node's
output; ``fail``: its error). Step s is index ``2s + 1``: a task (dispatched as any
attempt, with the retry policy, timeout and heartbeat timeout the function gave it), a
child workflow (as a ``workflow`` node's attempt), a sleep or a signal wait (tasks of the
coordinator's own, ended by their timer or their signal). Each result waits in the
journal for the next activation, which is dispatched once the one in flight has
decided. Every decision is history before it takes effect, and every activation's
input is fixed by history, so a function that decides the same way on the same results
replays exactly; one that does not is caught by the worker (``NondeterminismError``,
retried until code that decides as the history did is deployed).

An activation's retry policy is the node's (the ``@workflow`` decorator gives one that
retries for as long as a run may take). A run fails when its function raises, when an
activation fails for good, when it outgrows ``max_events`` (``HistoryTooLong``), or when
the function waits on nothing the coordinator can end (``WorkflowBlocked``).
"""
