// jsworker: write workflow-manager step workers in Node.js.
//
//   import { Worker } from 'jsworker';
//   const worker = new Worker({ prefetch: 10 });
//   worker.step('segment-word-counts', async (data, ctx) => ({ words: data.section.split(' ').length }));
//   await worker.run(); // until SIGINT/SIGTERM, then drain

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
export { DEFAULT_AMQP_URL, consoleLogger, maskUrl } from './src/settings.js';
export { Worker } from './src/worker.js';
