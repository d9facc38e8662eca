// Building the page: elements from plain values (text is always set as text, never
// parsed as HTML), and the formats every view shares (times, durations, statuses).

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** An HTML element: h("a", {href: "/ui/"}, "text", otherElement). */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, as h() does for HTML. */
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replace the children of el with the given ones. */
export function replace(el, ...children) {
  el.replaceChildren();
  return fill(el, {}, children);
}

/** A status as a coloured badge (its colour comes from the CSS class st-<status>). */
export function badge(status, text) {
  const value = status || "unknown";
  return h("span", {class: `badge st-${value}`, "data-status": value}, text || value);
}

/** The browser's time zone as shown after a time: "UTC", or its short name ("CET",
 * "GMT+2"), or its IANA name when the browser has no short one. */
function zoneName(date) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  if (zone === "UTC" || zone === "Etc/UTC") return "UTC";
  const part = new Intl.DateTimeFormat("en-GB", {timeZoneName: "short"}).formatToParts(date)
    .find((p) => p.type === "timeZoneName");
  return part?.value || zone || "local time";
}

/** An ISO 8601 time or ms since the epoch as the browser's date and time with its
 * zone ("2026-12-05 14:03:07.512 UTC"), "" for none. */
export function when(value) {
  if (value === null || value === undefined || value === "") return "";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} `
    + `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
    + `.${pad(date.getMilliseconds(), 3)} ${zoneName(date)}`;
}

/** A time (ms or ISO) as a <time> element: its zone-named text, its ISO instant in
 * datetime. */
export function timeEl(value) {
  const text = when(value);
  if (!text) return "";
  const date = new Date(value);
  return h("time", {datetime: Number.isNaN(date.getTime()) ? null : date.toISOString()}, text);
}

/** A duration in ms as "850 ms", "3.25 s", "4 min 5 s", "" for none. */
export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  const minutes = Math.floor(ms / 60000);
  return `${minutes} min ${Math.round((ms - minutes * 60000) / 1000)} s`;
}

/** The time between two instants (ISO strings or ms), in ms, or null. */
export function between(start, end) {
  if (!start || !end) return null;
  return new Date(end).getTime() - new Date(start).getTime();
}

/** Any JSON value as indented text, cut at max characters. */
export function json(value, max = 20000) {
  const text = value === undefined ? "" : JSON.stringify(value, null, 2);
  return text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text;
}

/** A table: headers, then rows of cells (values or elements). */
export function table(headers, rows, attrs = {}) {
  return h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows.map((row) => (row instanceof Node ? row
      : h("tr", {}, row.map((cell) => h("td", {}, cell)))))));
}

/** A link to a view of the UI (handled by the router, without a reload). */
export function link(path, text, attrs = {}) {
  return h("a", {href: path, ...attrs}, text);
}

/** The UI's path of a run. */
export function runPath(id) {
  return `/ui/runs/${encodeURIComponent(id)}`;
}

/** A message line: kind is "error", "ok" or "muted". */
export function note(kind, text) {
  return h("p", {class: `note ${kind}`, role: kind === "error" ? "alert" : null}, text);
}
