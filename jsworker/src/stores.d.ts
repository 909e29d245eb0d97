import type { ParsedReference } from './refs.js';

/** A reference known to be well formed, as the stores take it. */
export interface StoredReference extends ParsedReference {
  sha256: string;
  size: number;
}

/** Where referenced values are kept: a directory (FileStore) or a PostgreSQL table (PostgresStore). */
export interface PayloadStore {
  readonly name: string;
  /** The location for messages, without any password. */
  readonly where: string;
  /** The stored bytes (unchecked); PayloadRefError when absent or unreachable. */
  get(ref: StoredReference): Promise<Buffer>;
  /** Store `bytes` under `ref.key` unless the key holds a value already. */
  put(ref: StoredReference, bytes: Buffer, jobId: string): Promise<void>;
  /** Let go of connections. */
  close(): Promise<void>;
}
