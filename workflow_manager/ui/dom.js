// Element builders. Every value reaches the page through textContent or setAttribute, never
// as markup: a payload holding "<script>" shows those characters and runs nothing. Nor can a
// value reorder what is shown: its bidi controls are shown as escapes (see `visible`).

const SVG_NS = "http://www.w3.org/2000/svg";
// Unicode's bidi controls: embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069),
// marks (U+200E, U+200F, U+061C). One U+202E in a value shows the rest of the line reversed.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// Attributes a person reads (tooltips, screen readers); the others are data for the code.
const SHOWN_ATTRIBUTES = new Set(["title", "aria-label", "alt", "placeholder"]);

/** `text` with each bidi control as a visible escape ("\u202E"): shown in the order it is. */
export function visible(text) {
  return text.replace(BIDI_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
}

function fill(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else {
      const text = value === true ? "" : String(value);
      node.setAttribute(name, SHOWN_ATTRIBUTES.has(name) ? visible(text) : text);
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(visible(String(child))));
  }
  return node;
}

/** An HTML element: h("a", {href: "/ui/"}, "text", otherNode). Strings become text nodes. */
export function h(tag, attrs = {}, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, like h(). */
export function s(tag, attrs = {}, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replace the children of `node` with `children`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return fill(node, {}, children);
}

/** Any JSON value as indented text (for a <pre>). */
export function prettyJson(value) {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

/** A <pre> holding a JSON value as text, or a muted note when there is none. */
export function jsonBlock(value, empty = "none") {
  if (value === undefined || value === null) return h("p", { class: "muted" }, empty);
  return h("pre", { class: "json" }, prettyJson(value));
}

/** A key/value list (<dl>); entries with an undefined value are left out. */
export function facts(entries) {
  const list = h("dl", { class: "facts" });
  for (const [key, value] of entries) {
    if (value === undefined || value === null) continue;
    list.append(h("div", {}, h("dt", {}, key), h("dd", {}, value)));
  }
  return list;
}

/** A table from column titles and rows (each row an array of cells: text or nodes). */
export function table(columns, rows, attrs = {}) {
  return h(
    "table",
    attrs,
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows),
  );
}

/** A notice line (role=alert for errors). */
export function notice(text, kind = "error") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}
