// A client for workers.test.mjs that sends `work` requests of 1 ms at a
// steady pace, spinning between sends (a timer cannot fire every 1 ms),
// then waits for every reply. Prints { sent, replies, closeCode } as JSON.
//
//   node paced-client.mjs URL DURATION_MS GAP_MS
import WebSocket from 'ws';

const [url, durationMs, gapMs] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const ws = new WebSocket(url);
await new Promise((resolve, reject) => {
  ws.once('open', resolve);
  ws.once('error', reject);
});

let replies = 0;
let closeCode = null;
ws.on('message', (data) => {
  if (String(data).includes('"paced-')) replies++;
});
ws.on('close', (code) => (closeCode = code));

let sent = 0;
const began = performance.now();
for (let next = began; performance.now() - began < durationMs; next += gapMs) {
  while (performance.now() < next) {
    /* wait for the next send */
  }
  ws.send(JSON.stringify({ seq: `paced-${sent++}`, op: 'work', ms: 1 }));
}

const deadline = Date.now() + 15000;
while (replies < sent && closeCode === null && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
process.stdout.write(JSON.stringify({ sent, replies, closeCode }));
ws.terminate();
