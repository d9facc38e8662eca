"""Unit tests: the state-machine harness (``headwater/core/machine_harness.py``) is
importable from every unit test, since the audit, history and snapshot tests drive the
machine too."""

from __future__ import annotations

import sys
from pathlib import Path

_HARNESS = Path(__file__).parent / "headwater" / "core"
if str(_HARNESS) not in sys.path:
    sys.path.insert(0, str(_HARNESS))
