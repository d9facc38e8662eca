// Schedules: the list (GET /v1/schedules), read again every five seconds, and one
// schedule with its recent runs (linked) and its pause and resume buttons.

import {getJson, poll, postJson} from "./api.js";
import {badge, h, link, note, replace, runPath, table, when} from "./dom.js";

const EVERY_MS = 5000;

function schedulePath(name) {
  return `/ui/schedules/${encodeURIComponent(name)}`;
}

function definitionOf(doc) {
  const d = doc.definition || {};
  return d.name ? `${d.name}${d.version ? `@${d.version}` : ""}` : "";
}

/** Mount the schedules list in root. */
export function mountList(root) {
  document.title = "Schedules · Headwater";
  const problem = h("div", {id: "schedules-problem"});
  const list = h("div", {id: "schedules"});
  replace(root, h("h1", {}, "Schedules"), problem, list);
  return poll(async () => {
    const page = await getJson("/v1/schedules", {limit: 500});
    replace(problem);
    const rows = page.items.map((sc) => h("tr", {"data-schedule": sc.name},
      h("td", {}, link(schedulePath(sc.name), sc.name)),
      h("td", {}, badge(sc.paused ? "paused" : sc.status)),
      h("td", {}, h("code", {}, sc.cron || "")), h("td", {}, sc.timezone || ""),
      h("td", {}, definitionOf(sc)), h("td", {}, when(sc.next_fire_at)),
      h("td", {}, when(sc.last_fire_at)),
      h("td", {}, sc.last_run_id ? link(runPath(sc.last_run_id), sc.last_run_id) : ""),
      h("td", {}, `${sc.fired} fired, ${sc.skipped} skipped`)));
    replace(list, rows.length ? table(["name", "state", "cron", "timezone", "definition",
                                       "next fire", "last fire", "last run", "counts"], rows,
                                      {class: "schedules"})
      : h("p", {class: "muted"}, "No schedules."));
  }, EVERY_MS, (error) => replace(problem, note("error", error.message)));
}

function controls(name, paused, done) {
  const status = h("span", {class: "form-status", "aria-live": "polite"});
  const button = h("button", {type: "button", id: "schedule-toggle"}, paused ? "Resume" : "Pause");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await postJson(`/v1/schedules/${encodeURIComponent(name)}/${paused ? "resume" : "pause"}`);
      replace(status, paused ? " resume requested" : " pause requested");
      done();
    } catch (error) {
      replace(status, note("error", error.message));
      button.disabled = false;
    }
  });
  return h("p", {}, button, status);
}

function details(doc, refresh) {
  const term = (k, v) => [h("dt", {}, k), h("dd", {}, v ?? "")];
  return [
    h("dl", {class: "facts"}, term("state", badge(doc.paused ? "paused" : doc.status)),
      term("cron", h("code", {}, doc.cron || "")), term("timezone", doc.timezone),
      term("definition", definitionOf(doc)), term("overlap", doc.overlap),
      term("catch-up", doc.catchup), term("next fire", when(doc.next_fire_at)),
      term("last fire", when(doc.last_fire_at)), term("fired", String(doc.fired)),
      term("skipped", String(doc.skipped)),
      term("workflow", link(runPath(doc.workflow_id), doc.workflow_id))),
    controls(doc.name, doc.paused, refresh),
    h("h2", {}, "Recent runs"),
    doc.runs?.length ? table(["run", "status", "created"], doc.runs.map((r) => [
      link(runPath(r.workflow_id), r.workflow_id), badge(r.status), when(r.created_at)]),
    {class: "runs"}) : h("p", {class: "muted"}, "No runs yet."),
  ];
}

/** Mount one schedule (params.name) in root. */
export function mountOne(root, params) {
  document.title = `${params.name} · Schedules · Headwater`;
  const problem = h("div");
  const body = h("div", {id: "schedule"});
  replace(root, h("h1", {}, "Schedule ", h("code", {}, params.name)), problem, body);
  let again = () => {};
  const stop = poll(async () => {
    const doc = await getJson(`/v1/schedules/${encodeURIComponent(params.name)}`);
    replace(problem);
    replace(body, details(doc, () => again()));
  }, EVERY_MS, (error) => replace(problem, note("error", error.message)));
  again = () => setTimeout(() => getJson(`/v1/schedules/${encodeURIComponent(params.name)}`)
    .then((doc) => replace(body, details(doc, () => again())), () => {}), 500);
  return stop;
}
