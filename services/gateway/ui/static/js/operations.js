// Bulk operations (GET /v1/operations), newest first, read again every two seconds:
// each one's action, filter, state, progress and counts, and the runs skipped or
// failed with why (the first of them). Started from the form above the list (a dry run
// first: operation_form.js), or from the CLI, the client or the API.

import {getJson, poll} from "./api.js";
import {badge, h, link, note, replace, runPath, table, when} from "./dom.js";
import {operationForm} from "./operation_form.js";

const EVERY_MS = 2000;

function filterText(filter) {
  return Object.entries(filter || {})
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.join(",") : value}`).join(" ");
}

function reasonsList(reasons) {
  if (!reasons || !reasons.length) return "";
  return h("ul", {class: "reasons"}, reasons.slice(0, 5).map((r) => h("li", {},
    link(runPath(r.id), r.id), ` ${r.outcome}: ${r.reason}`)));
}

function rows(items) {
  return items.map((o) => h("tr", {"data-operation": o.id},
    h("td", {}, h("code", {}, o.id)), h("td", {}, o.action),
    h("td", {}, h("code", {}, filterText(o.filter))), h("td", {}, badge(o.state === "done"
      ? "succeeded" : "running", o.state)),
    h("td", {class: "progress"}, `${o.progress}/${o.matched}`),
    h("td", {class: "counts"},
      `${o.counts.done} done, ${o.counts.skipped} skipped, ${o.counts.failed} failed`),
    h("td", {}, reasonsList(o.reasons)), h("td", {}, when(o.created_at))));
}

/** Mount the operations page in root: the form (its filter filled from query, the
 * runs list's filters) and the list, read again at once when the form starts one. */
export function mount(root, params, query) {
  document.title = "Operations · Headwater";
  const problem = h("div", {id: "operations-problem"});
  const list = h("div", {id: "operations"});
  const load = async () => {
    const page = await getJson("/v1/operations", {limit: 50});
    replace(problem);
    replace(list, page.items.length ? table(
      ["operation", "action", "filter", "state", "acted on", "counts", "skipped or failed",
       "created"], rows(page.items), {class: "operations"})
      : h("p", {class: "muted"}, "No bulk operation yet: start one above (or headwater bulk --help)."));
  };
  const shown = (error) => replace(problem, note("error", error.message));
  replace(root, h("h1", {}, "Operations"), operationForm(query, () => load().catch(shown)),
          h("h2", {}, "Latest operations"), problem, list);
  return poll(load, EVERY_MS, shown);
}
