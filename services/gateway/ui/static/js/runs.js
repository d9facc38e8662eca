// The runs list: newest first, filtered by status, name, definition and labels (kept in the
// address, so a filtered list can be bookmarked), a page at a time (the API's cursor),
// read again every two seconds so that statuses change on screen. "Act on these…" opens
// the bulk operation form with the same filters.

import {getJson, poll} from "./api.js";
import {badge, h, link, note, replace, runPath, table, when} from "./dom.js";
import {labelList} from "./run_views.js";

const EVERY_MS = 2000;
const STATUSES = ["", "accepted", "running", "succeeded", "failed", "cancelled"];
const FILTERS = ["status", "name", "definition"];

function filterForm(query, go) {
  const value = (name) => query.get(name) || "";
  const status = h("select", {name: "status", id: "filter-status"},
    STATUSES.map((s) => h("option", {value: s, selected: s === value("status")}, s || "any")));
  const text = (name, hint) => h("input", {type: "text", name, id: `filter-${name}`,
                                           value: value(name), placeholder: hint});
  const form = h("form", {class: "filters", id: "run-filters"},
    h("label", {for: "filter-status"}, "status"), status,
    h("label", {for: "filter-name"}, "name"), text("name", "workflow name"),
    h("label", {for: "filter-definition"}, "definition"), text("definition", "name or name@3"),
    h("label", {for: "filter-label"}, "labels"),
    h("input", {type: "text", name: "label", id: "filter-label",
                value: query.getAll("label").map(asPair).join(" "),
                placeholder: "team=search env (all of them)"}),
    h("button", {type: "submit"}, "Filter"),
    h("a", {href: "/ui/runs", class: "button-link"}, "Clear"),
    h("a", {href: bulkPath(query), class: "button-link", id: "bulk-link"}, "Act on these…"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const name of FILTERS) {
      const field = form.elements[name].value.trim();
      if (field) next.set(name, field);
    }
    for (const pair of form.elements.label.value.trim().split(/\s+/)) {
      if (pair) next.append("label", asSelector(pair));
    }
    go(`/ui/runs${String(next) ? `?${next}` : ""}`);
  });
  return form;
}

// The operations page with its form's filter set to the list's (applied) filters.
function bulkPath(query) {
  const here = new URLSearchParams(query);
  here.delete("cursor");
  return `/ui/operations${String(here) ? `?${here}` : ""}`;
}

// A label selector is key:value (key: any value) in the API; people write key=value.
const asSelector = (pair) => pair.replace("=", ":");
const asPair = (selector) => selector.replace(":", "=");

function rows(items) {
  return items.map((r) => h("tr", {"data-run": r.id},
    h("td", {}, link(runPath(r.id), r.id)),
    h("td", {}, r.name || ""),
    h("td", {}, badge(r.status)),
    h("td", {}, labelList(r.labels) || ""),
    h("td", {}, r.definition ? `${r.definition.name}@${r.definition.version}` : ""),
    h("td", {}, when(r.created_at)),
    h("td", {}, when(r.updated_at)),
    h("td", {class: "error-cell"}, r.error ? r.error.slice(0, 160) : "")));
}

function pager(query, nextCursor) {
  const here = new URLSearchParams(query);
  here.delete("cursor");
  const links = [];
  if (query.get("cursor")) links.push(link(`/ui/runs${String(here) ? `?${here}` : ""}`, "« newest"));
  if (nextCursor) {
    here.set("cursor", nextCursor);
    links.push(link(`/ui/runs?${here}`, "older »", {id: "older"}));
  }
  return h("p", {class: "pager"}, links);
}

/** Mount the runs list in root; query is the address's URLSearchParams. */
export function mount(root, params, query, go) {
  document.title = "Runs · Headwater";
  const problem = h("div", {id: "runs-problem"});
  const list = h("div", {id: "runs"});
  replace(root, h("h1", {}, "Runs"), filterForm(query, go), problem, list);
  const wanted = {limit: 50, cursor: query.get("cursor")};
  for (const name of FILTERS) wanted[name] = query.get(name);
  wanted.label = query.getAll("label");
  return poll(async () => {
    const page = await getJson("/v1/workflows", wanted);
    replace(problem);
    replace(list, page.items.length ? table(
      ["run", "name", "status", "labels", "definition", "created", "updated", "error"], rows(page.items),
      {class: "runs"}) : h("p", {class: "muted"}, "No runs match."), pager(query, page.next_cursor));
  }, EVERY_MS, (error) => replace(problem, note("error", error.message)));
}
