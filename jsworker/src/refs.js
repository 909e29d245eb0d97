// Payload references (docs/protocol.md, "Payloads by reference"), pure: what a reference object
// is, what makes one well formed, and finding them at any depth of a body.
//
//   {"$ref": "wm://<store>/<key>", "sha256": "<64 lowercase hex>", "size": <bytes>}

/** The header of a message whose body holds references: how many `$ref` members it has. */
export const HEADER_PAYLOAD_REFS = 'x-payload-refs';
export const REF_SCHEME = 'wm://';
export const MAX_KEY_CHARS = 512;
const STORE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const KEY_SEGMENT = /^[A-Za-z0-9._-]+$/;
const SHA256 = /^[0-9a-f]{64}$/;

/** Whether `name` is a store name the protocol allows: `[a-z0-9][a-z0-9_-]*`, at most 63. */
export function validStoreName(name) {
  return typeof name === 'string' && STORE_NAME.test(name);
}

/** Whether `segment` is one key segment: `[A-Za-z0-9._-]+`, neither `.` nor `..`. */
export function validKeySegment(segment) {
  return typeof segment === 'string' && KEY_SEGMENT.test(segment) && segment !== '.' && segment !== '..';
}

/** Whether `key` is a key the protocol allows (a file store maps it to a path, so no `..`). */
export function validKey(key) {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_CHARS) return false;
  return key.split('/').every(validKeySegment);
}

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The reference `value` is — `{uri, store, key, sha256, size}` — or undefined when it is not an
 * object with exactly the members `$ref` (a string starting `wm://`), `sha256` and `size`.
 * A malformed one is still returned (its fields as given), so that it fails loudly when
 * resolved instead of reaching a handler as data; `referenceProblem` says what is wrong.
 */
export function asReference(value) {
  if (!isObject(value) || Buffer.isBuffer(value)) return undefined;
  const members = Object.keys(value);
  if (members.length !== 3 || !['$ref', 'sha256', 'size'].every((member) => Object.hasOwn(value, member))) {
    return undefined;
  }
  const uri = value.$ref;
  if (typeof uri !== 'string' || !uri.startsWith(REF_SCHEME)) return undefined;
  const rest = uri.slice(REF_SCHEME.length);
  const slash = rest.indexOf('/');
  const store = slash < 0 ? rest : rest.slice(0, slash);
  const key = slash < 0 ? '' : rest.slice(slash + 1);
  return { uri, store, key, sha256: value.sha256, size: value.size };
}

/** What makes `ref` malformed, as a phrase; undefined when it is well formed. */
export function referenceProblem(ref) {
  if (!validStoreName(ref.store)) {
    return `store name ${JSON.stringify(ref.store)} is not [a-z0-9][a-z0-9_-]* (at most 63 characters)`;
  }
  if (!validKey(ref.key)) {
    return `key ${JSON.stringify(ref.key)} is not /-joined segments of [A-Za-z0-9._-] (no "." or "..", at most ${MAX_KEY_CHARS} characters)`;
  }
  if (typeof ref.sha256 !== 'string' || !SHA256.test(ref.sha256)) {
    return `sha256 ${JSON.stringify(ref.sha256)} is not 64 lowercase hex digits`;
  }
  if (!Number.isSafeInteger(ref.size) || ref.size < 0) {
    return `size ${JSON.stringify(ref.size)} is not a whole number of bytes`;
  }
  return undefined;
}

/** The reference object for `size` bytes with digest `sha256` under `key` in store `store`. */
export function makeReference(store, key, sha256, size) {
  return { $ref: `${REF_SCHEME}${store}/${key}`, sha256, size };
}

/**
 * Every reference inside `body` (not `body` itself), at any depth, as `{ref, parent, slot}`:
 * `parent[slot]` holds it, so a resolver can put the value in its place.
 */
export function findReferences(body) {
  const found = [];
  // Iterative, so a deep body cannot overflow the stack.
  const pending = [body];
  while (pending.length > 0) {
    const parent = pending.pop();
    const slots = Array.isArray(parent) ? parent.keys() : Object.keys(parent);
    for (const slot of slots) {
      const child = parent[slot];
      if (child === null || typeof child !== 'object') continue;
      const ref = asReference(child);
      if (ref !== undefined) found.push({ ref, parent, slot });
      else pending.push(child);
    }
  }
  return found;
}

/** How many references `body` holds at any depth (the value of `x-payload-refs`). */
export function countReferences(body) {
  return findReferences(body).length;
}
