""""Did you mean": the names closest to a misspelt one (``my.cuont`` -> ``my.count``).

Spec validation suggests node ids and field names, the gateway served task names and
registered definition names. The likeness is ``difflib``'s ratio (matching characters
over both lengths), compared without case; pure, as the core is.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.7
"""The least likeness (0 to 1) of a suggestion: ``my.cuont`` and ``my.count`` are 0.875,
``tsak`` and ``task`` 0.75, ``my.cuont`` and ``my.other`` (not suggested) 0.625."""
MOST = 3
"""The most names suggested."""


def closest(word: str, names: Iterable[str], most: int = MOST) -> list[str]:
    """The names most like ``word``, best first (``word`` itself excluded).

    Args:
        word: the name given.
        names: the names it may have meant.
        most: how many to return at most.

    Returns:
        Up to ``most`` names at least ``CUTOFF`` alike, without case; none when nothing is
        close.
    """
    by_folded: dict[str, str] = {}
    for name in names:
        if name != word:
            by_folded.setdefault(name.casefold(), name)
    found = difflib.get_close_matches(word.casefold(), list(by_folded), n=most, cutoff=CUTOFF)
    return [by_folded[f] for f in found]


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"``, ``" (did you mean 'x' or 'y'?)"``, or ``""`` when no
    name is close to ``word`` (``closest``): a suffix for a fault that names ``word``."""
    found = closest(word, names)
    if not found:
        return ""
    quoted = [repr(n) for n in found]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f" (did you mean {listed}?)"
