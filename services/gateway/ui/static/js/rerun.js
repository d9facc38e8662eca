// Running an ended run again: a "Rerun" button (for a failed or cancelled run) opens a
// dialog with the run's input (JSON, editable) and where to start: from the failed
// nodes (POST /v1/workflows/{id}/rerun) or from a chosen node of the spec (POST
// /v1/workflows/{id}/reset); the new run's page is shown once it is accepted. The
// input is sent only when it was changed (the gateway reuses the run's own otherwise).

import {postJson, workflowPath} from "./api.js";
import {h, json, note, replace, runPath} from "./dom.js";

export const RERUNNABLE = new Set(["failed", "cancelled"]);

/** The request the dialog makes: {path, body}; throws when the input is not JSON or a
 * reset names no node. */
export function rerunRequest(id, original, text, mode, node) {
  let input;
  try {
    input = JSON.parse(text);
  } catch (error) {
    throw new Error(`the input is not JSON: ${error.message}`);
  }
  const body = JSON.stringify(input) === JSON.stringify(original ?? null) ? {} : {input};
  if (mode === "reset") {
    if (!node) throw new Error("choose the node to reset to");
    return {path: workflowPath(id, "/reset"), body: {node, ...body}};
  }
  return {path: workflowPath(id, "/rerun"), body};
}

function dialogFor(id, doc, nodes, go) {
  const text = h("textarea", {id: "rerun-input", name: "input", rows: 8, spellcheck: "false"});
  text.value = json(doc.input ?? null, 1e7);
  const radio = (value, label, checked) => h("label", {class: "choice"},
    h("input", {type: "radio", name: "mode", value, checked}), ` ${label}`);
  const node = h("select", {id: "rerun-node", name: "node", "aria-label": "node"},
    h("option", {value: ""}, "(choose a node)"), nodes.map((n) => h("option", {value: n}, n)));
  const status = h("div", {class: "form-status", "aria-live": "polite"});
  const send = h("button", {type: "submit"}, "Start the new run");
  const dismiss = h("button", {type: "button", class: "rerun-close"}, "Close");
  const form = h("form", {id: "rerun-form", method: "dialog"},
    h("h2", {}, "Rerun ", h("code", {}, id)),
    h("label", {for: "rerun-input"}, "input (JSON)"), text,
    h("fieldset", {}, h("legend", {}, "start"),
      radio("failed", "from the failed nodes", true),
      h("div", {}, radio("reset", "reset to node", false), " ", node)),
    h("div", {class: "actions"}, send, dismiss), status);
  const dialog = h("dialog", {id: "rerun-dialog"}, form);
  node.addEventListener("change", () => {
    form.querySelector('input[value="reset"]').checked = true;
  });
  dismiss.addEventListener("click", () => dialog.close());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    send.disabled = true;
    try {
      const mode = form.elements.mode.value;
      const request = rerunRequest(id, doc.input, text.value, mode, node.value);
      const answer = await postJson(request.path, request.body);
      replace(status, note("ok", `started ${answer.id}`));
      dialog.close();
      go(runPath(answer.id));
    } catch (error) {
      replace(status, note("error", error.message));
      send.disabled = false;
    }
  });
  return dialog;
}

/** The Rerun button and its dialog for doc (an ended run), nodes: the spec's node ids. */
export function rerunButton(id, doc, nodes, go) {
  const dialog = dialogFor(id, doc, nodes, go);
  const button = h("button", {type: "button", id: "rerun-button"}, "Rerun…");
  button.addEventListener("click", () => dialog.showModal());
  return h("div", {class: "rerun"}, button, dialog);
}
