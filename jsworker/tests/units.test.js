// Pure parts, no broker: request decoding, reply encoding, header parsing, options, step names.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SettingsError, StepDefinitionError, Worker, WorkerStateError } from '../index.js';
import { StepContext } from '../src/context.js';
import { errorReply, parseAttempt, parseMeta, resultReply, splitCorrelationId } from '../src/protocol.js';
import { maskUrl, resolveAmqpUrl } from '../src/settings.js';

test('splitCorrelationId splits at the last colon', () => {
  const table = [
    ['3f2a:segment', ['3f2a', 'segment']],
    ['a:b:c', ['a:b', 'c']],
    ['no-colon', ['no-colon', undefined]],
    [':step', [':step', undefined]],
    ['job:', ['job:', undefined]],
    [undefined, ['', undefined]],
  ];
  for (const [input, expected] of table) assert.deepEqual(splitCorrelationId(input), expected, String(input));
});

test('parseAttempt accepts positive integers (also as text) and nothing else', () => {
  const table = [
    [3, 3],
    ['2', 2],
    [Buffer.from('7'), 7],
    [0, undefined],
    [-1, undefined],
    [1.5, undefined],
    [true, undefined],
    ['x', undefined],
    [undefined, undefined],
  ];
  for (const [input, expected] of table) assert.equal(parseAttempt(input), expected, String(input));
});

test('a metadata patch rides on a result reply as x-meta-patch, and only when not empty', () => {
  const reply = resultReply({ ok: true }, 2, { tenant: { plan: 'pro' } });
  assert.deepEqual(JSON.parse(reply.headers['x-meta-patch']), { tenant: { plan: 'pro' } });
  assert.equal(resultReply({}, 2, {}).headers['x-meta-patch'], undefined);
  assert.equal(resultReply({}, 2).headers['x-meta-patch'], undefined);
});

test('ctx.patchMeta collects the patch on a frozen context', () => {
  const ctx = new StepContext({ queue: 'q', correlationId: 'j:s', headers: { 'x-meta': '{"a": 1}' } });
  ctx.patchMeta({ b: 2 });
  ctx.patchMeta({ c: 3 });
  assert.deepEqual(ctx.meta, { a: 1 });
  assert.deepEqual(ctx.metaPatch, { b: 2, c: 3 });
  assert.ok(Object.isFrozen(ctx));
});

test('parseMeta reads a JSON-object string or a table, and ignores anything else', () => {
  assert.deepEqual(parseMeta('{"tenant": "acme"}'), { tenant: 'acme' });
  assert.deepEqual(parseMeta({ tenant: 'acme' }), { tenant: 'acme' });
  assert.equal(parseMeta('[1]'), undefined);
  assert.equal(parseMeta('not json'), undefined);
  assert.equal(parseMeta(undefined), undefined);
});

test('errorReply: "Type: message", the class name, the body, x-attempt only when known', () => {
  class Custom extends Error {}
  const reply = errorReply(new Custom('boom'), 2);
  assert.deepEqual(reply.headers, { 'x-attempt': 2, 'x-error': 'Custom: boom', 'x-error-type': 'Custom' });
  assert.deepEqual(JSON.parse(reply.body), { error: { type: 'Custom', message: 'Custom: boom' } });
  assert.deepEqual(errorReply('plain string', undefined).headers, { 'x-error': 'Error: plain string', 'x-error-type': 'Error' });
  assert.equal(errorReply(new TypeError(''), 1).headers['x-error'], 'TypeError');
});

test('resultReply: objects and nothing are replies; anything else is InvalidResult', () => {
  assert.deepEqual(JSON.parse(resultReply(null, 1).body), {});
  assert.deepEqual(JSON.parse(resultReply({ a: 'é' }, undefined).body), { a: 'é' });
  for (const bad of [[1], 'text', 3, true]) {
    assert.throws(() => resultReply(bad, 1), { name: 'InvalidResult' }, JSON.stringify(bad));
  }
});

test('URLs: masked in messages, checked, taken from the environment in order', () => {
  assert.equal(maskUrl('amqp://user:s3cret@host:5672/vh'), 'amqp://user:******@host:5672/vh');
  assert.equal(resolveAmqpUrl(undefined, { AMQP_SERVER: 'amqp://b/', AMQP_URL: 'amqp://a/' }), 'amqp://a/');
  assert.equal(resolveAmqpUrl(undefined, { AMQP_SERVER: 'amqp://b/' }), 'amqp://b/');
  assert.equal(resolveAmqpUrl(undefined, {}), 'amqp://guest:guest@localhost:5672/');
  assert.throws(() => resolveAmqpUrl(undefined, { AMQP_URL: 'http://u:pw@x/' }), (err) => {
    assert.ok(err instanceof SettingsError);
    assert.match(err.message, /environment variable AMQP_URL: .* is not an AMQP URL/);
    assert.doesNotMatch(err.message, /pw/);
    return true;
  });
});

test('bad options are refused with the option named', () => {
  const table = [
    [{ prefetch: 0 }, /prefetch: 0 is not an integer in 1\.\.65535/],
    [{ prefetch: '5' }, /prefetch: "5"/],
    [{ url: 'localhost' }, /url: "localhost" is not an AMQP URL/],
    [{ queuePrefix: 3 }, /queuePrefix: expected a string/],
    [{ stopTimeoutMs: -1 }, /stopTimeoutMs/],
    [{ logger: {} }, /logger: expected an object with info, warn and error/],
    [{ prefech: 3 }, /unknown option\(s\) prefech/],
  ];
  for (const [options, pattern] of table) {
    assert.throws(() => new Worker(options), (err) => err instanceof SettingsError && pattern.test(err.message));
  }
});

test('bad steps are refused when registered', () => {
  const worker = new Worker();
  worker.step('ok', () => ({}));
  const table = [
    [() => worker.step('', () => ({})), /non-empty string/],
    [() => worker.step('amq.x', () => ({})), /reserved/],
    [() => worker.step('x'.repeat(256), () => ({})), /longer than 255 bytes/],
    [() => worker.step('fn', 'not a function'), /must be a function/],
    [() => worker.step('ok', () => ({})), /already has a handler/],
  ];
  for (const [register, pattern] of table) {
    assert.throws(register, (err) => err instanceof StepDefinitionError && pattern.test(err.message));
  }
  assert.deepEqual(worker.steps, ['ok']);
});

test('a worker without steps refuses to start', async () => {
  await assert.rejects(new Worker().start(), (err) => err instanceof WorkerStateError && /no steps/.test(err.message));
});
