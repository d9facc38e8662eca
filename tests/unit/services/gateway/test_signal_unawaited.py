"""A signal to a code workflow that waits now for signals of other names: kept (a code
workflow declares no signals beforehand), with a warning naming those it waits for
(``control.send.unawaited``); none for a spec's signal, checked before it is sent."""

from __future__ import annotations

from headwater.core import events as ev
from services.gateway.control.send import unawaited

CODE = {"name": "c", "nodes": [{"id": "main", "kind": "code", "task": "wf.c"}]}
SPEC = {"name": "s", "nodes": [{"id": "w", "kind": "wait", "signal": "approval"}]}


def _signal(name: str) -> ev.SignalSent:
    return ev.SignalSent("wf-1", name, 1, None, "id-1", {})


def test_a_misspelt_signal_to_a_waiting_code_run_is_named_with_the_awaited_ones() -> None:
    assert unawaited(CODE, ["approval", "budget", "approval"], _signal("aproval")) == [
        "workflow wf-1 waits for signal 'approval', 'budget', not 'aproval': this signal "
        "is kept until a wf.signal('aproval') takes it"]


def test_no_warning_when_awaited_before_any_wait_or_for_a_spec() -> None:
    assert unawaited(CODE, ["approval"], _signal("approval")) == []
    assert unawaited(CODE, [], _signal("early")) == []  # sent before its wait: kept for it
    assert unawaited(SPEC, ["approval"], _signal("other")) == []
    assert unawaited(None, ["approval"], _signal("other")) == []
