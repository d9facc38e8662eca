"""Kafka consumer groups as the end-to-end tests watch them: who is in a group now, and
waiting (``tests/polling.py``) until a group has the members a test expects."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from aiokafka.admin import AIOKafkaAdminClient
from stackkit import BOOTSTRAP

from tests.polling import wait_until_async


class GroupView(NamedTuple):
    """A consumer group at one moment.

    Attributes:
        state: the broker's name for its state (``Stable``, ``PreparingRebalance``,
            ``CompletingRebalance``, ``Empty``, ``Dead``).
        members: the member ids.
    """

    state: str
    members: frozenset[str]


async def describe(group: str) -> GroupView:
    """The consumer group ``group`` now."""
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        (response,) = await admin.describe_consumer_groups([group])
        # (error, group, state, protocol type, protocol, members: (member id, ...))
        found = response.groups[0]
        return GroupView(found[2], frozenset(m[0] for m in found[5]))
    finally:
        await admin.close()


async def group_members(group: str, stable: bool = False) -> set[str]:
    """The member ids of the consumer group ``group`` now (with ``stable``: an empty set
    unless the group is ``Stable``, no rebalance under way)."""
    view = await describe(group)
    if stable and view.state != "Stable":
        return set()
    return set(view.members)


async def group_size(group: str) -> int:
    """Members of the consumer group ``group`` now."""
    return len((await describe(group)).members)


async def wait_group(group: str, what: str, timeout_s: float,
                     until: Callable[[frozenset[str]], bool],
                     stable: bool = False) -> frozenset[str]:
    """Poll ``group`` until ``until(members)`` holds (and, with ``stable``, the group is
    ``Stable``); return the members.

    Args:
        group: the consumer group.
        what: what is awaited, for the failure message.
        timeout_s: the limit, seconds (scaled by ``HEADWATER_TEST_TIME_SCALE``).
        until: whether a set of member ids is the one awaited.
        stable: also wait for no rebalance to be under way.

    Raises:
        WaitTimeout: not so within the limit (the message shows the group's last state
            and members).
    """
    def arrived(view: GroupView) -> bool:
        return (not stable or view.state == "Stable") and until(view.members)

    view = await wait_until_async(lambda: describe(group), timeout_s, f"{what} ({group})",
                                  until=arrived)
    return view.members


async def wait_group_size(group: str, size: int, what: str, timeout_s: float,
                          stable: bool = False, at_least: bool = False) -> frozenset[str]:
    """``wait_group`` for ``size`` members (or, with ``at_least``, ``size`` or more)."""
    def sized(members: frozenset[str]) -> bool:
        return len(members) >= size if at_least else len(members) == size

    return await wait_group(group, what, timeout_s, sized, stable)
