"""Tasks of ``test_selectors``, on a queue no other test uses (only that test starts
its workers)."""

from __future__ import annotations

from headwater import task


@task(name="sel.work", queue="sel-q")
def work(n: int) -> int:
    """Return ``n`` doubled."""
    return 2 * n
