// BullMQ, the Node.js job queue, run unchanged against the server. BullMQ keeps a queue in
// lists, sorted sets, hashes and a stream of events, and does every state change in Lua
// scripts (about fifty of them, with cmsgpack); QueueEvents reads the event stream with
// XREAD BLOCK; workers wait in BZPOPMIN on a marker key. The tests check what an application
// relies on: every job runs once across workers, retries with backoff, failures kept with
// their reason, delays, priorities, parent jobs after their children.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const IORedis = require('ioredis');
const { Queue, Worker, QueueEvents, FlowProducer } = require('bullmq');
const { start, until } = require('./server');

let server;
const closers = [];
function track(x) { closers.push(x); return x; }

test.before(async () => { server = await start(); });
test.afterEach(async () => {
  while (closers.length) await closers.pop().close();
  assert.ok(server.alive(), 'the server died:\n' + server.logTail());
});
test.after(async () => { await server.stop(); });

test('every job runs once across two workers, and each completion is an event', async () => {
  const { connection } = server;
  const redis = new IORedis(connection);
  closers.push({ close: async () => redis.disconnect() });
  const q = track(new Queue('once', { connection }));
  const events = track(new QueueEvents('once', { connection }));
  await events.waitUntilReady();
  const completed = new Set();
  events.on('completed', ({ jobId }) => completed.add(jobId));
  const processor = async (job) => {
    await redis.hincrby('once:runs', job.id, 1);
    return job.data.n * 2;
  };
  const jobs = await q.addBulk(Array.from({ length: 100 }, (_, n) => ({ name: 'double', data: { n } })));
  track(new Worker('once', processor, { connection, concurrency: 5 }));
  track(new Worker('once', processor, { connection, concurrency: 5 }));
  await until(async () => (await q.getJobCounts('completed')).completed === 100, 30000, '100 jobs');
  const runs = await redis.hgetall('once:runs');
  assert.equal(Object.keys(runs).length, 100);
  assert.deepEqual(Object.values(runs).filter((v) => v !== '1'), [], 'a job ran twice');
  for (const [n, j] of jobs.entries()) {
    assert.equal((await q.getJob(j.id)).returnvalue, n * 2);
  }
  await until(async () => completed.size === 100, 10000, '100 completed events');
  const counts = await q.getJobCounts();
  assert.equal(counts.failed, 0);
  assert.equal(counts.waiting + counts.active + counts.delayed, 0);
});

test('retries with backoff, failures with their reason, delayed jobs', async () => {
  const { connection } = server;
  const q = track(new Queue('retry', { connection }));
  const started = {};
  track(new Worker('retry', async (job) => {
    started[job.id] = Date.now();
    if (job.name === 'flaky' && job.attemptsMade < 2) throw new Error('not yet');
    if (job.name === 'bad') throw new Error('bad input');
    return 'ok';
  }, { connection, concurrency: 3 }));
  const flaky = await q.add('flaky', {}, { attempts: 3, backoff: { type: 'fixed', delay: 100 } });
  const bad = await q.add('bad', {}, { attempts: 2 });
  const t0 = Date.now();
  const later = await q.add('later', {}, { delay: 400 });
  await until(async () => {
    const c = await q.getJobCounts('completed', 'failed');
    return c.completed === 2 && c.failed === 1;
  }, 20000, 'two completed and one failed');
  const f = await q.getJob(flaky.id);
  assert.equal(f.attemptsMade, 3);
  assert.equal(f.returnvalue, 'ok');
  const b = await q.getJob(bad.id);
  assert.equal(b.failedReason, 'bad input');
  assert.equal(b.attemptsMade, 2);
  assert.equal((await q.getFailed()).map((j) => j.id).join(), bad.id);
  assert.ok(started[later.id] - t0 >= 400, 'a delayed job ran early');
});

test('priorities: the lowest number runs first', async () => {
  const { connection } = server;
  const q = track(new Queue('prio', { connection }));
  const order = [];
  const w = track(new Worker('prio', async (job) => { order.push(job.data.p); },
    { connection, concurrency: 1, autorun: false }));
  for (const p of [5, 1, 3, 2, 4]) await q.add('p', { p }, { priority: p });
  w.run();
  await until(async () => order.length === 5, 20000, 'five jobs');
  assert.deepEqual(order, [1, 2, 3, 4, 5]);
});

test('a flow: the parent runs after its children, with their results', async () => {
  const { connection } = server;
  track(new Queue('flow', { connection }));
  const flows = track(new FlowProducer({ connection }));
  track(new Worker('flow', async (job) => {
    if (job.name === 'sum') {
      const values = Object.values(await job.getChildrenValues());
      return values.reduce((a, b) => a + b, 0);
    }
    return job.data.n;
  }, { connection, concurrency: 4 }));
  const tree = await flows.add({
    name: 'sum', queueName: 'flow', data: {},
    children: [1, 2, 3, 4].map((n) => ({ name: 'n', queueName: 'flow', data: { n } })),
  });
  const q = track(new Queue('flow', { connection }));
  const parent = await until(async () => {
    const j = await q.getJob(tree.job.id);
    return j && j.finishedOn ? j : null;
  }, 20000, 'the parent job');
  assert.equal(parent.returnvalue, 10);
});
