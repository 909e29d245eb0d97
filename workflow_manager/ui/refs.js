// Payload references in the JSON the page shows: a value stored once in a payload store travels
// as {"$ref": "wm://<store>/<key>", "sha256": ..., "size": ...} (docs/protocol.md, "Payloads by
// reference"). The page shows such an object as its size with a link to download the value
// (GET /api/payloads/...), never the value itself: it may be a hundred megabytes. Built as text
// nodes and attributes like everything else (dom.js), so no part of a reference is markup.

import { h, prettyJson } from "./dom.js";

const SCHEME = "wm://";
const STORE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const SEGMENT = /^[A-Za-z0-9._-]+$/;
const SHA256 = /^[0-9a-f]{64}$/;
const UNITS = ["kB", "MB", "GB", "TB", "PB"];

/** The reference `value` is ({uri, store, key, sha256, size}), or null when it is none: an
 * object with exactly the members $ref (a string starting wm://), sha256 and size. */
export function refOf(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  if (keys.length !== 3 || !("$ref" in value) || !("sha256" in value) || !("size" in value)) return null;
  const uri = value.$ref;
  if (typeof uri !== "string" || !uri.startsWith(SCHEME)) return null;
  const rest = uri.slice(SCHEME.length);
  const slash = rest.indexOf("/");
  const store = slash < 0 ? rest : rest.slice(0, slash);
  const key = slash < 0 ? "" : rest.slice(slash + 1);
  return { uri, store, key, sha256: value.sha256, size: value.size };
}

/** A byte count in decimal units: "512 B", "1.5 kB", "100.0 MB". */
export function humanSize(bytes) {
  if (typeof bytes !== "number" || !Number.isFinite(bytes) || bytes < 0) return "unknown size";
  if (bytes < 1000) return `${bytes} B`;
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(1)} ${UNITS[unit]}`;
}

/** "stored value · 100.0 MB · sha256 9f86d081…": what the page shows for a reference. */
export function refLabel(ref) {
  const digest = typeof ref.sha256 === "string" ? `${ref.sha256.slice(0, 8)}…` : "none";
  return `stored value · ${humanSize(ref.size)} · sha256 ${digest}`;
}

/** Where the value a reference names is downloaded, or null when the reference is malformed
 * (a store or key the protocol does not allow: nothing to link to). */
export function downloadHref(ref) {
  const segments = ref.key.split("/");
  if (!STORE.test(ref.store) || ref.key.length > 512) return null;
  if (!segments.every((s) => SEGMENT.test(s) && s !== "." && s !== "..")) return null;
  const query = new URLSearchParams();
  if (SHA256.test(String(ref.sha256))) query.set("sha256", ref.sha256);
  if (Number.isInteger(ref.size) && ref.size >= 0) query.set("size", String(ref.size));
  const q = query.toString();
  return `/api/payloads/${ref.store}/${segments.join("/")}${q ? `?${q}` : ""}`;
}

/** True when `value` holds a reference at any depth. */
export function holdsRef(value) {
  if (value === null || typeof value !== "object") return false;
  if (refOf(value)) return true;
  return Object.values(value).some(holdsRef);
}

function refNode(ref) {
  const href = downloadHref(ref);
  return h("span", { class: "payload-ref", "data-ref": ref.uri, title: ref.uri },
    refLabel(ref),
    href ? [" · ", h("a", { href, download: "", "data-link": "payload-download" }, "download")] : " · malformed reference");
}

/** `value` as indented JSON (as JSON.stringify(value, null, 2) lays it out), each reference in
 * it a node: text pieces and nodes, in order. */
export function jsonParts(value, indent = "") {
  const ref = refOf(value);
  if (ref) return [refNode(ref)];
  if (value === null || typeof value !== "object") return [JSON.stringify(value) ?? "null"];
  const inner = `${indent}  `;
  const entries = Array.isArray(value) ? value.map((v) => [null, v]) : Object.entries(value);
  if (!entries.length) return [Array.isArray(value) ? "[]" : "{}"];
  const parts = [Array.isArray(value) ? "[\n" : "{\n"];
  entries.forEach(([key, item], i) => {
    parts.push(key === null ? inner : `${inner}${JSON.stringify(key)}: `);
    parts.push(...jsonParts(item, inner));
    parts.push(i < entries.length - 1 ? ",\n" : "\n");
  });
  parts.push(`${indent}${Array.isArray(value) ? "]" : "}"}`);
  return parts;
}

function merged(parts) {
  const out = [];
  for (const part of parts) {
    if (typeof part === "string" && typeof out[out.length - 1] === "string") out[out.length - 1] += part;
    else out.push(part);
  }
  return out;
}

/** A <pre> holding a JSON value as text, its references shown by size with a download link;
 * a muted note when there is no value. */
export function dataBlock(value, empty = "none") {
  if (value === undefined || value === null) return h("p", { class: "muted" }, empty);
  if (!holdsRef(value)) return h("pre", { class: "json" }, prettyJson(value));
  return h("pre", { class: "json" }, merged(jsonParts(value)));
}
