/** A reference object as a message carries it. */
export interface PayloadReference {
  $ref: string;
  sha256: string;
  size: number;
}

/** A reference taken apart: `wm://<store>/<key>`, its digest and size (as found, unchecked). */
export interface ParsedReference {
  uri: string;
  store: string;
  key: string;
  sha256: unknown;
  size: unknown;
}

/** Where a reference was found: `parent[slot]` holds it. */
export interface FoundReference {
  ref: ParsedReference;
  parent: Record<string, unknown> | unknown[];
  slot: string | number;
}

export const HEADER_PAYLOAD_REFS: 'x-payload-refs';
export const REF_SCHEME: 'wm://';
export const MAX_KEY_CHARS: number;
/** Whether `name` is a store name the protocol allows. */
export function validStoreName(name: unknown): boolean;
/** Whether `segment` is one key segment: `[A-Za-z0-9._-]+`, neither `.` nor `..`. */
export function validKeySegment(segment: unknown): boolean;
/** Whether `key` is a key the protocol allows. */
export function validKey(key: unknown): boolean;
/** The reference `value` is, or undefined when it is not exactly a reference object. */
export function asReference(value: unknown): ParsedReference | undefined;
/** What makes `ref` malformed, as a phrase; undefined when it is well formed. */
export function referenceProblem(ref: ParsedReference): string | undefined;
/** The reference object for `size` bytes with digest `sha256` under `key` in store `store`. */
export function makeReference(store: string, key: string, sha256: string, size: number): PayloadReference;
/** Every reference inside `body`, at any depth. */
export function findReferences(body: object): FoundReference[];
/** How many references `body` holds at any depth. */
export function countReferences(body: object): number;
