// Type declarations of jsworker's public surface (hand-written; the package has no build step).
export { StepContext } from './src/context.js';
export {
  BrokerError,
  InvalidRequest,
  InvalidResult,
  JsworkerError,
  PayloadRefError,
  ProtocolError,
  SettingsError,
  StepDefinitionError,
  WorkerStateError,
} from './src/errors.js';
export type { JsonObject } from './src/protocol.js';
export { DEFAULT_AMQP_URL, consoleLogger, maskUrl } from './src/settings.js';
export type { Logger, WorkerOptions, WorkerSettings } from './src/settings.js';
export type { PayloadReference } from './src/refs.js';
export type { StoreEntry } from './src/storeconfig.js';
export { Worker } from './src/worker.js';
export type { StepHandler, RunOptions } from './src/worker.js';
