// Runs the bulk operation form's pure module under Node on made-up form values and
// answers, and prints what it gives as one JSON document (test_ui_operation_logic.py
// checks it). Argument: the URL of the UI's js/ directory.

const base = process.argv[2];
const ops = await import(`${base}operation_request.js`);

function refused(values) {
  try {
    ops.operationBody(values, false);
    return null;
  } catch (error) {
    return [error instanceof ops.FieldError, error.field, error.message];
  }
}

const query = new URLSearchParams("status=running&label=team%3Asearch&label=env&paused=false&cursor=x");
const fromQuery = ops.valuesFromQuery(query);

process.stdout.write(JSON.stringify({
  cancelPreview: ops.operationBody({action: "cancel", status: "running", name: " ",
                                    label: " team=search  env ", reason: " rebuilt ",
                                    signalName: "ignored", cache: true}, true),
  signal: ops.operationBody({action: "signal", definition: "embed@3", paused: "true",
                             signalName: " go ", signalFields: '{"ok": true, "n": 2}'}, false),
  signalNoFields: ops.operationBody({action: "signal", name: "flow", signalName: "go",
                                     signalFields: ""}, false),
  rerun: ops.operationBody({action: "rerun", status: "failed", cache: true, reason: "x"}, false),
  resume: ops.operationBody({action: "resume", paused: "true", reason: "not sent"}, false),
  pausedFalse: ops.filterOf({paused: "false"}),
  noAction: refused({action: "", status: "running"}),
  badAction: refused({action: "delete", status: "running"}),
  emptyFilter: refused({action: "cancel", name: "  ", label: " ", paused: ""}),
  noSignalName: refused({action: "signal", status: "running", signalName: " "}),
  badFields: refused({action: "signal", status: "running", signalName: "go", signalFields: "{"}),
  arrayFields: refused({action: "signal", status: "running", signalName: "go", signalFields: "[1]"}),
  fromQuery,
  roundTrip: ops.filterOf(fromQuery),
  preview: ops.previewOf({dry_run: true, action: "cancel", matched: 5, over_limit: false,
                          sample: ["a", "b"], by_status: {succeeded: 2, running: 2, accepted: 1},
                          to_act_on: 3}),
  previewEmpty: ops.previewOf({matched: 0}),
  errors: ops.fieldErrors({status: 422, errors: [
    "filter.status: Input should be 'accepted', 'running'", "filter.label: key:value or key",
    "filter.paused: Input should be a valid boolean", "signal.name: too short",
    "signal.fields: Input should be a valid dictionary", "signal: required by a bulk signal",
    "action: 'x' is not one of cancel", "filter: matches more than 5000 runs",
    "filter.created_after: not a time", "body: Invalid JSON"]}),
  detailOnly: ops.fieldErrors({title: "Invalid request", detail: "reason: too long"}),
  nothing: ops.fieldErrors(null),
}));
