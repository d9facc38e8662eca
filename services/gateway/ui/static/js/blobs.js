// Values a run holds by reference: {"$blob": "sha256:...", "bytes": N, "href": ...}, as
// the gateway shows one that is too large for a record. The run page shows each as a
// link to its JSON (GET /v1/workflows/<id>/blobs/<digest>) with its size, never the
// value itself. With a token (session.js) the link fetches the blob with it and hands
// the browser the JSON as a download, since a plain link would carry no token.

import {getBlob} from "./api.js";
import {h} from "./dom.js";
import {token} from "./session.js";

const REF_KEYS = new Set(["$blob", "bytes", "href"]);

/** Whether value is a reference. */
export function isRef(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    && typeof value.$blob === "string" && /^sha256:[0-9a-f]{64}$/.test(value.$blob)
    && Number.isInteger(value.bytes) && Object.keys(value).every((k) => REF_KEYS.has(k));
}

/** Every reference in value (not those inside blobs), depth first. */
export function refsIn(value, found = []) {
  if (isRef(value)) {
    found.push(value);
  } else if (Array.isArray(value)) {
    for (const item of value) refsIn(item, found);
  } else if (value !== null && typeof value === "object") {
    for (const item of Object.values(value)) refsIn(item, found);
  }
  return found;
}

/** A byte count as people read it: 512 B, 1.5 KiB, 20.0 MiB. */
export function humanBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = n;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${n} B` : `${size.toFixed(1)} ${units[unit]}`;
}

async function download(ref, a) {
  a.dataset.state = "fetching";
  try {
    const url = URL.createObjectURL(await getBlob(ref.href));
    const save = h("a", {href: url, download: `${ref.$blob.replace(":", "-")}.json`});
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    a.dataset.state = "fetched";
  } catch (error) {
    a.dataset.state = `failed: ${error.message}`;
  }
}

/** A link to a reference's JSON, with its size. */
export function blobLink(ref) {
  const a = h("a", {class: "blob-link", href: ref.href || "#", "data-digest": ref.$blob,
    "data-bytes": String(ref.bytes), title: ref.$blob},
    `JSON by reference, ${humanBytes(ref.bytes)}`);
  a.addEventListener("click", (event) => {
    if (!token()) return;  // no auth: the link itself reads it
    event.preventDefault();
    download(ref, a);
  });
  return a;
}

/** The links of the references inside value (null when it holds none). */
export function blobLinks(value) {
  const refs = refsIn(value);
  if (!refs.length) return null;
  return h("ul", {class: "blob-links"}, refs.map((ref) => h("li", {}, blobLink(ref))));
}
