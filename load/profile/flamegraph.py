"""An SVG flamegraph of collapsed stacks (``load.profile.stacks.parse``): one box per
frame, as wide as its share of the samples, its callers below it (the root at the
bottom); hovering a box shows its frame, samples and percent. Static (no script), so
that it opens anywhere an SVG does. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from load.profile.stacks import Stack

WIDTH = 1200
"""Width of the image, pixels."""
ROW = 16
"""Height of one stack level, pixels."""
MIN_PX = 0.5
"""Narrower boxes (and all above them) are left out."""
CHAR_PX = 6.5
"""Width of a character of the label font, pixels (about, for cutting labels to fit)."""
_TOP = 24


@dataclass
class Node:
    """A frame at one place in the call tree.

    Attributes:
        samples: samples with this frame here (itself or below it).
        children: the frames it called -> their nodes, in the order first seen.
    """

    samples: int = 0
    children: dict[str, Node] = field(default_factory=dict)


def tree(stacks: Counter[Stack]) -> Node:
    """The call tree of ``stacks``: its root holds every sample."""
    root = Node()
    for stack, count in stacks.items():
        root.samples += count
        node = root
        for frame in stack:
            node = node.children.setdefault(frame, Node())
            node.samples += count
    return root


def depth(node: Node) -> int:
    """Levels below ``node`` (0 for a leaf)."""
    return 1 + max(map(depth, node.children.values())) if node.children else 0


def svg(stacks: Counter[Stack], title: str) -> str:
    """The flamegraph of ``stacks`` as an SVG document, ``title`` above it.

    Frames are ordered by name at each level (as flamegraph.pl orders them), so the same
    stacks give the same picture.
    """
    root = tree(stacks)
    levels = max(depth(root), 1)
    height = _TOP + levels * ROW + 4
    boxes: list[str] = []
    if root.samples:
        _draw(root, 0.0, levels - 1, WIDTH / root.samples, root.samples, boxes)
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace" font-size="11">',
        f'<rect width="{WIDTH}" height="{height}" fill="#f8f8f0"/>',
        f'<text x="4" y="16" font-size="13">{escape(title)} '
        f'({root.samples} samples)</text>',
        *boxes, "</svg>", ""])


def _draw(node: Node, x: float, level: int, px: float, total: int, out: list[str]) -> None:
    """Draw ``node``'s children from ``x`` at ``level`` (counted from the top), then theirs
    one level up."""
    for frame in sorted(node.children):
        child = node.children[frame]
        width = child.samples * px
        if width >= MIN_PX:
            out.append(_box(frame, x, _TOP + level * ROW, width, child.samples, total))
            _draw(child, x, level - 1, px, total, out)
        x += width


def _box(frame: str, x: float, y: float, width: float, samples: int, total: int) -> str:
    fits = int((width - 4) / CHAR_PX)
    label = frame if len(frame) <= fits else frame[:fits - 2] + ".." if fits > 3 else ""
    text = f'<text x="{x + 2:.1f}" y="{y + ROW - 4}">{escape(label)}</text>' if label else ""
    tip = escape(f"{frame}: {samples} samples, {100.0 * samples / total:.2f}%")
    return (f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y}" width="{width:.1f}" '
            f'height="{ROW - 1}" fill="{_colour(frame)}"/>{text}</g>')


def _colour(frame: str) -> str:
    """A warm colour fixed by the frame's name, so one function looks alike everywhere."""
    digest = hashlib.blake2s(frame.encode(), digest_size=3).digest()
    return f"rgb({205 + digest[0] % 50},{80 + digest[1] % 140},{digest[2] % 60})"
