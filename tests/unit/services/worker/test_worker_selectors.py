"""A worker's tags (``HEADWATER_WORKER_TAGS``): refused at start when one is no tag,
announced, and the selector topics it reads (``selectors.selector_topics``): those of
its queue whose tags are a subset of its own, and that exist; none without tags."""

from __future__ import annotations

import subprocess
import sys

import pytest
from worker_fakes import settings

from headwater.topics import Topics
from services.worker.announce import Announcer
from services.worker.selectors import Selectors, selector_topics
from services.worker.settings import Settings

TOPICS = Topics("t")
EXISTING = [TOPICS.tasks("unit"), TOPICS.needs("unit", ["gpu"]),
            TOPICS.needs("unit", ["a100", "gpu"]), TOPICS.needs("unit", ["tpu"]),
            TOPICS.needs("unit", ["gpu", "tpu"]), TOPICS.needs("other", ["gpu"]),
            TOPICS.lane("unit", "wf", "v1"), TOPICS.events]


def _reads(*tags: str) -> set[str]:
    return set(selector_topics(TOPICS.needs_of("unit", tags), EXISTING))


async def test_a_worker_reads_the_topics_of_the_subsets_of_its_tags() -> None:
    assert _reads("gpu") == {TOPICS.needs("unit", ["gpu"])}
    assert _reads("gpu", "a100", "fast") == {TOPICS.needs("unit", ["gpu"]),
                                             TOPICS.needs("unit", ["a100", "gpu"])}
    assert _reads("tpu", "gpu") == {TOPICS.needs("unit", ["gpu"]), TOPICS.needs("unit", ["tpu"]),
                                    TOPICS.needs("unit", ["gpu", "tpu"])}
    assert _reads() == set() and _reads("a100") == set()  # none existing of its own
    assert Selectors(settings(tags=("gpu",))).own == TOPICS.needs_of("unit", ["gpu"])


async def test_tags_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().tags == ()
    monkeypatch.setenv("HEADWATER_WORKER_TAGS", "gpu, a100")
    s = Settings.from_env()
    assert s.tags == ("a100", "gpu")
    assert Announcer(s, ["t"], lambda: 0).base.tags == ("a100", "gpu")


@pytest.mark.parametrize("raw", ["gpu,a b", "-x", "gpu;tpu", "é"])
def test_a_bad_tag_stops_the_worker_naming_it(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_WORKER_TAGS", raw)
    with pytest.raises(ValueError, match=r"HEADWATER_WORKER_TAGS: .* is no tag"):
        Settings.from_env()


def test_the_worker_command_says_which_tag_and_exits_2() -> None:
    run = subprocess.run([sys.executable, "-m", "services.worker"], capture_output=True,
                         text=True, check=False, timeout=60,
                         env={"HEADWATER_WORKER_TAGS": "gpu,a b", "PATH": ""})
    assert run.returncode == 2, run.stderr[-500:]
    assert "HEADWATER_WORKER_TAGS: 'a b' is no tag" in run.stderr
