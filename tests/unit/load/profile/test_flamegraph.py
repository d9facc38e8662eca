"""The SVG flamegraph of collapsed stacks (``load.profile.flamegraph``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from load.profile.flamegraph import ROW, WIDTH, depth, svg, tree

STACKS = Counter({("main", "run", "work"): 3, ("main", "idle<&>"): 1})
NS = "{http://www.w3.org/2000/svg}"


def test_the_tree_holds_each_frames_samples_below_it() -> None:
    root = tree(STACKS)
    assert root.samples == 4
    main = root.children["main"]
    assert main.samples == 4
    assert main.children["run"].samples == 3
    assert main.children["run"].children["work"].samples == 3
    assert depth(root) == 3


def boxes(document: str) -> dict[str, tuple[float, float, float]]:
    """frame -> (x, y, width) of its box, from the tooltip text."""
    found = {}
    for group in ET.fromstring(document).iter(f"{NS}g"):
        title = group.find(f"{NS}title")
        rect = group.find(f"{NS}rect")
        assert title is not None and title.text is not None and rect is not None
        frame = title.text.split(": ")[0]
        found[frame] = (float(rect.get("x", "")), float(rect.get("y", "")),
                        float(rect.get("width", "")))
    return found


def test_boxes_are_as_wide_as_their_share_with_callers_below() -> None:
    document = svg(STACKS, "B2 — coordinator")
    drawn = boxes(document)
    assert set(drawn) == {"main", "run", "work", "idle<&>"}
    assert drawn["main"][2] == WIDTH
    assert drawn["run"][2] == WIDTH * 3 / 4
    assert drawn["run"][0] == drawn["idle<&>"][0] + drawn["idle<&>"][2]  # siblings by name
    assert drawn["main"][1] - drawn["run"][1] == ROW  # a callee sits one row above
    assert drawn["run"][1] - drawn["work"][1] == ROW
    assert "work: 3 samples, 75.00%" in document
    assert "(4 samples)" in document


def test_boxes_too_narrow_are_left_out_and_labels_are_cut_to_fit() -> None:
    stacks = Counter({("main", "a_rather_long_function_name_here"): 4000, ("main", "tiny"): 1})
    document = svg(stacks, "t")
    assert "tiny" in boxes(svg(Counter({("main", "tiny"): 1}), "t"))
    assert "tiny" not in boxes(document)  # 1/4001 of 1200 px is under half a pixel
    # 10 of 100 samples: 120 px, room for 17 characters: 15 and ".."
    cut = svg(Counter({("main", "a_rather_long_function_name_here"): 10, ("main", "z"): 90}),
              "t")
    labels = [t.text for t in ET.fromstring(cut).iter(f"{NS}text")]
    assert "a_rather_long_f.." in labels
    assert "a_rather_long_function_name_here" not in labels
    assert "main" in labels and "z" in labels


def test_no_samples_give_an_empty_picture() -> None:
    document = svg(Counter(), "nothing")
    assert boxes(document) == {}
    assert "(0 samples)" in document
