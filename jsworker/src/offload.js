// Which of a reply's top-level values to store (docs/protocol.md, "A reply"), pure: the largest
// first, until the reply's JSON text is no larger than the threshold; a value of 1 KiB or less
// is never stored, since its reference would save next to nothing.

export const DEFAULT_REF_THRESHOLD = 262_144;
/** A value whose JSON text is this long or shorter stays inline. */
export const MIN_STORED_BYTES = 1024;

/**
 * The names of the values to store, largest first.
 * @param {Array<[string, number]>} sizes each top-level key and its value's JSON text in bytes
 * @param {number} totalBytes the whole reply's JSON text in bytes
 * @param {number} threshold the largest reply that is sent as it is
 * @param {(bytes: number) => number} referenceBytes the JSON text of the reference for a value of `bytes`
 */
export function chooseValuesToStore(sizes, totalBytes, threshold, referenceBytes) {
  const chosen = [];
  let total = totalBytes;
  const largestFirst = [...sizes].sort((a, b) => b[1] - a[1]);
  for (const [name, bytes] of largestFirst) {
    if (total <= threshold || bytes <= MIN_STORED_BYTES) break;
    chosen.push(name);
    total += referenceBytes(bytes) - bytes;
  }
  return chosen;
}
