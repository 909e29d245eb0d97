// The conformance "echo" worker: replies with its input unchanged, fails when it has "fail": true.
//   QUEUE=echo AMQP_URL=amqp://guest:guest@localhost:5672/ node jsworker/examples/echo.js

import { BrokerError, SettingsError, Worker } from '../index.js';

/** The error an input with "fail": true is answered with. */
class AskedToFail extends Error {}

const queue = process.env.QUEUE || 'echo';
try {
  // No queue prefix: QUEUE is the whole queue name, even when $QUEUE_PREFIX is set.
  const worker = new Worker({ prefetch: 50, queuePrefix: '' });
  worker.step(queue, (data) => {
    if (data.fail === true) throw new AskedToFail('asked to fail');
    return data;
  });
  await worker.run();
} catch (err) {
  if (!(err instanceof BrokerError || err instanceof SettingsError)) throw err;
  console.error(`echo: error: ${err.message}`);
  process.exitCode = 1;
}
