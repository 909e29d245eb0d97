// Element builders. Every value reaches the page through textContent or setAttribute, never
// as markup: a payload holding "<script>" shows those characters and runs nothing.

const SVG_NS = "http://www.w3.org/2000/svg";

function fill(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
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
