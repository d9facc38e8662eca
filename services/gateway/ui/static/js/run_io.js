// What went into a run and what came out: its input (pretty JSON with a copy button),
// then its output once it succeeded, or its error, with the failure the document names
// (node, item, attempt, error type, message, traceback) and a button opening that node.

import {blobLink, blobLinks, isRef} from "./blobs.js";
import {h, json, note, replace} from "./dom.js";
import {taskKey} from "./run_model.js";

/** Put text on the clipboard (the Clipboard API, or the selection's copy where the page
 * is not a secure context); resolves to whether it worked. */
async function copyText(text, pre) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(pre);
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return document.execCommand("copy");
  }
}

/** A <pre> of value as JSON with a copy button: {id}: the pre's id. */
export function jsonBlock(id, value) {
  const text = json(value, 1e7);
  const pre = h("pre", {id, class: "json"}, json(value));
  const said = h("span", {class: "muted copy-state", "aria-live": "polite"});
  const button = h("button", {type: "button", class: "copy", "data-copies": id}, "Copy");
  button.addEventListener("click", async () => {
    replace(said, (await copyText(text, pre)) ? " copied" : " select and copy by hand");
  });
  return h("div", {class: "json-block"}, h("div", {class: "copy-bar"}, button, said), pre);
}

function failureView(failure, onOpen) {
  if (!failure) return null;
  const where = taskKey(failure.node, failure.index);
  const open = h("button", {type: "button", class: "open-failed"}, `Open ${where}`);
  open.addEventListener("click", () => onOpen(failure.node, failure.index ?? null));
  return h("div", {id: "run-failure", "data-node": failure.node},
    h("p", {}, "failed in ", h("code", {}, where),
      failure.attempt ? ` (attempt ${failure.attempt}) ` : " ", open),
    h("pre", {class: "error"}, failure.error_type ? `${failure.error_type}: ${failure.message}`
      : failure.message || ""),
    failure.traceback ? h("details", {class: "traceback"}, h("summary", {}, "Traceback"),
      h("pre", {class: "traceback"}, failure.traceback)) : null);
}

/** A value of the run: a link to its JSON when it is held by reference (with its size),
 * else the JSON ({id}: the block's id) and a link for each reference inside it. */
function valueView(id, value, block) {
  if (isRef(value)) return h("p", {id: `${id}-blob`, class: "blob"}, blobLink(value));
  return h("div", {}, block(id, value), blobLinks(value));
}

/** The run's input, and its output or error; input is the document's (or the events'). */
export function ioView(doc, input, onOpen) {
  const parts = [h("h2", {}, "Input"), valueView("run-input-json", input ?? null, jsonBlock)];
  if (doc.error || doc.failure) {
    parts.push(h("h2", {}, doc.status === "cancelled" ? "Cancelled" : "Error"),
      doc.error ? h("pre", {class: "error", id: "run-error"}, doc.error) : null,
      failureView(doc.failure, onOpen));
  } else if (doc.status === "succeeded") {
    parts.push(h("h2", {}, "Output"), valueView("run-output", doc.output,
      (id, value) => h("pre", {id}, json(value))));
  } else {
    parts.push(note("muted", "no output yet"));
  }
  return h("div", {class: "result"}, parts);
}
