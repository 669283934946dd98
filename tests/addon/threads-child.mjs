// Run by addon.test.mjs in a child process: counts this process's threads
// (/proc/self/task) before a server exists, while it listens and after it
// closed, and prints the three snapshots as JSON, with the scheduling
// policy of each I/O thread while listening.
//   node threads-child.mjs <workers> <ioThreads> [ioThreadScheduling]
import fs from 'node:fs';
import { Server } from 'switchboard';
import { connect } from '../helpers/index.mjs';

const workers = Number(process.argv[2] ?? 0);
const ioThreads = Number(process.argv[3] ?? 3);
const ioThreadScheduling = process.argv[4];

/** The kernel's scheduling policy of thread `tid` (proc(5): the 41st field of its stat; 0 SCHED_OTHER, 3 SCHED_BATCH). */
function policyOf(tid) {
  const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  // The name (2nd field) is in parentheses and may hold spaces.
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[41 - 3]);
}

function snapshot() {
  const names = [];
  const ioPolicies = [];
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const name = fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      names.push(name);
      if (name.startsWith('switchboard-io')) ioPolicies.push(policyOf(tid));
    } catch {
      // The thread ended while we listed.
    }
  }
  return { count: names.length, io: names.filter((n) => n.startsWith('switchboard-io')).length, names: names.sort(), ioPolicies };
}

// Start libuv's thread pool first (the native close() runs on it, and it
// never shrinks), so the baseline already includes it.
await fs.promises.readFile('/proc/self/status');
await new Promise((r) => setTimeout(r, 100));
const baseline = snapshot();

const options = { workers, ioThreads };
if (ioThreadScheduling) options.ioThreadScheduling = ioThreadScheduling;
if (workers > 0) options.app = new URL('../fixtures/addon-echo-app.mjs', import.meta.url);
const server = new Server(options);
if (workers === 0) server.ws('/', { message: (ws, data, isBinary) => ws.send(data, isBinary) });
await server.listen(0, '127.0.0.1');
const client = await connect(`ws://127.0.0.1:${server.port}`);
client.send('ping');
while (client.received.length === 0) await new Promise((r) => setTimeout(r, 5));
const listening = snapshot();
const echoed = client.received[0].data.toString();

client.close();
await client.closed;
await server.close({ drainTimeout: 1000 });
// Worker threads and I/O threads are joined asynchronously by the OS; give
// them a moment, but no more than 3 s.
let after = snapshot();
const t0 = Date.now();
while ((after.io > 0 || after.count > baseline.count) && Date.now() - t0 < 3000) {
  await new Promise((r) => setTimeout(r, 50));
  after = snapshot();
}
process.stdout.write(JSON.stringify({ baseline, listening, after, echoed }) + '\n');
