"""Reruns and resets of an ended run (``POST /v1/workflows/{id}/rerun`` and ``/reset``):
a new run, under a new id, of the source's spec, that takes the outputs of what
succeeded from the source's history instead of running it again
(``headwater/core/reuse.py``). ``plan.py`` reads the source's history and decides what the
new run reuses; ``api.py`` holds the routes, which submit through ``runs/submit.py``."""
