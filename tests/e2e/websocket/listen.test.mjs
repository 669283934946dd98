// Listeners: several addresses sharing one server state, and accept
// back-off when the process runs out of file descriptors (EMFILE).
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from 'switchboard';
import { connect, nextMessage, waitFor, WebSocket } from '../../helpers/index.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

test('several listen addresses share one state', async (t) => {
  const server = new Server({ workers: 0 });
  server.ws('/', {
    open: (ws) => ws.subscribe('all'),
    message: (ws, data) => server.publish('all', data.toString()),
  });
  const addresses = await server.listen([
    { host: '127.0.0.1', port: 0 },
    { host: '127.0.0.1', port: 0 },
  ]);
  t.after(() => server.close({ drainTimeout: 500 }));
  assert.equal(addresses.length, 2);
  assert.notEqual(addresses[0].port, addresses[1].port);
  const a = await connect(`ws://127.0.0.1:${addresses[0].port}`);
  const b = await connect(`ws://127.0.0.1:${addresses[1].port}`);
  await waitFor(() => server.numSubscribers('all') === 2, 2000, 'both subscribed');
  a.send('across listeners');
  assert.equal((await nextMessage(b)).data.toString(), 'across listeners');
  assert.equal((await nextMessage(a)).data.toString(), 'across listeners');
  assert.equal(server.stats().connectionsOpen, 2);
  a.close();
  b.close();
});

function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

test('out of file descriptors: accept backs off, then serves again', { timeout: 30_000 }, async (t) => {
  // A low descriptor limit for the server process only.
  const child = spawn('bash', ['-c', `ulimit -n 64 && exec "${process.execPath}" "${path.join(here, 'emfile-child.mjs')}"`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  const info = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
  });
  const free = 64 - info.fds;
  assert.ok(free > 5 && free < 60, `free descriptors: ${free}`);
  const url = `ws://127.0.0.1:${info.port}`;
  // Open more connections than descriptors are left: the extra ones wait in
  // the listen backlog while accept() fails with EMFILE.
  const clients = [];
  for (let i = 0; i < free + 10; i++) {
    const ws = new WebSocket(url);
    ws.on('error', () => {});
    clients.push(ws);
  }
  await waitFor(() => clients.filter((c) => c.readyState === WebSocket.OPEN).length >= free - 2, 10_000, 'open clients');
  await new Promise((r) => setTimeout(r, 300));
  const open = clients.filter((c) => c.readyState === WebSocket.OPEN).length;
  assert.ok(open < clients.length, `some connections must wait (open ${open} of ${clients.length})`);
  // While starved, the accept loop backs off instead of spinning on EMFILE.
  const cpu0 = cpuSeconds(child.pid);
  await new Promise((r) => setTimeout(r, 1000));
  const cpu = cpuSeconds(child.pid) - cpu0;
  assert.ok(cpu < 0.3, `the starved server used ${cpu} s of CPU in 1 s`);
  // Free descriptors: the waiting connections are accepted and served.
  const opened = clients.filter((c) => c.readyState === WebSocket.OPEN);
  for (const c of opened.slice(0, 20)) c.terminate();
  await waitFor(() => clients.every((c) => c.readyState !== WebSocket.CONNECTING), 10_000, 'the waiting clients to be accepted');
  const late = clients.slice(open).find((c) => c.readyState === WebSocket.OPEN);
  assert.ok(late, 'a connection that waited in the backlog was accepted');
  const echoed = new Promise((resolve) => late.once('message', (d) => resolve(d.toString())));
  late.send('after the storm');
  assert.equal(await echoed, 'after the storm');
  for (const c of clients) c.terminate();
});
