// The broker closes the worker's own connection: the worker reconnects by itself, logs the
// outage once, and the request that was in flight is redelivered and answered.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Worker } from '../index.js';
import { AMQP_URL, FakeManager, RecordingLogger, closeConnectionNamed, gate, unique } from './helpers.js';

let manager;
before(async () => {
  manager = await FakeManager.connect();
});
after(async () => {
  await manager.close();
});

test('reconnects after the broker closes its connection; the in-flight request is redelivered and answered', async (t) => {
  const queue = await manager.stepQueue(unique('reconnect'));
  const name = unique('connection');
  const logger = new RecordingLogger();
  const worker = new Worker({ url: AMQP_URL, name, logger, env: {} });
  const release = gate();
  const started = gate();
  const calls = [];
  worker.step(queue, async (data, ctx) => {
    calls.push({ id: data.id, redelivered: ctx.redelivered });
    if (data.id === 'in-flight' && !ctx.redelivered) {
      started.open();
      await release.opened;
    }
    return { id: data.id };
  });
  await worker.start();
  t.after(() => worker.stop());

  await manager.request(queue, { id: 'before' });
  assert.deepEqual((await manager.reply()).body, { id: 'before' });
  await manager.request(queue, { id: 'in-flight' });
  await started.opened;

  assert.equal(await closeConnectionNamed(name), 1, 'rabbitmqctl does not list the worker connection');
  await logger.waitFor(/lost the connection to RabbitMQ/);
  release.open(); // its reply cannot go out now: the request stays unacked and comes back
  const back = await logger.waitFor(/reconnected to RabbitMQ after/, 5000);

  assert.deepEqual((await manager.reply()).body, { id: 'in-flight' });
  await manager.request(queue, { id: 'after' });
  assert.deepEqual((await manager.reply()).body, { id: 'after' });

  assert.match(back, /after [0-2]\.\d s/, 'reconnected more than 3 s after the drop');
  assert.deepEqual(calls, [
    { id: 'before', redelivered: false },
    { id: 'in-flight', redelivered: false },
    { id: 'in-flight', redelivered: true },
    { id: 'after', redelivered: false },
  ]);
  // One line when the outage began and one when it ended; nothing per message.
  const warnings = logger.lines.filter((line) => !line.startsWith('info listening'));
  assert.equal(warnings.length, 2, logger.lines.join('\n'));
  await worker.stop();
  assert.deepEqual(await manager.counts(queue), { ready: 0, unacked: 0 });
});

test('stop() during an outage ends the reconnect loop at once', async () => {
  const queue = await manager.stepQueue(unique('outage-stop'));
  const name = unique('connection');
  const logger = new RecordingLogger();
  const worker = new Worker({ url: AMQP_URL, name, logger, env: {} });
  worker.step(queue, (data) => data);
  await worker.start();

  assert.equal(await closeConnectionNamed(name), 1);
  await logger.waitFor(/lost the connection/);
  assert.equal(await worker.stop(), true);

  assert.equal(worker.running, false);
  assert.equal(worker.connected, false);
});
