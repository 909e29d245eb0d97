/** One configured store: `NAME=URL`, with its kind (and directory, for a file store). */
export interface StoreEntry {
  readonly name: string;
  readonly url: string;
  readonly kind: 'file' | 'postgresql';
  /** The directory of a file store. */
  readonly path?: string;
}

/** The payload configuration a worker starts with. */
export interface PayloadConfig {
  readonly stores: readonly StoreEntry[];
  readonly threshold: number;
}

export const STORES_ENV_VAR: 'WM_PAYLOAD_STORES';
export const THRESHOLD_ENV_VAR: 'WM_PAYLOAD_REF_THRESHOLD';
/** Where a store is, for messages and logs: its URL without password or query string. */
export function describeStoreUrl(url: string): string;
/** One `NAME=URL` entry; SettingsError naming `source` and the entry. */
export function parseStoreEntry(entry: string, source: string): StoreEntry;
/** `NAME=URL NAME=URL ...` as store entries, in order, each name once. */
export function parseStores(text: string, source: string): readonly StoreEntry[];
/** The payloadStores option as store entries. */
export function storesOption(value: string | Record<string, string>): readonly StoreEntry[];
/** A threshold in bytes: a whole number >= 0. */
export function parseThreshold(value: unknown, source: string): number;
/** The options' payload settings, completed from the environment. */
export function resolvePayloadConfig(
  settings: { payloadStores?: readonly StoreEntry[]; payloadRefThreshold?: number },
  env: Record<string, string | undefined>,
): PayloadConfig;
