"""Domain records, every one as ``events.<Name>``: the inputs (``inputs.py``) and the
history events with their ``HistoryEvent`` envelope (``history.py``), and the node kinds'
records (each in its unit's ``records.py``; ``when``'s ``ConditionEvaluated`` in
``conditions.py``). This package's names are its public face: import it as
``from headwater.core import events as ev``.
"""

from __future__ import annotations

from headwater.core.calls import CallerLinked, CallLinked
from headwater.core.conditions import ConditionEvaluated
from headwater.core.deadline import DeadlineSet
from headwater.core.events.history import (
    TERMINAL_BODIES,
    Body,
    HistoryEvent,
    MapExpanded,
    NodeFinished,
    NodeReused,
    ReportDiscarded,
    TaskCancelled,
    TaskDispatched,
    TaskReused,
    TimerScheduled,
    WorkflowAccepted,
    WorkflowCancelled,
    WorkflowFailed,
    WorkflowRestarted,
    WorkflowSucceeded,
)
from headwater.core.events.inputs import (
    CancelRequested,
    Input,
    Report,
    TaskCheckpointed,
    TaskFailed,
    TaskHeartbeated,
    TaskOutputStreamed,
    TaskProgressed,
    TaskStarted,
    TaskSucceeded,
    TimerFired,
    WorkflowSubmitted,
)
from headwater.core.events.pause import (
    DispatchDeferred,
    DispatchRecalled,
    PauseRequested,
    ResumeRequested,
    TimerDeferred,
    WorkflowPaused,
    WorkflowResumed,
)
from headwater.core.kinds.cache.records import (
    CacheAnswered,
    CacheLookedUp,
    CacheReleased,
    CacheReturned,
    CacheServed,
    TaskCached,
    TaskLookedUp,
)
from headwater.core.kinds.limiter.records import (
    LimitDefined,
    PermitDenied,
    PermitGranted,
    PermitIssued,
    PermitRefused,
    PermitReleased,
    PermitRequested,
    PermitsReturned,
    TaskHeld,
)
from headwater.core.kinds.loop.records import LoopStepDecided
from headwater.core.kinds.schedule.records import (
    ScheduleArmed,
    ScheduleFired,
    SchedulePaused,
    ScheduleResumed,
)
from headwater.core.kinds.sleep.records import SleepStarted
from headwater.core.kinds.wait.records import (
    SignalConsumed,
    SignalDiscarded,
    SignalSent,
    WaitStarted,
)
from headwater.core.kinds.workflow.records import (
    ChildSubmitted,
    ParentLinked,
)

__all__ = [
    "TERMINAL_BODIES",
    "Body",
    "CacheAnswered",
    "CacheLookedUp",
    "CacheReleased",
    "CacheReturned",
    "CacheServed",
    "CallLinked",
    "CallerLinked",
    "CancelRequested",
    "ChildSubmitted",
    "ConditionEvaluated",
    "DeadlineSet",
    "DispatchDeferred",
    "DispatchRecalled",
    "HistoryEvent",
    "Input",
    "LimitDefined",
    "LoopStepDecided",
    "MapExpanded",
    "NodeFinished",
    "NodeReused",
    "ParentLinked",
    "PauseRequested",
    "PermitDenied",
    "PermitGranted",
    "PermitIssued",
    "PermitRefused",
    "PermitReleased",
    "PermitRequested",
    "PermitsReturned",
    "Report",
    "ReportDiscarded",
    "ResumeRequested",
    "ScheduleArmed",
    "ScheduleFired",
    "SchedulePaused",
    "ScheduleResumed",
    "SignalConsumed",
    "SignalDiscarded",
    "SignalSent",
    "SleepStarted",
    "TaskCached",
    "TaskCancelled",
    "TaskCheckpointed",
    "TaskDispatched",
    "TaskFailed",
    "TaskHeartbeated",
    "TaskHeld",
    "TaskLookedUp",
    "TaskOutputStreamed",
    "TaskProgressed",
    "TaskReused",
    "TaskStarted",
    "TaskSucceeded",
    "TimerDeferred",
    "TimerFired",
    "TimerScheduled",
    "WaitStarted",
    "WorkflowAccepted",
    "WorkflowCancelled",
    "WorkflowFailed",
    "WorkflowPaused",
    "WorkflowRestarted",
    "WorkflowResumed",
    "WorkflowSubmitted",
    "WorkflowSucceeded",
]
