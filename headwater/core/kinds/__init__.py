"""The node kinds, one unit each, and the one place that registers them.

Each module here is one node kind (``task``, ``map``, ``wait``, ``sleep``, ``workflow``,
``loop``, ``schedule``) and ends with its ``UNIT`` (``registry.KindUnit``). Importing this
package installs every unit in the registry; ``headwater/core/__init__.py`` imports it, so
the registry is full before any core module is used. A new kind is one new module here
and one line in ``UNITS``.
"""

from __future__ import annotations

from headwater.core import registry
from headwater.core.kinds.loop import UNIT as LOOP
from headwater.core.kinds.map import UNIT as MAP
from headwater.core.kinds.schedule import UNIT as SCHEDULE
from headwater.core.kinds.sleep import UNIT as SLEEP
from headwater.core.kinds.task import UNIT as TASK
from headwater.core.kinds.wait import UNIT as WAIT
from headwater.core.kinds.workflow import UNIT as WORKFLOW

UNITS = (TASK, MAP, WAIT, SLEEP, WORKFLOW, LOOP, SCHEDULE)
"""Every node kind's unit."""

registry.install(UNITS)
