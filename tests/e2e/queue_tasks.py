"""Tasks of ``test_queues``, on queues no other test uses (only that test starts their
workers)."""

from __future__ import annotations

from headwater import task


@task(name="qt.embed", queue="qt-gpu")
def embed(text: str) -> dict[str, int]:
    """Return the length of ``text``."""
    return {"length": len(text)}


@task(name="qt.fetch", queue="qt-io")
def fetch(url: str) -> str:
    """Return ``url``."""
    return url
