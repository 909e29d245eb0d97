export const DEFAULT_REF_THRESHOLD: number;
/** A value whose JSON text is this long or shorter stays inline. */
export const MIN_STORED_BYTES: number;
/** The names of the top-level values to store, largest first, until the reply fits the threshold. */
export function chooseValuesToStore(
  sizes: Array<[string, number]>,
  totalBytes: number,
  threshold: number,
  referenceBytes: (bytes: number) => number,
): string[];
