import type { StepContext } from './context.js';
import type { JsonObject } from './protocol.js';
import type { WorkerOptions, WorkerSettings } from './settings.js';

/** A step handler: the step input and the request's context in, the step output (a JSON object) out. */
export type StepHandler<In extends JsonObject = JsonObject, Out extends JsonObject = JsonObject> = (
  data: In,
  ctx: StepContext,
) => Out | void | null | Promise<Out | void | null>;

/** Options of `worker.run()`. */
export interface RunOptions {
  /** The signals that stop the worker gracefully. Default: SIGINT and SIGTERM. */
  signals?: NodeJS.Signals[];
}

export const RECONNECT_DELAY_MS: number;
export const MAX_RECONNECT_DELAY_MS: number;
/** `queue` if it is a usable RabbitMQ queue name; throws StepDefinitionError otherwise. */
export function checkQueueName(queue: unknown): string;

/** Serves step handlers: consumes each step's queue and replies to the manager. */
export class Worker {
  /** Throws SettingsError naming any invalid or unknown option. */
  constructor(options?: WorkerOptions);
  /** Register `handler` for requests on `queue`; returns the worker, to chain calls. */
  step<In extends JsonObject = JsonObject, Out extends JsonObject = JsonObject>(
    queue: string,
    handler: StepHandler<In, Out>,
  ): this;
  /** The registered step queue names (without the queue prefix). */
  readonly steps: string[];
  /** The validated options (frozen). */
  readonly settings: WorkerSettings;
  /** Whether the worker has started and not begun stopping (it may be reconnecting). */
  readonly running: boolean;
  /** Whether the worker is connected and consuming right now. */
  readonly connected: boolean;
  /** How many requests are being handled right now. */
  readonly inFlight: number;
  /** Connect, declare each step queue and consume; throws BrokerError when RabbitMQ is unreachable. */
  start(): Promise<void>;
  /** Stop consuming, finish in-flight requests (reply, ack), disconnect; true when all finished. */
  stop(): Promise<boolean>;
  /** Resolves once the worker has stopped. */
  whenStopped(): Promise<void>;
  /** Start, serve until SIGINT/SIGTERM, then stop gracefully. */
  run(options?: RunOptions): Promise<void>;
  toString(): string;
}
