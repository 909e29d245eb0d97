import type { StepContext } from './context.js';
import type { JsonObject, Reply } from './protocol.js';
import type { Logger } from './settings.js';
import type { PayloadConfig } from './storeconfig.js';
import type { PayloadStore } from './stores.js';

/** The stores a worker reads references from, the first of which its large replies go to. */
export class PayloadRefs {
  constructor(stores: PayloadStore[], threshold: number, logger: Logger);
  /** Open the configured stores; `pg` is imported only for a PostgreSQL store. */
  static open(config: PayloadConfig, logger: Logger): Promise<PayloadRefs>;
  /** The largest reply (JSON text, bytes) sent with every value inline. */
  readonly threshold: number;
  /** The store replies go to, or undefined without any. */
  readonly replyStore: PayloadStore | undefined;
  /** `name=where` for each store. */
  describe(): string;
  /** Replace every reference in `body` by its value, in place; PayloadRefError when one cannot. */
  resolve<T extends JsonObject>(body: T): Promise<T>;
  /** `reply` with its largest values stored and referenced when it is over the threshold. */
  shrinkReply(reply: Reply, output: JsonObject, ctx: StepContext): Promise<Reply>;
  /** Let go of the stores' connections. */
  close(): Promise<void>;
}
