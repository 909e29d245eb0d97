import type { PayloadStore, StoredReference } from './stores.js';

export const CREATE_TABLE: string;
/** The node-postgres module, imported on demand. */
export function loadPg(): Promise<unknown>;

/** Values as rows of `wm_payloads` in a PostgreSQL database. */
export class PostgresStore implements PayloadStore {
  constructor(name: string, url: string, pg: unknown);
  readonly name: string;
  readonly where: string;
  get(ref: StoredReference): Promise<Buffer>;
  put(ref: StoredReference, bytes: Buffer, jobId: string): Promise<void>;
  close(): Promise<void>;
}
