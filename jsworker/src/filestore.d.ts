import type { PayloadStore, StoredReference } from './stores.js';

/** Values as files `<root>/<key>` in a directory every party mounts. */
export class FileStore implements PayloadStore {
  constructor(name: string, root: string);
  readonly name: string;
  readonly root: string;
  readonly where: string;
  get(ref: StoredReference): Promise<Buffer>;
  put(ref: StoredReference, bytes: Buffer, jobId?: string): Promise<void>;
  close(): Promise<void>;
}
