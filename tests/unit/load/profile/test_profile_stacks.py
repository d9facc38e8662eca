"""Collapsed stacks to self and inclusive time (``load.profile.stacks``)."""

from __future__ import annotations

from collections import Counter

import pytest

from load.profile.stacks import NO_FRAMES, aggregate, frame_name, parse, table, top

RAW = """\
main (app.py:9);run (app.py:4);work (lib/x.py:12) 6
main (app.py:9);run (app.py:5);work (lib/x.py:13) 2
main (app.py:9);run (app.py:4) 1

main (app.py:9);wait (asyncio/base_events.py:600);select (selectors.py:468) 1
 2
"""


@pytest.mark.parametrize(("frame", "name"), [
    ("work (lib/x.py:12)", "lib/x.py:work"),
    ("work (lib/x.py)", "lib/x.py:work"),
    ("<module> (<string>:2)", "<string>:<module>"),
    ("<lambda> (a b/c.py:3)", "a b/c.py:<lambda>"),
    ("process 12:\"python -m x\"", "process 12:\"python -m x\""),
])
def test_a_frame_is_named_file_and_function_without_its_line(frame: str, name: str) -> None:
    assert frame_name(frame) == name


def test_stacks_differing_only_in_lines_are_added_together() -> None:
    stacks = parse(RAW)
    assert stacks == Counter({
        ("app.py:main", "app.py:run", "lib/x.py:work"): 8,
        ("app.py:main", "app.py:run"): 1,
        ("app.py:main", "asyncio/base_events.py:wait", "selectors.py:select"): 1,
        (NO_FRAMES,): 2,
    })


@pytest.mark.parametrize("line", ["main (app.py:9) x", "7", "main (app.py:9);run (app.py:4)",
                                  "main (app.py:9) 1.5"])
def test_a_line_without_a_count_is_refused_with_its_number(line: str) -> None:
    with pytest.raises(ValueError, match="line 2"):
        parse(f"main (app.py:9) 1\n{line}\n")


def test_self_time_is_the_leaf_and_inclusive_time_counts_every_frame_once_a_sample() -> None:
    recursive = Counter({("a", "b", "a", "b"): 3, ("a", "c"): 1})
    profile = aggregate(parse(RAW) + recursive)
    assert profile.samples == 16
    assert profile.self_time == Counter({"lib/x.py:work": 8, "app.py:run": 1,
                                         "selectors.py:select": 1, "b": 3, "c": 1,
                                         NO_FRAMES: 2})
    assert profile.inclusive["app.py:main"] == 10
    assert profile.inclusive["app.py:run"] == 9
    assert profile.inclusive["a"] == 4  # not 7: recursion counts a sample once
    assert profile.inclusive["b"] == 3


def test_top_ranks_by_samples_then_name_in_percent() -> None:
    counts = Counter({"b": 2, "a": 2, "c": 5, "d": 1})
    assert top(counts, 10, 3) == [("c", 50.0), ("a", 20.0), ("b", 20.0)]
    assert top(Counter(), 0, 3) == []


def test_the_table_puts_self_beside_inclusive_with_percents() -> None:
    text = table(aggregate(parse(RAW)), n=2)
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[2] == "| 1 | 66.7 | `lib/x.py:work` | 83.3 | `app.py:main` |"
    assert lines[3] == "| 2 | 16.7 | `(no Python frame)` | 75.0 | `app.py:run` |"


def test_a_table_cell_escapes_pipes_and_a_process_without_samples_says_so() -> None:
    assert "`x.py:a\\|b`" in table(aggregate(Counter({("x.py:a|b",): 1})))
    assert table(aggregate(Counter())).startswith("_no samples")
