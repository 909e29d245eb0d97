// Node.js worker for the `segment-word-counts` step of the word-counts example, on jsworker
// (../../../jsworker): it consumes the step queue, replies to `reply_to` once the broker has
// confirmed, acks only then, reconnects by itself and finishes in-flight requests on SIGTERM.
//   AMQP_URL=amqp://guest:guest@localhost:5672/ QUEUE=segment-word-counts node worker.js

import { BrokerError, SettingsError, Worker } from 'jsworker';
import { segmentWordCounts } from './wordcount.js';

const queue = process.env.QUEUE || 'segment-word-counts';

try {
  // QUEUE is the whole queue name: no prefix from $QUEUE_PREFIX.
  const worker = new Worker({ prefetch: 10, queuePrefix: '' });
  worker.step(queue, (data) => segmentWordCounts(data));
  await worker.run();
} catch (err) {
  if (!(err instanceof BrokerError || err instanceof SettingsError)) throw err;
  console.error(`segment-word-counts: error: ${err.message}`);
  process.exitCode = 1;
}
