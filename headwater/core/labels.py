"""Labels: ``{key: value}`` strings a run carries so that people can find it and act on
every run that has them (``GET /v1/workflows?label=team:search``, bulk actions).

Labels are a field of the workflow's spec document (``labels``, top level), as the
priority is (``headwater.core.priority``): a definition's spec gives the labels of its
runs, and a submission's ``labels`` are merged over them, key by key (the submission's
value wins), in the spec the run records. So they are in the history
(``WorkflowAccepted.spec``), they take part in a submission's idempotency (the same id
with other labels is another body), and a rerun keeps its source's. A child workflow
does not inherit its parent's labels: it has its spec's own; a search finds the runs
people submitted, and what is done to them (a cancel) reaches their children anyway.

A key is 1 to ``MAX_KEY`` characters of ASCII letters, digits and ``. _ - /``,
starting with a letter or digit (``team``, ``app.kubernetes.io/name``); a value is 0 to
``MAX_VALUE`` characters of ASCII letters, digits and ``. _ - : @ /`` (``search``,
``v1.2``, ``2026-12-06``); a run has at most ``MAX_LABELS``. Pure, as the core is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

KEY = "labels"
"""The spec's top-level field (and the submission's)."""
MAX_LABELS = 32
"""The most labels a run may carry."""
MAX_KEY = 63
"""The longest key, in characters."""
MAX_VALUE = 128
"""The longest value, in characters."""
KEY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,62}")
"""A valid key (``MAX_KEY`` characters at most)."""
VALUE_PATTERN = re.compile(r"[A-Za-z0-9._:@/-]{0,128}")
"""A valid value (``MAX_VALUE`` characters at most)."""
KEY_HINT = (f"1 to {MAX_KEY} of A-Z a-z 0-9 . _ - /, starting with a letter or digit")
VALUE_HINT = f"0 to {MAX_VALUE} of A-Z a-z 0-9 . _ - : @ /"


def label_faults(value: Any, where: str = KEY) -> list[str]:
    """What is wrong with ``value`` as a run's labels; empty for a valid mapping.

    Args:
        value: the labels as given (a mapping of strings to strings is valid).
        where: how a fault names the field (``labels``, ``query.label``).

    Returns:
        One fault per wrong key or value (at most 10), or the count over the limit,
        each naming the key: ``labels: key 'Team!' must be 1 to 63 of ...``.
    """
    if not isinstance(value, Mapping):
        return [f"{where}: must be an object of string keys to string values"]
    faults: list[str] = []
    if len(value) > MAX_LABELS:
        faults.append(f"{where}: at most {MAX_LABELS} labels (got {len(value)})")
    for key, item in value.items():
        if len(faults) >= 10:
            break
        shown = repr(key)[:80]
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            faults.append(f"{where}: key {shown} must be {KEY_HINT}")
        elif not isinstance(item, str) or not VALUE_PATTERN.fullmatch(item):
            faults.append(f"{where}: {key}: value {repr(item)[:80]} must be a string of "
                          f"{VALUE_HINT}")
    return faults


def parse_labels(doc: Mapping[str, Any], faults: list[str]) -> dict[str, str]:
    """A spec document's labels: its ``labels`` field, ``{}`` without one.

    Args:
        doc: the spec document (a mapping).
        faults: the field's faults are appended here (``label_faults``).

    Returns:
        The labels, ``{}`` when missing or invalid.
    """
    raw = doc.get(KEY)
    if raw is None:
        return {}
    found = label_faults(raw)
    if found:
        faults.extend(found)
        return {}
    return dict(raw)


def with_labels(doc: Mapping[str, Any], labels: Mapping[str, str] | None) -> dict[str, Any]:
    """The spec document ``doc`` with ``labels`` merged over its own, key by key (a
    submission's over its definition's); ``doc`` itself (a copy) when ``labels`` is
    None or empty. Labels ``doc`` holds that are not a mapping are replaced."""
    if not labels:
        return dict(doc)
    own = doc.get(KEY)
    base = dict(own) if isinstance(own, Mapping) else {}
    return {**doc, KEY: {**base, **labels}}


def labels_of(spec: Any) -> dict[str, str]:
    """The labels a recorded spec document carries (``{}``: none, or not valid ones, as
    a run whose spec is invalid fails at once)."""
    raw = spec.get(KEY) if isinstance(spec, Mapping) else None
    if raw is None or label_faults(raw):
        return {}
    return dict(raw)


def parse_selector(text: str) -> tuple[str, str | None] | None:
    """A label selector of a query (``?label=team:search``, ``?label=team``): the key
    and the value (None: any value), or None when ``text`` is neither form."""
    key, sep, value = text.partition(":")
    if not KEY_PATTERN.fullmatch(key):
        return None
    if not sep:
        return key, None
    return (key, value) if VALUE_PATTERN.fullmatch(value) else None
