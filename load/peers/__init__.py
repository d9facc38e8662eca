"""Headwater beside the peers people would pick instead (``python -m load.peers``).

The same workloads as ``load.bench`` (B2's chains, B3's hops, B4's maps, B5's sequential
submissions) run on Celery with Redis and on DBOS with PostgreSQL, each peer in its own
virtual environment (``venvs``) and driven by a script that runs inside it
(``celery_redis``, ``dbos_pg``). Those scripts import only the standard library, their
peer, ``load.stats`` and ``load.peers.shapes``: nothing here imports ``headwater`` at
module level, so a bare venv can run them from the repository's root.
"""
