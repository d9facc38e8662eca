"""Fault injection: run a batch of workflows on a private deployment while processes are
killed at chosen points (``services.common.faults``) or from outside, while
coordinators and workers are scaled up and down, and while the broker or PostgreSQL is
lost under it; restart what dies; check the invariants of docs/architecture.md §3 on
the topics and compare every workflow's outcome with a fault-free run of the same batch.

Modules: ``batch`` (the workflows), ``supervisor`` (restarts, causes of death),
``killer`` (SIGKILL a worker mid-attempt), ``large_table`` (the coordinator SIGKILLed
with a large table and its local store lost), ``recovery`` (how long a restarted
coordinator took: its group formed again, its first history record), ``rebalance``
(scaling script), ``infra`` (a private broker and database), ``outage`` (the broker
SIGKILLed or SIGSTOPped, PostgreSQL stopped, and the gateway probed meanwhile),
``scripts`` (what runs beside a batch), ``client`` (HTTP submission with retries, the
projection's view), ``topics`` (reading topics whole), ``audit`` (the checks), ``run``
(one run), ``suite`` (the quick and full suites), ``summary`` (the JSON summary).
``python -m faultsuite`` is the command line; ``tests/faults`` runs the quick suite under
pytest.
"""
