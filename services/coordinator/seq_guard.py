"""The last check before a batch's intent: each workflow's new history must follow the
seq its header in the table holds.

A batch is decided from the states the store answers with (``store.TableStore.get``:
the cache, or the table decoded). Should one of them be older than the table — a copy
cached before the last batch's entries were written, as the timer loop's scan once left
— the batch would number its events from that older seq and publish, under seqs already
published, other bodies (invariant 2, docs/architecture.md). The table's header is what
the last batch wrote (staged writes included), so the first event the batch records for
a workflow must be numbered one past it (1 for a workflow without a header).

A batch that fails this is refused before anything of it is written (``StaleState``,
logged and counted: ``metrics.STALE_STATES``): the process ends as
for any batch that cannot be carried out, and its inputs come again to a process that
reads the table. Nothing is lost, and no seq gets a second body. One header read and
parsed per workflow the batch recorded events for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson

from headwater.core import events as ev
from services.coordinator.keys import table_entry_key


class StaleState(Exception):
    """A batch was decided from a state that is not the table's; nothing of it was
    written. The process must not go on with its cache (the caller ends it)."""


def behind(out: Iterable[ev.HistoryEvent],
           header_of: Callable[[bytes], bytes | None]) -> dict[str, tuple[int, int]]:
    """The workflows whose first event in ``out`` does not follow their table header.

    Args:
        out: the batch's history events, in order.
        header_of: a raw table entry by key (``Store.get_entry``).

    Returns:
        Workflow id -> (the seq of its first event in ``out``, the seq its header holds,
        0 for none or one that does not parse), for each that does not follow.
    """
    first: dict[str, int] = {}
    for e in out:
        first.setdefault(e.workflow_id, e.seq)
    found: dict[str, tuple[int, int]] = {}
    for wid, seq in first.items():
        held = header_seq(header_of(table_entry_key(wid)))
        if seq != held + 1:
            found[wid] = (seq, held)
    return found


def header_seq(header: bytes | None) -> int:
    """The seq a header entry holds (``layout.dump_header``); 0 for none, or for one that
    does not parse (its decoding, which the batch did, says why)."""
    if header is None:
        return 0
    try:
        seq = orjson.loads(header).get("seq", 0)
    except (orjson.JSONDecodeError, AttributeError):
        return 0
    return seq if isinstance(seq, int) else 0


def refusal(found: dict[str, tuple[int, int]]) -> StaleState:
    """The error naming the workflows ``behind`` found."""
    shown = "; ".join(f"{wid} at seq {seq}, its table header at seq {held}"
                      for wid, (seq, held) in sorted(found.items())[:5])
    more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
    return StaleState(f"a batch was decided from states behind the table: the first new "
                      f"event of {shown}{more}; refused before its intent, nothing written")
