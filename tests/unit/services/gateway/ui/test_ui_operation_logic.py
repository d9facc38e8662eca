"""The bulk operation form's pure module (``operation_request.js``) run under Node on
made-up form values and answers (``operation_logic.mjs``): the body of
``POST /v1/operations`` holds the filter's given fields alone (labels typed as
``key=value`` become ``key:value`` selectors; ``paused`` a boolean), each action's own
arguments and nothing of another's; what the gateway would refuse (no action, an empty
filter, a signal without a name or with fields that are not a JSON object) is refused
first, naming the field; the runs list's address fills the filter; a dry run's answer is
read into the preview; a 422's errors are put next to the fields they name. Skipped where
Node is not installed, except on CI (``CI=true``), where it fails.
"""

from __future__ import annotations

import functools
from typing import Any

from ui_node_harness import node_answers


@functools.cache
def answers() -> dict[str, Any]:
    """What operation_logic.mjs prints (``ui_node_harness``)."""
    return node_answers("operation_logic.mjs")


def test_the_body_holds_the_given_filter_and_the_actions_own_arguments() -> None:
    got = answers()
    assert got["cancelPreview"] == {
        "action": "cancel", "filter": {"status": "running", "label": ["team:search", "env"]},
        "reason": "rebuilt", "dry_run": True}
    assert got["signal"] == {"action": "signal",
                             "filter": {"definition": "embed@3", "paused": True},
                             "signal": {"name": "go", "fields": {"ok": True, "n": 2}}}
    assert got["signalNoFields"]["signal"] == {"name": "go", "fields": {}}
    assert got["rerun"] == {"action": "rerun", "filter": {"status": "failed"},
                            "cache": "refresh"}
    assert got["resume"] == {"action": "resume", "filter": {"paused": True}}
    assert got["pausedFalse"] == {"paused": False}


def test_what_the_gateway_would_refuse_is_refused_first_naming_the_field() -> None:
    got = answers()
    assert got["noAction"] == [True, "action", "choose one of cancel, pause, resume, rerun, "
                                               "signal"]
    assert got["badAction"][:2] == [True, "action"]
    assert got["emptyFilter"][:2] == [True, ""]
    assert "at least one filter" in got["emptyFilter"][2]
    assert got["noSignalName"][:2] == [True, "signal-name"]
    assert got["badFields"][:2] == [True, "signal-fields"]
    assert got["badFields"][2].startswith("not JSON")
    assert got["arrayFields"][:2] == [True, "signal-fields"]


def test_the_runs_lists_address_fills_the_filter() -> None:
    got = answers()
    assert got["fromQuery"] == {"status": "running", "name": "", "definition": "",
                                "paused": "false", "label": "team=search env"}
    assert got["roundTrip"] == {"status": "running", "label": ["team:search", "env"],
                                "paused": False}


def test_a_dry_runs_answer_is_read_into_the_preview() -> None:
    got = answers()
    assert got["preview"] == {"matched": 5, "toActOn": 3, "overLimit": False,
                              "byStatus": [["running", 2], ["succeeded", 2], ["accepted", 1]],
                              "sample": ["a", "b"]}
    assert got["previewEmpty"] == {"matched": 0, "toActOn": 0, "overLimit": False,
                                   "byStatus": [], "sample": []}


def test_a_refusals_errors_go_to_the_fields_they_name() -> None:
    got = answers()
    assert [e["field"] for e in got["errors"]] == [
        "status", "label", "paused", "signal-name", "signal-fields", "signal-name", "action",
        "", "", ""]
    assert got["errors"][0]["message"] == "Input should be 'accepted', 'running'"
    assert got["errors"][7]["message"] == "filter: matches more than 5000 runs"
    assert got["detailOnly"] == [{"field": "reason", "message": "too long"}]
    assert got["nothing"] == [{"field": "", "message": "refused"}]
