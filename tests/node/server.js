// Starts the server under test for a test file: larder (LARDER_BIN, or the release build), or
// redis-server with TARGET=redis, on a free port, and stops it at the end.
'use strict';
const { spawn } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function ping(port) {
  return new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.on('connect', () => c.write('PING\r\n'));
    c.on('data', (d) => { c.destroy(); resolve(d.toString() === '+PONG\r\n'); });
    c.on('error', () => resolve(false));
  });
}

async function start() {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'larder-node-'));
  let argv;
  if (process.env.TARGET === 'redis') {
    argv = ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '',
      '--appendonly', 'no', '--dir', dir];
  } else {
    const bin = process.env.LARDER_BIN ||
      path.resolve(__dirname, '..', '..', 'target', 'release', 'larder');
    argv = [bin, '--port', String(port), '--bind', '127.0.0.1', '--memcached-port', '0',
      '--http-port', '0', '--appendonly', 'no', '--save', '', '--dir', dir];
  }
  const log = fs.openSync(path.join(dir, 'server.log'), 'w');
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', log, log] });
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) break;
    if (await ping(port)) {
      return {
        port,
        connection: { host: '127.0.0.1', port, maxRetriesPerRequest: null },
        stop: () => new Promise((resolve) => {
          if (proc.exitCode !== null) return resolve(proc.exitCode);
          proc.on('exit', (code) => resolve(code));
          proc.kill('SIGTERM');
        }),
        alive: () => proc.exitCode === null,
        logTail: () => fs.readFileSync(path.join(dir, 'server.log'), 'utf8').slice(-4000),
      };
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  proc.kill('SIGKILL');
  throw new Error(`${argv[0]} did not start:\n` +
    fs.readFileSync(path.join(dir, 'server.log'), 'utf8'));
}

/** Polls `check` (async, truthy when done) until it holds or `ms` pass. */
async function until(check, ms = 20000, what = 'condition') {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

module.exports = { start, until };
