// The file payload store and PayloadRefs over it, on a real temporary directory (no broker):
// put/get, resolving a request's references with every failure named, storing a large reply.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PayloadRefError } from '../index.js';
import { StepContext } from '../src/context.js';
import { FileStore } from '../src/filestore.js';
import { PayloadRefs } from '../src/payloads.js';
import { resultReply } from '../src/protocol.js';
import { parseStores } from '../src/storeconfig.js';
import { RecordingLogger } from './helpers.js';

const JOB = '3f2a9c4e-8b1d-4e0f-9a6b-2c7d5e1f0a93';
let root;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'jsworker-payloads-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** Store `value`'s JSON text as the spec lays it out (`<dir>/<job>/<sha>`); its reference. */
async function stored(dir, value, store = 'main', job = JOB) {
  const bytes = Buffer.from(JSON.stringify(value));
  const digest = sha256(bytes);
  await mkdir(join(dir, job), { recursive: true });
  await writeFile(join(dir, job, digest), bytes);
  return { $ref: `wm://${store}/${job}/${digest}`, sha256: digest, size: bytes.length };
}

async function payloadsIn(dir, threshold = 262_144, logger = new RecordingLogger()) {
  return PayloadRefs.open({ stores: parseStores(`main=file://${dir}`, 'test'), threshold }, logger);
}

function failure(pattern) {
  return (err) => {
    assert.ok(err instanceof PayloadRefError, String(err));
    assert.match(err.message, pattern);
    return true;
  };
}

test('put writes <dir>/<key> once; a key that exists is left as it is; no temporary file stays', async () => {
  const dir = join(root, 'put');
  const store = new FileStore('main', dir);
  const ref = { uri: `wm://main/${JOB}/abc`, store: 'main', key: `${JOB}/abc`, sha256: 'x', size: 5 };
  await store.put(ref, Buffer.from('"one"'));
  await store.put(ref, Buffer.from('"two"'));
  assert.equal((await store.get(ref)).toString(), '"one"');
  assert.deepEqual(await readdir(join(dir, JOB)), ['abc']);
});

test('get names a missing value, and a store directory that is not there', async () => {
  const ref = { uri: `wm://main/${JOB}/nothing`, store: 'main', key: `${JOB}/nothing` };
  const dir = join(root, 'get');
  await mkdir(dir);
  await assert.rejects(new FileStore('main', dir).get(ref), failure(new RegExp(`^wm://main/${JOB}/nothing: not found in file://${dir}$`)));
  const gone = join(root, 'not-mounted');
  await assert.rejects(new FileStore('main', gone).get(ref), failure(/is not a directory \(not mounted\?\)/));
});

test('resolve replaces references at any depth, each place with its own copy', async () => {
  const dir = join(root, 'resolve');
  const payloads = await payloadsIn(dir);
  const report = await stored(dir, { pages: ['a', 'b'], title: 'ünïcode' });
  const body = { report, gathered: [{ item: { ...report } }, 7], n: 1 };
  await payloads.resolve(body);
  assert.deepEqual(body, {
    report: { pages: ['a', 'b'], title: 'ünïcode' },
    gathered: [{ item: { pages: ['a', 'b'], title: 'ünïcode' } }, 7],
    n: 1,
  });
  assert.notEqual(body.report, body.gathered[0].item);
});

test('resolve fails with PayloadRefError naming the reference and why', async () => {
  const dir = join(root, 'failures');
  const payloads = await payloadsIn(dir);
  const good = await stored(dir, 'some text');
  const cases = [
    [{ ...good, $ref: 'wm://other/job/x' }, /^wm:\/\/other\/job\/x: no payload store named "other" here \(configured: main\)$/],
    [{ ...good, $ref: `wm://main/${JOB}/${'0'.repeat(64)}` }, /: not found in file:\/\//],
    [{ ...good, size: good.size + 1 }, new RegExp(`holds ${good.size} bytes, not ${good.size + 1}$`)],
    [{ ...good, sha256: 'f'.repeat(64) }, /do not match its sha256$/],
    [{ ...good, sha256: 'nope' }, /malformed reference: sha256 "nope"/],
    [{ ...good, $ref: 'wm://main/../../etc/passwd' }, /malformed reference: key "..\/..\/etc\/passwd"/],
  ];
  for (const [ref, pattern] of cases) {
    await assert.rejects(payloads.resolve({ deep: [{ ref }] }), failure(pattern), ref.$ref);
  }
  const none = await PayloadRefs.open({ stores: [], threshold: 1 }, new RecordingLogger());
  await assert.rejects(none.resolve({ good }), failure(/no payload stores are configured; set WM_PAYLOAD_STORES/));
  const broken = await stored(dir, 'x');
  await writeFile(join(dir, JOB, broken.sha256), '{"cut');
  const text = Buffer.from('{"cut');
  const notJson = { $ref: `wm://main/${JOB}/${broken.sha256}`, sha256: sha256(text), size: text.length };
  await assert.rejects(payloads.resolve({ notJson }), failure(/the stored bytes are not JSON/));
});

function context(correlationId = `${JOB}:summarise`) {
  return new StepContext({ queue: 'summarise', correlationId, headers: { 'x-attempt': 2 } });
}

test('a reply over the threshold has its largest values stored under <job>/<sha256>', async () => {
  const dir = join(root, 'shrink');
  const payloads = await payloadsIn(dir, 3000);
  const output = { big: 'x'.repeat(20_000), mid: ['y'.repeat(3000)], small: 'z'.repeat(1000), n: 1 };
  const ctx = context();
  const reply = await payloads.shrinkReply(resultReply(output, 2), output, ctx);
  const body = JSON.parse(reply.body);
  assert.equal(reply.headers['x-payload-refs'], 2);
  assert.equal(reply.headers['x-attempt'], 2);
  assert.equal(body.n, 1);
  assert.equal(body.small, output.small, 'a value of 1 KiB or less stays inline');
  for (const name of ['big', 'mid']) {
    const bytes = await readFile(join(dir, JOB, body[name].sha256));
    assert.equal(body[name].$ref, `wm://main/${JOB}/${sha256(bytes)}`);
    assert.equal(body[name].size, bytes.length);
    assert.deepEqual(JSON.parse(bytes), output[name]);
  }
  assert.ok(reply.body.length <= 3000, String(reply.body.length));
});

test('a reply within the threshold, or without a store, is sent as it is', async () => {
  const output = { big: 'x'.repeat(20_000) };
  const reply = resultReply(output, undefined);
  const roomy = await payloadsIn(join(root, 'roomy'), 30_000);
  assert.equal(await roomy.shrinkReply(reply, output, context()), reply);
  const none = await PayloadRefs.open({ stores: [], threshold: 10 }, new RecordingLogger());
  assert.equal(await none.shrinkReply(reply, output, context()), reply);
});

test('a reply with no job id to store under goes inline, with a warning', async () => {
  const logger = new RecordingLogger();
  const payloads = await payloadsIn(join(root, 'nojob'), 10, logger);
  const output = { big: 'x'.repeat(5000) };
  const reply = resultReply(output, undefined);
  assert.equal(await payloads.shrinkReply(reply, output, context('not a uuid:step')), reply);
  assert.equal(logger.matching(/sent inline: correlation_id "not a uuid:step" has no job id/).length, 1);
});
