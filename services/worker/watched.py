"""Topics a worker reads once they exist: a set of names known from the start, of which
the broker lists some.

A worker's selector topics (``selectors``) and its queue's priority topics
(``Topics.priority``) are created by the coordinator on their first dispatch; the worker
knows every name it may read and finds which exist from the topic list it looks at
every ``lanes_s`` seconds (``listing``), as it finds lanes, so that its consumer is
subscribed again only when the set changed (a subscription change rebalances the
group). The first dispatch to a new topic waits up to ``lanes_s``, and a rebalance,
before a worker takes it; it is not lost meanwhile (a new topic is read from its
start, ``auto.offset.reset=earliest``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from services.worker.settings import Settings

log = logging.getLogger("headwater.worker")


def existing_topics(own: frozenset[str], existing: Iterable[str]) -> frozenset[str]:
    """The topics of ``own`` that are among ``existing`` (every topic the broker lists
    will do)."""
    return own & frozenset(existing)


class Watched:
    """Says which of ``own`` to read now, by the last topic list it saw (``listing``).

    Args:
        settings: the worker's settings (for the log).
        own: every topic it may read.
        what: what they are, for the log (``"selector topics"``).
    """

    def __init__(self, settings: Settings, own: frozenset[str], what: str) -> None:
        self.settings = settings
        self.own = own
        self.what = what
        self.current: frozenset[str] = frozenset()

    def see(self, existing: frozenset[str]) -> bool:
        """Set :attr:`current` by the topics the broker lists (``existing``); whether
        it changed."""
        before, self.current = self.current, existing_topics(self.own, existing)
        if self.current == before:
            return False
        log.info("worker %s reads the %s %s", self.settings.worker_id, self.what,
                 ", ".join(sorted(self.current)) or "none")
        return True
