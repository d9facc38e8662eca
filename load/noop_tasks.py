"""The benchmarks' only task: it does nothing, so what is measured is Headwater itself."""

from __future__ import annotations

from typing import Any

from headwater import task


@task(name="bench.noop", queue="cpu")
async def noop(**kwargs: Any) -> None:
    """Return at once; accepts (and ignores) any input keywords."""
    return None
