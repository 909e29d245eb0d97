// Just enough of a DOM for the UI's element builders (dom.js) under node: elements with
// attributes, children, text and listeners. Import it before the UI modules that build nodes.

export class Node {
  constructor() {
    this.childNodes = [];
  }

  get textContent() {
    return this.childNodes.map((child) => child.textContent).join("");
  }
}

export class Text extends Node {
  constructor(data) {
    super();
    this.data = data;
  }

  get textContent() {
    return this.data;
  }
}

export class Element extends Node {
  constructor(tagName, namespaceURI) {
    super();
    this.tagName = tagName;
    this.namespaceURI = namespaceURI;
    this.attributes = new Map();
    this.listeners = new Map();
  }

  setAttribute(name, value) {
    this.attributes.set(name, String(value));
  }

  getAttribute(name) {
    return this.attributes.has(name) ? this.attributes.get(name) : null;
  }

  addEventListener(type, listener) {
    this.listeners.set(type, [...(this.listeners.get(type) || []), listener]);
  }

  append(...children) {
    this.childNodes.push(...children);
  }

  replaceChildren(...children) {
    this.childNodes = children;
  }

  /** Every element below this one (depth first) that `test` accepts. */
  findAll(test) {
    const found = [];
    for (const child of this.childNodes) {
      if (!(child instanceof Element)) continue;
      if (test(child)) found.push(child);
      found.push(...child.findAll(test));
    }
    return found;
  }
}

/** The elements below `root` whose class attribute holds `name`. */
export function byClass(root, name) {
  return root.findAll((el) => (el.getAttribute("class") || "").split(" ").includes(name));
}

globalThis.Node = Node;
globalThis.document = {
  createElement: (tag) => new Element(tag, "http://www.w3.org/1999/xhtml"),
  createElementNS: (ns, tag) => new Element(tag, ns),
  createTextNode: (data) => new Text(data),
};
