"""The node kinds, one unit each, and the one place that registers them.

Each module or package here is one node kind: ``task`` and ``map`` are modules; ``wait``,
``sleep``, ``workflow``, ``loop``, ``schedule`` and ``code`` are small packages (``__init__.py``
describes the kind, ``records.py`` holds its spec fields and event records, which
``spec.kinds`` and ``events`` re-export, and ``rules.py`` the rest). Each ends with its
``UNIT`` (``registry.KindUnit``). Importing this
package installs every unit in the registry; ``headwater/core/__init__.py`` imports it, so
the registry is full before any core module is used. A new kind is one new module
or package here and one line in ``UNITS``.
"""

from __future__ import annotations

from headwater.core import events as ev
from headwater.core import registry
from headwater.core.kinds.cache.rules import UNIT as CACHE
from headwater.core.kinds.cache.rules import looked_up
from headwater.core.kinds.cache.rules import released as cache_released
from headwater.core.kinds.code.rules import UNIT as CODE
from headwater.core.kinds.limiter.rules import UNIT as LIMITER
from headwater.core.kinds.limiter.rules import defined, released, requested
from headwater.core.kinds.loop.rules import UNIT as LOOP
from headwater.core.kinds.map import UNIT as MAP
from headwater.core.kinds.schedule.rules import UNIT as SCHEDULE
from headwater.core.kinds.sleep.rules import UNIT as SLEEP
from headwater.core.kinds.task import UNIT as TASK
from headwater.core.kinds.wait.rules import UNIT as WAIT
from headwater.core.kinds.workflow.rules import UNIT as WORKFLOW
from headwater.core.machine.inputs import INPUT_RULES

UNITS = (TASK, MAP, WAIT, SLEEP, WORKFLOW, LOOP, SCHEDULE, CODE, LIMITER, CACHE)
"""Every node kind's unit."""

registry.install(UNITS)
INPUT_RULES.update({ev.PermitRequested: requested, ev.PermitReleased: released,
                    ev.LimitDefined: defined, ev.CacheLookedUp: looked_up,
                    ev.CacheReleased: cache_released})
