// The UI's router: one page for every view, picked from the address (History API).
// Links inside /ui/ change the view without a reload; back and forward work. Each view
// is mounted into a fresh container and returns what stops it (its polls and streams),
// which is called when another view replaces it.

import * as definitions from "./definitions.js";
import {h, note, replace} from "./dom.js";
import * as operations from "./operations.js";
import * as queues from "./queues.js";
import * as run from "./run.js";
import * as runs from "./runs.js";
import * as schedules from "./schedules.js";
import * as signin from "./signin.js";

const ROUTES = [
  [/^\/ui\/?$/, "runs", runs.mount],
  [/^\/ui\/runs\/?$/, "runs", runs.mount],
  [/^\/ui\/runs\/(?<id>[^/]+)$/, "runs", run.mount],
  [/^\/ui\/queues\/?$/, "queues", queues.mount],
  [/^\/ui\/definitions\/?$/, "definitions", definitions.mountList],
  [/^\/ui\/definitions\/(?<name>[^/]+)$/, "definitions", definitions.mountOne],
  [/^\/ui\/schedules\/?$/, "schedules", schedules.mountList],
  [/^\/ui\/schedules\/(?<name>[^/]+)$/, "schedules", schedules.mountOne],
  [/^\/ui\/operations\/?$/, "operations", operations.mount],
];

let stopView = null;

/** The path's parts, percent-decoded; null when one is not a valid escape (%E0%A4%A). */
function decoded(groups) {
  const out = {};
  try {
    for (const [key, value] of Object.entries(groups || {})) out[key] = decodeURIComponent(value);
  } catch (error) {
    if (error instanceof URIError) return null;
    throw error;
  }
  return out;
}

function render() {
  if (signin.signingIn()) return;  // the sign-in form stays until a token is taken
  if (stopView) stopView();
  stopView = null;
  const main = document.getElementById("main");
  const view = h("div", {class: "view"});
  replace(main, view);
  const path = location.pathname;
  for (const [pattern, section, mount] of ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    for (const a of document.querySelectorAll("#nav a")) {
      a.classList.toggle("active", a.dataset.section === section);
    }
    const params = decoded(match.groups);
    if (params === null) break;
    const stop = mount(view, params, new URLSearchParams(location.search), go);
    stopView = typeof stop === "function" ? stop : null;
    return;
  }
  replace(view, h("h1", {}, "Not found"), note("error", `The UI has no page ${path}.`));
}

/** Show the view at path (within /ui/), adding it to the history. */
export function go(path) {
  history.pushState(null, "", path);
  render();
}

document.addEventListener("click", (event) => {
  const a = event.target.closest("a[href]");
  if (!a || a.target || a.hasAttribute("download") || event.button !== 0
      || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith("/ui/")
      || url.pathname.startsWith("/ui/assets/")) return;
  event.preventDefault();
  if (url.pathname + url.search !== location.pathname + location.search) go(url.pathname + url.search);
});
window.addEventListener("popstate", render);
signin.start(render, () => {
  if (stopView) stopView();
  stopView = null;
});
