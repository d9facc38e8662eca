// The form that sends a signal to an open wait: one input per field the wait declares
// (text, number, a yes/no choice, or JSON for objects, arrays and "any"), posted to
// POST /v1/workflows/{id}/signals/{name}. A refusal shows the gateway's reason.

import {ApiError, postJson, workflowPath} from "./api.js";
import {h, note, replace} from "./dom.js";

function input(field, id) {
  const common = {id, name: field.name, "data-field": field.name, required: field.required};
  if (field.type === "boolean") {
    return h("select", common,
      field.required ? null : h("option", {value: ""}, "(not sent)"),
      h("option", {value: "true"}, "true"), h("option", {value: "false"}, "false"));
  }
  if (field.type === "number" || field.type === "integer") {
    return h("input", {...common, type: "number", step: field.type === "integer" ? "1" : "any"});
  }
  if (field.type === "string") return h("input", {...common, type: "text"});
  return h("textarea", {...common, rows: 2, placeholder: "JSON"});
}

/** The value typed for field, or undefined when left empty; throws on bad JSON. */
function valueOf(field, el) {
  const raw = el.value;
  if (raw === "") return undefined;
  if (field.type === "boolean") return raw === "true";
  if (field.type === "number" || field.type === "integer") return Number(raw);
  if (field.type === "string") return raw;
  try {
    return JSON.parse(raw);
  } catch {
    throw new Error(`${field.name}: not JSON (${raw.slice(0, 40)})`);
  }
}

/**
 * A form for the open wait ({node, index, signal}) of run id; fields as signalFields()
 * gives them (none declared: a free JSON object). onSent() after a 202.
 */
export function signalForm(id, wait, fields, onSent) {
  const where = wait.index === null || wait.index === undefined ? wait.node : `${wait.node}[${wait.index}]`;
  const status = h("div", {class: "form-status", "aria-live": "polite"});
  const rows = fields.map((field) => {
    const inputId = `sig-${wait.signal}-${wait.index ?? "x"}-${field.name}`;
    return h("div", {class: "field"},
      h("label", {for: inputId}, field.name,
        h("span", {class: "muted"}, ` ${field.type}${field.required ? "" : ", optional"}`)),
      input(field, inputId));
  });
  const free = fields.length ? null : h("textarea", {name: "fields", rows: 2, placeholder: "{}",
                                                     "data-field": "*"});
  const form = h("form", {class: "signal-form", "data-signal": wait.signal,
                          "data-index": wait.index ?? ""},
    h("h3", {}, "Signal ", h("code", {}, wait.signal), " for ", h("code", {}, where)),
    rows, free ? h("div", {class: "field"}, h("label", {}, "fields (JSON object)"), free) : null,
    h("button", {type: "submit"}, `Send ${wait.signal}`), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const body = {fields: collect(form, fields, free)};
      if (wait.index !== null && wait.index !== undefined) body.index = wait.index;
      const sent = await postJson(workflowPath(id, `/signals/${encodeURIComponent(wait.signal)}`),
                                  body);
      replace(status, note("ok", `sent (signal id ${sent.signal_id})`));
      onSent();
    } catch (error) {
      replace(status, note("error", error instanceof ApiError ? error.message : String(error.message)));
      button.disabled = false;
    }
  });
  return form;
}

function collect(form, fields, free) {
  if (free) return free.value.trim() ? JSON.parse(free.value) : {};
  const out = {};
  for (const field of fields) {
    const value = valueOf(field, form.querySelector(`[data-field="${CSS.escape(field.name)}"]`));
    if (value !== undefined) out[field.name] = value;
  }
  return out;
}
