"""Deployments kept between benchmarks (``load.kept``): one is given again only for the
same settings and as it was started, and no more than ``keep`` run at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from load import kept
from ops import localstack
from ops.sandbox import Sandbox

A = kept.key_of(1, 8, 1, None)
NOCACHE = kept.key_of(1, 8, 1, {"HEADWATER_WORKFLOW_CACHE_SIZE": "0"})


def sandbox(tmp_path: Path, tag: str) -> Sandbox:
    services = [localstack.Service(name, ("python",)) for name in ("coordinator", "worker-1")]
    return Sandbox(f"t{tag}", f"dsn/{tag}", "http://gw", tmp_path / tag, {}, services)


class Fake:
    """A pool whose processes are all running unless told otherwise, and which notes
    what it stops instead of stopping anything."""

    def __init__(self, keep: int) -> None:
        self.down: set[str] = set()
        self.stopped: list[str] = []
        self.pool = kept.Pool(keep, running=lambda s: s.prefix not in self.down,
                              stop=lambda s: self.stopped.append(s.prefix))


@pytest.fixture(autouse=True)
def _home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_HOME", "/elsewhere")


def test_a_deployment_is_given_again_only_for_the_same_settings(tmp_path: Path) -> None:
    fake = Fake(2)
    one = sandbox(tmp_path, "one")
    assert fake.pool.take(A) is None
    assert fake.pool.give_back(A, one, kept.services_of(one))
    assert fake.pool.take(NOCACHE) is None
    assert fake.pool.take(A) is one
    assert fake.pool.take(A) is None  # in use: not given twice
    assert fake.stopped == []


def test_taking_one_points_the_pid_files_at_its_home(tmp_path: Path) -> None:
    fake = Fake(2)
    one = sandbox(tmp_path, "one")
    fake.pool.give_back(A, one, kept.services_of(one))
    fake.pool.take(A)
    assert os.environ["HEADWATER_HOME"] == str(one.home)


def test_a_grown_deployment_is_not_kept(tmp_path: Path) -> None:
    fake = Fake(2)
    one = sandbox(tmp_path, "one")
    started_as = kept.services_of(one)
    one.services.append(localstack.Service("worker-2", ("python",)))
    assert not fake.pool.give_back(A, one, started_as)
    assert fake.pool.take(A) is None


def test_a_deployment_with_a_process_gone_is_not_kept(tmp_path: Path) -> None:
    fake = Fake(2)
    one = sandbox(tmp_path, "one")
    fake.down.add(one.prefix)
    assert not fake.pool.give_back(A, one, kept.services_of(one))
    assert fake.pool.take(A) is None


def test_room_is_made_by_stopping_the_least_recently_used(tmp_path: Path) -> None:
    fake = Fake(2)
    one, two, three = (sandbox(tmp_path, t) for t in ("one", "two", "three"))
    fake.pool.give_back(A, one, kept.services_of(one))
    fake.pool.give_back(NOCACHE, two, kept.services_of(two))
    assert fake.pool.take(A) is one
    fake.pool.give_back(A, one, kept.services_of(one))  # now the most recently used
    fake.pool.make_room()
    assert fake.stopped == ["ttwo"]
    fake.pool.give_back(kept.key_of(2, 8, 1, None), three, kept.services_of(three))
    fake.pool.give_back(NOCACHE, two, kept.services_of(two))  # one over keep
    assert fake.stopped == ["ttwo", "tone"]


def test_a_fresh_deployment_starts_with_none_kept(tmp_path: Path) -> None:
    fake = Fake(3)
    for tag in ("one", "two"):
        s = sandbox(tmp_path, tag)
        fake.pool.give_back(kept.key_of(len(tag), 8, 1, None), s, kept.services_of(s))
    fake.pool.make_room()
    assert fake.stopped == []
    fake.pool.make_room(fresh=True)
    assert fake.stopped == ["tone", "ttwo"]
    assert fake.pool.idle == []


def test_sharing_is_on_only_inside_its_block() -> None:
    assert kept.pool() is None
    with kept.sharing(2) as shared:
        assert kept.pool() is shared
        assert shared.keep == 2
    assert kept.pool() is None


def test_settings_are_told_apart_by_every_part() -> None:
    keys = {kept.key_of(1, 8, 1, None), kept.key_of(2, 8, 1, None), kept.key_of(1, 64, 1, None),
            kept.key_of(1, 8, 2, None), NOCACHE}
    assert len(keys) == 5
    assert kept.key_of(1, 8, 1, {}) == A
