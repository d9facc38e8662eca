"""``--label`` of the commands that submit, list and act on runs (``headwater submit``,
``run``, ``list``, ``bulk``), and how a run's labels are printed
(``headwater.core.labels``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from ops.cli.common import console

RunLabels = Annotated[list[str] | None, typer.Option(
    "--label", "-l", help="KEY=VALUE (or KEY:VALUE): a label of the run, over its spec's "
                          "or definition's; repeat for several")]
"""``--label`` of ``submit`` and ``run``."""


def label_options(pairs: list[str], any_value: bool) -> dict[str, Any]:
    """``--label KEY=VALUE`` options as labels (``headwater.core.labels``); ``KEY:VALUE``
    too, as the HTTP query writes it (a key holds neither ``=`` nor ``:``, so the first of
    them ends it); with ``any_value`` (a filter), a bare ``KEY`` stands for the key with
    any value (None).

    Raises:
        typer.BadParameter: one without ``=`` (unless ``any_value``), or a key or value
            a label may not have.
    """
    from headwater.core.labels import label_faults

    labels: dict[str, Any] = {}
    for pair in pairs:
        cut = min((i for i in (pair.find("="), pair.find(":")) if i >= 0), default=-1)
        key, sep, value = (pair, "", "") if cut < 0 else (pair[:cut], pair[cut], pair[cut + 1:])
        if not sep and not any_value:
            raise typer.BadParameter(f"--label {pair!r}: KEY=VALUE")
        faults = label_faults({key: value})
        if faults:
            raise typer.BadParameter(f"--label {faults[0].removeprefix('labels: ')}")
        labels[key] = value if sep else None
    return labels


def labels_text(labels: dict[str, str] | None) -> str:
    """``key=value`` pairs by key, space-separated (``""``: none)."""
    return " ".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))


def print_labels(labels: dict[str, str] | None) -> None:
    """Print a run's labels (``headwater status``); nothing when it has none."""
    if labels:
        console.print("labels: " + escape(labels_text(labels)))
