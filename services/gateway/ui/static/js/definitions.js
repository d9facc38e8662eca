// Registered definitions: the list (GET /v1/definitions, a page at a time), and one
// definition's version with its graph, spec and input schema, and a form that starts
// a run of it (POST /v1/workflows with the definition's name@version).

import {getJson, postJson} from "./api.js";
import {draw, MAX_DRAWN, update} from "./dag.js";
import {h, json, link, note, replace, runPath, table, when} from "./dom.js";
import {graphOf} from "./run_model.js";

function definitionPath(name, version) {
  const base = `/ui/definitions/${encodeURIComponent(name)}`;
  return version ? `${base}?version=${version}` : base;
}

/** Mount the definitions list in root. */
export async function mountList(root, params, query) {
  document.title = "Definitions · Headwater";
  replace(root, h("h1", {}, "Definitions"), h("p", {class: "muted"}, "Loading…"));
  try {
    const page = await getJson("/v1/definitions", {cursor: query.get("cursor")});
    const rows = page.items.map((d) => [link(definitionPath(d.name), d.name),
                                        String(d.version), h("code", {}, d.digest.slice(0, 12)),
                                        when(d.created_at)]);
    replace(root, h("h1", {}, "Definitions"),
      rows.length ? table(["name", "current version", "digest", "registered"], rows,
                          {class: "definitions"}) : h("p", {class: "muted"}, "None registered."),
      page.next_cursor ? h("p", {class: "pager"}, link(
        `/ui/definitions?cursor=${encodeURIComponent(page.next_cursor)}`, "more »")) : null);
  } catch (error) {
    replace(root, h("h1", {}, "Definitions"), note("error", error.message));
  }
}

function versionLinks(doc) {
  const links = [];
  for (let v = doc.latest; v >= 1 && links.length < 20; v -= 1) {
    links.push(v === doc.version ? h("strong", {}, `v${v}`) : link(definitionPath(doc.name, v), `v${v}`), " ");
  }
  return h("p", {class: "versions"}, "versions: ", links);
}

function runForm(doc, go) {
  const input = h("textarea", {name: "input", rows: 4, id: "run-input"}, "{}");
  const anyway = h("input", {type: "checkbox", name: "queue_anyway", id: "run-anyway"});
  const status = h("div", {class: "form-status", "aria-live": "polite"});
  const form = h("form", {id: "run-form"}, h("h2", {}, `Start a run of v${doc.version}`),
    h("div", {class: "field"}, h("label", {for: "run-input"}, "input (JSON)"), input),
    h("div", {class: "field"}, anyway, h("label", {for: "run-anyway"},
      " queue it even if no live worker serves a task")),
    h("button", {type: "submit"}, "Start"), status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = {definition: `${doc.name}@${doc.version}`,
                    input: input.value.trim() ? JSON.parse(input.value) : null};
      if (anyway.checked) body.queue_anyway = true;
      const started = await postJson("/v1/workflows", body);
      go(runPath(started.id));
    } catch (error) {
      replace(status, note("error", error.message));
    }
  });
  return form;
}

function graphView(spec) {
  const graph = graphOf(spec);
  if (!graph.length || graph.length > MAX_DRAWN) return null;
  const svg = draw(graph);
  update(svg, new Map(graph.map((n) => [n.id, {...n, shownStatus: "pending", total: null}])));
  return h("div", {class: "dag-box"}, svg);
}

/** Mount one definition (params.name; ?version=N) in root. */
export async function mountOne(root, params, query, go) {
  document.title = `${params.name} · Definitions · Headwater`;
  replace(root, h("h1", {}, "Definition ", h("code", {}, params.name)));
  try {
    const doc = await getJson(`/v1/definitions/${encodeURIComponent(params.name)}`,
                              {version: query.get("version")});
    root.append(versionLinks(doc),
      h("dl", {class: "facts"}, h("dt", {}, "version"), h("dd", {}, `${doc.version} of ${doc.latest}` +
                                  (doc.current !== undefined && doc.current !== doc.latest
                                    ? ` (current: ${doc.current}, rolled back)` : "")),
        h("dt", {}, "registered"), h("dd", {}, when(doc.created_at)),
        h("dt", {}, "digest"), h("dd", {}, h("code", {}, doc.digest)),
        doc.deleted ? [h("dt", {}, "deleted"), h("dd", {}, "yes: it starts no new runs")] : null),
      h("p", {}, link(`/ui/runs?definition=${encodeURIComponent(`${doc.name}@${doc.version}`)}`,
                      "its runs")),
      graphView(doc.workflow), doc.deleted ? null : runForm(doc, go),
      h("h2", {}, "Spec"), h("pre", {class: "spec"}, json(doc.workflow)),
      h("h2", {}, "Input schema"), h("pre", {}, doc.input_schema ? json(doc.input_schema) : "none"));
  } catch (error) {
    root.append(note("error", error.message));
  }
}
