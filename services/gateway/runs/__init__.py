"""Workflow runs over HTTP: submit, run a definition by name (run modes), read one run
or a page of them, and follow a run's events (SSE)."""
