// HTTP routes in a real headless Chromium: a page served by a Switchboard
// route submits a urlencoded form (a navigation), uploads a Blob with fetch
// as the raw body (the server answers its size and SHA-256), sends a
// FormData file (the multipart bytes arrive; no multipart parsing here), and
// reads a chunked response piece by piece through a ReadableStream.
//
// Needs /usr/bin/chromium (scripts/setup-browser.sh installs it, and
// tests/helpers/chromium.mjs runs it) and the playwright-core devDependency.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Server } from 'switchboard';
import { launchChromium } from '../helpers/chromium.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long the page may take to show something. */
const UI_TIMEOUT = 5_000;
const UPLOAD_BYTES = 1024 * 1024;
const STREAM_PIECES = 5;
const STREAM_GAP_MS = 80;

/** The upload's bytes, made the same way on the page (app.js) and here. */
function fileBytes(size) {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return bytes;
}

const escape = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>HTTP from a browser</title><script src="/app.js"></script></head>
<body>
  <form id="form" method="post" action="/form">
    <input id="name" name="name">
    <input id="note" name="note">
    <button type="submit">Send</button>
  </form>
</body></html>`;

// The page's script: functions the test calls with page.evaluate.
const APP_JS = `
function fileBytes(size) {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return bytes;
}
async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
}
window.uploadBlob = async (size) => {
  const bytes = fileBytes(size);
  const blob = new Blob([bytes], { type: 'application/octet-stream' });
  const response = await fetch('/upload', { method: 'POST', body: blob });
  return { status: response.status, server: await response.json(), size: blob.size, sha256: await sha256Hex(bytes) };
};
window.uploadFormData = async (size) => {
  const form = new FormData();
  form.append('label', 'a file');
  form.append('file', new File([fileBytes(size)], 'data.bin', { type: 'application/octet-stream' }));
  const response = await fetch('/upload?multipart=1', { method: 'POST', body: form });
  return { status: response.status, server: await response.json() };
};
window.readStream = async () => {
  const started = performance.now();
  const response = await fetch('/stream');
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const pieces = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pieces.push({ ms: Math.round(performance.now() - started), text: value });
  }
  return { status: response.status, contentType: response.headers.get('content-type'), pieces };
};
`;

let server;
let baseURL;
let browser;
const pageErrors = [];

before(
  async () => {
    server = new Server({ workers: 0 });
    const app = server.app;
    app.get('/', (req, res) => res.html(PAGE));
    app.get('/app.js', (req, res) => res.type('js').send(APP_JS));
    app.post('/form', async (req, res) => {
      const fields = await req.urlencoded();
      res.html(
        `<!doctype html><title>Received</title><p id="type">${escape(req.header('content-type') ?? '')}</p>` +
          `<p id="name">${escape(String(fields.name))}</p><p id="note">${escape(String(fields.note))}</p>`,
      );
    });
    app.post('/upload', { bodyLimit: 4 * 1024 * 1024 }, async (req, res) => {
      const body = await req.buffer();
      const answer = { size: body.length, sha256: createHash('sha256').update(body).digest('hex'), contentType: req.header('content-type') ?? null };
      if (req.query.multipart) answer.holdsFile = body.includes(fileBytes(UPLOAD_BYTES));
      res.json(answer);
    });
    app.get('/stream', async (req, res) => {
      res.type('text');
      for (let i = 0; i < STREAM_PIECES; i++) {
        res.write(`piece ${i}\n`);
        await sleep(STREAM_GAP_MS);
      }
      res.end('end\n');
    });
    await server.listen(0, '127.0.0.1');
    baseURL = `http://127.0.0.1:${server.port}`;
    browser = await launchChromium();
  },
  { timeout: 11 * 60_000 },
);

after(async () => {
  // Bounded, and the bound's timer does not hold the process open.
  await Promise.race([browser?.close(), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]).catch(() => {});
  await server?.close({ drainTimeout: 500 });
});

async function newPage() {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(UI_TIMEOUT);
  page.on('pageerror', (error) => pageErrors.push(error));
  await page.goto(`${baseURL}/`);
  return page;
}

test('a urlencoded form POST navigates to the handler’s answer', { timeout: 10_000 }, async () => {
  const page = await newPage();
  try {
    await page.fill('#name', 'Ada Lovelace');
    await page.fill('#note', 'café & <b>tea</b> = 100%');
    await Promise.all([page.waitForURL(`${baseURL}/form`), page.click('button[type=submit]')]);
    assert.equal(await page.title(), 'Received');
    assert.equal(await page.textContent('#type'), 'application/x-www-form-urlencoded');
    assert.equal(await page.textContent('#name'), 'Ada Lovelace');
    assert.equal(await page.textContent('#note'), 'café & <b>tea</b> = 100%', 'the field arrived decoded, byte for byte');
  } finally {
    await page.context().close();
  }
});

test('fetch POSTs a Blob as the raw body: the server hashes the same bytes', { timeout: 10_000 }, async () => {
  const page = await newPage();
  try {
    const result = await page.evaluate((size) => window.uploadBlob(size), UPLOAD_BYTES);
    assert.equal(result.status, 200, JSON.stringify(result));
    assert.equal(result.size, UPLOAD_BYTES);
    assert.equal(result.sha256, createHash('sha256').update(fileBytes(UPLOAD_BYTES)).digest('hex'), 'the page made the agreed bytes');
    assert.deepEqual(result.server, { size: UPLOAD_BYTES, sha256: result.sha256, contentType: 'application/octet-stream' });
  } finally {
    await page.context().close();
  }
});

test('fetch POSTs a FormData file: the multipart body arrives with the file in it', { timeout: 10_000 }, async () => {
  const page = await newPage();
  try {
    const result = await page.evaluate((size) => window.uploadFormData(size), UPLOAD_BYTES);
    assert.equal(result.status, 200, JSON.stringify(result));
    assert.match(result.server.contentType, /^multipart\/form-data; boundary=\S+$/);
    assert.ok(result.server.size > UPLOAD_BYTES, `the body (${result.server.size} bytes) holds more than the file`);
    assert.equal(result.server.holdsFile, true, 'the file’s bytes are in the body, unchanged');
  } finally {
    await page.context().close();
  }
});

test('a streamed fetch reads the chunked response piece by piece', { timeout: 10_000 }, async () => {
  const page = await newPage();
  try {
    const result = await page.evaluate(() => window.readStream());
    assert.equal(result.status, 200);
    assert.equal(result.contentType, 'text/plain; charset=utf-8');
    const expected = `${Array.from({ length: STREAM_PIECES }, (_, i) => `piece ${i}\n`).join('')}end\n`;
    assert.equal(result.pieces.map((p) => p.text).join(''), expected);
    // Each write reached the page on its own, as it was written.
    assert.ok(result.pieces.length >= STREAM_PIECES, `${result.pieces.length} reads: ${JSON.stringify(result.pieces)}`);
    const spread = result.pieces.at(-1).ms - result.pieces[0].ms;
    assert.ok(spread >= (STREAM_PIECES - 1) * STREAM_GAP_MS * 0.8, `the pieces spread over ${spread} ms: ${JSON.stringify(result.pieces)}`);
    assert.deepEqual(pageErrors, [], 'no script error on any page');
  } finally {
    await page.context().close();
  }
});
