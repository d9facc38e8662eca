// The form that starts a bulk operation (POST /v1/operations): an action (cancel,
// pause, resume, rerun, signal with its name and JSON fields) and a filter (the runs
// list's: status, name, definition, labels, paused). "Preview" asks for a dry run and
// shows how many runs match, how many the action would act on, their statuses and the
// first ids; only then "Start" posts the same body for real. Changing the form takes
// the preview back. A refusal is shown next to the field it names.

import {ApiError, postJson} from "./api.js";
import {h, link, note, replace, runPath} from "./dom.js";
import {
  ACTIONS, FieldError, STATUSES, fieldErrors, operationBody, previewOf, valuesFromQuery,
} from "./operation_request.js";

/** Form field -> the actions it belongs to (the others hide it). */
const ONLY_FOR = {reason: ["cancel", "pause"], "signal-name": ["signal"],
                  "signal-fields": ["signal"], cache: ["rerun"]};

function row(name, label, control) {
  return h("div", {class: "field", "data-row": name},
    h("label", {for: `op-${name}`}, label), control,
    h("span", {class: "field-error", "data-error-for": name, role: "alert"}));
}

function select(name, options, chosen, labelOf = (o) => o) {
  return h("select", {id: `op-${name}`, name},
    options.map((o) => h("option", {value: o, selected: o === chosen}, labelOf(o))));
}

function text(name, value, placeholder) {
  return h("input", {type: "text", id: `op-${name}`, name, value, placeholder});
}

/** A fresh id for the operation to start: the same one if Start is pressed again after
 * a lost answer (the gateway answers the same operation). */
function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `op-ui-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function previewView(preview, action) {
  const statuses = preview.byStatus.length
    ? preview.byStatus.map(([status, n]) => `${n} ${status}`).join(", ") : "none";
  return h("div", {id: "op-preview", "data-matched": preview.matched,
                   "data-to-act-on": preview.toActOn},
    h("p", {}, h("strong", {class: "matched"}, `${preview.matched} matched`), ", ",
      h("strong", {class: "to-act-on"}, `${preview.toActOn} to ${action}`),
      ` (by status: ${statuses})`),
    preview.overLimit ? note("error", "more runs match than one operation takes: narrow the filter")
      : null,
    preview.sample.length ? h("p", {class: "sample"}, "first: ",
      preview.sample.map((id, i) => [i ? ", " : "", link(runPath(id), id)])) : null);
}

/**
 * The bulk operation form, its filter filled from query (the address's
 * URLSearchParams, the runs list's filters); onStarted(doc) once an operation is
 * recorded (202, or 200 for the same id again).
 */
export function operationForm(query, onStarted) {
  const given = valuesFromQuery(query);
  const form = h("form", {id: "operation-form", class: "operation-form", novalidate: true},
    h("h2", {}, "Start a bulk operation"),
    row("action", "action", select("action", ACTIONS, "cancel")),
    h("fieldset", {}, h("legend", {}, "runs (all of these)"),
      row("status", "status", select("status", STATUSES, given.status, (s) => s || "any")),
      row("name", "name", text("name", given.name, "workflow name")),
      row("definition", "definition", text("definition", given.definition, "name or name@3")),
      row("label", "labels", text("label", given.label, "team=search env (all of them)")),
      row("paused", "paused", select("paused", ["", "true", "false"], given.paused,
                                     (p) => ({"": "either", true: "paused", false: "not paused"})[p]))),
    row("reason", "reason", text("reason", "", "recorded in each run's history")),
    row("signal-name", "signal name", text("signal-name", "", "go")),
    row("signal-fields", "signal fields (JSON)",
        h("textarea", {id: "op-signal-fields", name: "signal-fields", rows: 2, placeholder: "{}",
                       spellcheck: "false"})),
    row("cache", "cached nodes compute afresh",
        h("input", {type: "checkbox", id: "op-cache", name: "cache"})),
    h("div", {class: "actions"},
      h("button", {type: "submit", id: "op-preview-button"}, "Preview"), " ",
      h("button", {type: "button", id: "op-start", class: "danger", disabled: true}, "Start")),
    h("div", {id: "op-problem", class: "form-status", "aria-live": "polite"}),
    h("div", {id: "op-result", "aria-live": "polite"}));
  const el = (name) => form.elements.namedItem(name);
  const start = form.querySelector("#op-start");
  const problem = form.querySelector("#op-problem");
  const result = form.querySelector("#op-result");
  let ready = null;  // the body the preview was made for, with the id Start sends

  const values = () => ({
    action: el("action").value, status: el("status").value, name: el("name").value,
    definition: el("definition").value, label: el("label").value, paused: el("paused").value,
    reason: el("reason").value, signalName: el("signal-name").value,
    signalFields: el("signal-fields").value, cache: el("cache").checked});
  const clearErrors = () => {
    for (const span of form.querySelectorAll(".field-error")) replace(span);
    replace(problem);
  };
  const showErrors = (faults) => {
    for (const {field, message} of faults) {
      const span = field && form.querySelector(`[data-error-for="${field}"]`);
      if (span && !span.closest("[hidden]")) span.append(note("error", `${field}: ${message}`));
      else problem.append(note("error", field ? `${field}: ${message}` : message));
    }
  };
  const refused = (error) => {
    if (error instanceof FieldError) showErrors([{field: error.field, message: error.message}]);
    else if (error instanceof ApiError && error.status === 422) showErrors(fieldErrors(error.problem));
    else showErrors([{field: "", message: error.message}]);
  };
  const forget = () => {
    ready = null;
    start.disabled = true;
    replace(start, "Start");
  };
  const showRows = () => {
    for (const [name, actions] of Object.entries(ONLY_FOR)) {
      form.querySelector(`[data-row="${name}"]`).hidden = !actions.includes(el("action").value);
    }
  };
  showRows();

  form.addEventListener("input", () => {
    forget();
    replace(result);
  });
  form.addEventListener("change", showRows);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    forget();
    replace(result);
    try {
      const body = operationBody(values(), false);
      const answer = await postJson("/v1/operations", {...body, dry_run: true});
      const preview = previewOf(answer);
      replace(result, previewView(preview, body.action));
      if (preview.matched > 0 && !preview.overLimit) {
        ready = {...body, id: newId()};
        start.disabled = false;
        replace(start, `Start: ${body.action} ${preview.toActOn} of ${preview.matched}`);
      }
    } catch (error) {
      refused(error);
    }
  });
  start.addEventListener("click", async () => {
    if (!ready) return;
    clearErrors();
    start.disabled = true;
    try {
      const doc = await postJson("/v1/operations", ready);
      forget();
      replace(result, note("ok", `started ${doc.id}: ${doc.matched} runs`));
      onStarted(doc);
    } catch (error) {
      refused(error);
      start.disabled = ready === null;
    }
  });
  return form;
}
