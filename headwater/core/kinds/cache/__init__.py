"""The ``cache`` node kind: the one node of a cache, the run that keeps one task's result
for one key of one tenant (``headwater.core.caching``).

A cache is not submitted: the first ``CacheLookedUp`` for its id creates it
(``WorkflowAccepted`` with ``CACHE_SPEC``), and it never ends. Its node's state
(``NodeState.cache``) holds the entry (the output, its source, when it expires, what
computing it cost), the attempt computing the key and those waiting for it in order,
and its counts. A lookup is answered a hit, a miss (the attempt computes), or waits
(single flight); the computing attempt's release stores its output and answers the
waiters, or lets the next one compute. Its timer ``cache:expire`` drops the entry when
its ttl passes. Lookups and releases are idempotent by holder id (an attempt's dispatch
id): a copy changes nothing. docs/architecture.md §4o.
"""
