"""A benchmark's measured window: the part of a run whose figures it reports, after its
deployment was made ready and warmed up, before it is stopped.

B2 and B3 enter ``measured`` around the load they time. By default nothing else happens;
inside ``watching`` each watch given is entered around every window, with the window's
deployment and a label naming it (``load.profile`` samples the deployment's processes
with py-spy there, so that warm-up and teardown stay out of its profiles).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from ops.sandbox import Sandbox

Watch = Callable[[Sandbox, str], AbstractContextManager[None]]
"""Entered around every measured window: ``watch(sandbox, label)``."""
_WATCHES: list[Watch] = []


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[None]:
    """Enter ``watch`` around every measured window while the block runs."""
    _WATCHES.append(watch)
    try:
        yield
    finally:
        _WATCHES.remove(watch)


@contextlib.contextmanager
def measured(sandbox: Sandbox, label: str) -> Iterator[None]:
    """The measured window of a benchmark run: every watch now given (``watching``) is
    entered around it, in the order given, and left in the reverse order.

    Args:
        sandbox: the deployment the window's load runs on, ready.
        label: names the window, unique within a benchmark (``B2-1-coordinator``,
            ``B3-loaded``), usable as a file name.
    """
    with contextlib.ExitStack() as stack:
        for watch in list(_WATCHES):
            stack.enter_context(watch(sandbox, label))
        yield
