// The SockJS HTTP transports as the protocol specifies them
// (sockjs-protocol, "XhrPolling", "XhrStreaming", "EventSource",
// "HtmlFile", "JsonpPolling", "JSESSIONID cookie", "Handling close",
// "Http 1.0 and 1.1 chunking", "JSON Unicode Encoding"), against the
// example server (examples/sockjs/server.mjs), the protocol suite's own
// test server: `/echo`, `/close`, `/cookie_needed_echo`, streaming
// responses ending after 4,096 bytes. Exact bytes, statuses and headers,
// on raw connections.
import test, { describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { once } from 'node:events';
import { startExample } from '../../helpers/examples.mjs';
import { NO_CACHE, PRELUDE, Stream, contentType, request } from './support.mjs';

const JAVASCRIPT = 'application/javascript;charset=UTF-8';

/** The protocol suite's `verify_cors`. */
function verifyCors(response, origin) {
  if (origin) {
    assert.equal(response.headers['access-control-allow-origin'], origin);
    assert.equal(response.headers['access-control-allow-credentials'], 'true');
  } else {
    assert.equal(response.headers['access-control-allow-origin'], '*');
    assert.equal(response.headers['access-control-allow-credentials'], undefined);
  }
}

/** The protocol suite's `verify_not_cached`. */
function verifyNotCached(response) {
  assert.equal(response.headers['cache-control'], NO_CACHE);
  assert.equal(response.headers.expires, undefined);
  assert.equal(response.headers['last-modified'], undefined);
}

describe('SockJS HTTP transports (the example server)', () => {
  let child;
  let port;
  const session = (service = 'echo') => `/${service}/000/${crypto.randomUUID()}`;

  before(async () => {
    const example = await startExample('examples/sockjs/server.mjs', { env: { PORT: '0' }, ready: /^LISTENING (\d+)$/m });
    child = example.child;
    port = Number(example.match[1]);
  });

  after(async () => {
    child.kill('SIGTERM');
    await once(child, 'exit');
  });

  describe('xhr polling', () => {
    test('open, send, receive: bodies, types, CORS, never cached (XhrPolling.test_transport)', async () => {
      const url = session();
      const open = await request(port, 'POST', `${url}/xhr`, { Origin: 'test' });
      assert.equal(open.status, 200);
      assert.equal(open.body, 'o\n');
      assert.equal(contentType(open), JAVASCRIPT);
      verifyCors(open, 'test');
      verifyNotCached(open);

      const send = await request(port, 'POST', `${url}/xhr_send`, { Origin: 'test' }, '["x"]');
      assert.equal(send.status, 204);
      assert.equal(send.body, '');
      assert.equal(contentType(send), 'text/plain;charset=UTF-8');
      assert.equal(send.headers['content-length'], undefined, 'no Content-Length on a 204 (RFC 9110 §8.6)');
      verifyCors(send, 'test');
      verifyNotCached(send);

      const poll = await request(port, 'POST', `${url}/xhr`);
      assert.equal(poll.status, 200);
      assert.equal(poll.body, 'a["x"]\n');
      verifyCors(poll);
    });

    test('messages sent between polls come as one frame, in order, whatever the content type (test_content_types)', async () => {
      const url = session();
      assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
      const types = ['text/plain', 'T', 'application/json', 'application/xml', '', 'application/json; charset=utf-8', 'text/xml; charset=utf-8', 'text/xml'];
      for (const type of types) {
        const r = await request(port, 'POST', `${url}/xhr_send`, type === '' ? {} : { 'Content-Type': type }, '["a"]');
        assert.equal(r.status, 204, `Content-Type ${type}`);
      }
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '[]')).status, 204, 'an empty frame is allowed');
      const poll = await request(port, 'POST', `${url}/xhr`);
      assert.equal(poll.body, `a[${types.map(() => '"a"').join(',')}]\n`);
    });

    test('a send to an unknown session is 404; broken JSON and empty bodies are 500 with the protocol texts; the session lives on', async () => {
      assert.equal((await request(port, 'POST', `${session()}/xhr_send`, {}, '["x"]')).status, 404);
      const url = session();
      assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
      const broken = await request(port, 'POST', `${url}/xhr_send`, {}, '["x');
      assert.equal(broken.status, 500);
      assert.match(broken.body, /Broken JSON encoding\./);
      const empty = await request(port, 'POST', `${url}/xhr_send`, {}, '');
      assert.equal(empty.status, 500);
      assert.match(empty.body, /Payload expected\./);
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["a"]')).status, 204);
      assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'a["a"]\n');
    });

    test('the server id is ignored; any session id without dots is one (SessionURLs)', async () => {
      const id = crypto.randomUUID();
      assert.equal((await request(port, 'POST', `/echo/000/${id}/xhr`)).body, 'o\n');
      assert.equal((await request(port, 'POST', `/echo/000/${id}/xhr_send`, {}, '["a"]')).status, 204);
      assert.equal((await request(port, 'POST', `/echo/999/${id}/xhr`)).body, 'a["a"]\n');
      const r = crypto.randomUUID();
      for (const part of ['/a/a' + r, '/_/_' + r, '/1/' + r + 'x', '/abcdefgh_i-j%20/abcdefg_i-j%20' + r]) {
        assert.equal((await request(port, 'POST', `/echo${part}/xhr`)).body, 'o\n', part);
      }
      for (const part of ['//', '/a./a', '/a/a.', '/./.', '/', '///']) {
        assert.equal((await request(port, 'POST', `/echo${part}/xhr`)).status, 404, part);
      }
    });

    test('a second receiver gets c[2010,...] and the first one goes on (Protocol.test_simpleSession)', async () => {
      const url = session();
      assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
      const waiting = request(port, 'POST', `${url}/xhr`, {}, '', { timeoutMs: 5000 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const second = await request(port, 'POST', `${url}/xhr`);
      assert.equal(second.status, 200);
      assert.equal(second.body, 'c[2010,"Another connection still open"]\n');
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["b"]')).status, 204);
      assert.equal((await waiting).body, 'a["b"]\n');
    });

    test('a closed session answers its close frame to every poll (Protocol.test_closeSession)', async () => {
      const url = session('close');
      assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
      for (let i = 0; i < 3; i++) {
        const r = await request(port, 'POST', `${url}/xhr`);
        assert.equal(r.status, 200);
        assert.equal(r.body, 'c[3000,"Go away!"]\n');
      }
    });

    test('OPTIONS: cacheable preflights with CORS, methods and the requested headers echoed (test_options, test_request_headers_cors)', async () => {
      for (const suffix of ['/xhr', '/xhr_send', '/xhr_streaming']) {
        for (const origin of ['test', 'null']) {
          const r = await request(port, 'OPTIONS', `/echo/abc/abc${suffix}`, { Origin: origin, 'Access-Control-Request-Method': 'OPTIONS, POST' });
          assert.ok(r.status === 204 || r.status === 200, `${suffix}: ${r.status}`);
          assert.match(r.headers['cache-control'], /public/);
          assert.match(r.headers['cache-control'], /max-age=[1-9][0-9]{6}/);
          assert.ok(r.headers.expires);
          assert.ok(Number(r.headers['access-control-max-age']) > 1_000_000);
          assert.match(r.headers['access-control-allow-methods'], /OPTIONS/);
          assert.match(r.headers['access-control-allow-methods'], /POST/);
          assert.equal(r.body, '');
          verifyCors(r, origin);
        }
      }
      const asked = await request(port, 'OPTIONS', `${session()}/xhr`, { Origin: 'test', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'a, b, c' });
      assert.equal(asked.headers['access-control-allow-headers'], 'a, b, c');
      const none = await request(port, 'OPTIONS', `${session()}/xhr`, { Origin: 'test', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': '' });
      assert.equal(none.headers['access-control-allow-headers'], undefined);
    });

    test('the server escapes what it must; what the client escaped comes back intact (JSONEncoding)', async () => {
      const url = session();
      assert.equal((await request(port, 'POST', `${url}/xhr`)).body, 'o\n');
      // escapable_by_server, from 255 up, sent as raw UTF-8 (surrogates cannot be).
      const codes = [];
      for (let c = 255; c < 65536; c++) {
        const ch = String.fromCharCode(c);
        if (/[\x00-\x1f\u200c-\u200f\u2028-\u202f\u2060-\u206f\ufff0-\uffff]/.test(ch)) codes.push(c);
      }
      const text = String.fromCharCode(...codes);
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, JSON.stringify([text]))).status, 204);
      const poll = await request(port, 'POST', `${url}/xhr`);
      const expected = `"${codes.map((c) => `\\u${c.toString(16).padStart(4, '0')}`).join('')}"`;
      assert.equal(poll.body.trim().slice(2, -1), expected);

      // Client-escaped control and format characters, decoded on the way in and back out equal.
      const hostile = '\u0000\u001f\u007f\u00ad\u0600\u2000\u20ff\ufeff\ufff0 "\\ \ud83d\ude00 é';
      const escaped = JSON.stringify(hostile).replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, `[${escaped}]`)).status, 204);
      const back = await request(port, 'POST', `${url}/xhr`);
      assert.deepEqual(JSON.parse(back.body.trim().slice(1)), [hostile]);
    });
  });

  describe('xhr streaming', () => {
    test('prelude, open, messages, one chunk per frame, CORS, never cached (XhrStreaming.test_transport)', async () => {
      const url = session();
      const stream = await Stream.open(port, 'POST', `${url}/xhr_streaming`, { headers: { Origin: 'test' } });
      try {
        assert.equal(stream.status, 200);
        assert.equal(stream.headers['transfer-encoding'], 'chunked');
        assert.equal(stream.headers['content-length'], undefined);
        assert.equal(contentType(stream), JAVASCRIPT);
        verifyCors(stream, 'test');
        verifyNotCached(stream);
        assert.equal(await stream.chunk(), PRELUDE);
        assert.equal(await stream.chunk(), 'o\n');
        assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["x"]')).status, 204);
        assert.equal(await stream.chunk(), 'a["x"]\n');
      } finally {
        stream.destroy();
      }
    });

    test('the response ends after 4,096 bytes of frames; the session lives on for the next request (test_response_limit)', async () => {
      const url = session();
      const stream = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
      const msg = `"${'x'.repeat(128)}"`;
      try {
        assert.equal(await stream.chunk(), PRELUDE);
        assert.equal(await stream.chunk(), 'o\n');
        for (let i = 0; i < 31; i++) {
          assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, `[${msg}]`)).status, 204);
          assert.equal(await stream.chunk(), `a[${msg}]\n`, `message ${i}`);
        }
        assert.equal(await stream.chunk(), '', 'the last chunk');
      } finally {
        stream.destroy();
      }
      // Sent while no receiver is attached: kept for the next one.
      assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["after"]')).status, 204);
      const next = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
      try {
        assert.equal(await next.chunk(), PRELUDE);
        assert.equal(await next.chunk(), 'a["after"]\n');
      } finally {
        next.destroy();
      }
    });

    test('HTTP/1.1 on /close: prelude, o, c[3000,...] and the last chunk (Http11.test_streaming)', async () => {
      const stream = await Stream.open(port, 'POST', `${session('close')}/xhr_streaming`, { headers: { Connection: 'Keep-Alive' } });
      try {
        assert.equal(stream.headers['content-length'], undefined);
        assert.equal((await stream.chunk())[0], 'h');
        assert.equal(await stream.chunk(), 'o\n');
        assert.equal(await stream.chunk(), 'c[3000,"Go away!"]\n');
        assert.equal(await stream.chunk(), '');
      } finally {
        stream.destroy();
      }
    });

    test('HTTP/1.0: no Transfer-Encoding, no Content-Length, the body ends with the connection (Http10.test_streaming)', async () => {
      const stream = await Stream.open(port, 'POST', `${session('close')}/xhr_streaming`, { version: '1.0', headers: { Connection: 'Keep-Alive' } });
      try {
        assert.equal(stream.status, 200);
        assert.equal(stream.headers['transfer-encoding'], undefined);
        assert.equal(stream.headers['content-length'], undefined);
        assert.equal((await stream.bytes(2049))[0], 'h');
        assert.equal(await stream.bytes(2), 'o\n');
        assert.equal(await stream.bytes(19), 'c[3000,"Go away!"]\n');
        assert.ok(await stream.closed(), 'the server closes the connection');
      } finally {
        stream.destroy();
      }
    });

    test('the close frame ends every streaming response; a later one gets it again (HandlingClose.test_close_frame)', async () => {
      const url = session('close');
      const first = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
      const second = { stream: null };
      try {
        assert.equal(await first.chunk(), PRELUDE);
        assert.equal(await first.chunk(), 'o\n');
        assert.equal(await first.chunk(), 'c[3000,"Go away!"]\n');
        second.stream = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
        assert.equal(await second.stream.chunk(), PRELUDE);
        assert.equal(await second.stream.chunk(), 'c[3000,"Go away!"]\n');
        assert.equal(await first.chunk(), '');
        assert.equal(await second.stream.chunk(), '');
      } finally {
        first.destroy();
        second.stream?.destroy();
      }
    });

    test('a second receiver gets c[2010,...] and ends; aborting the first interrupts the session (test_close_request, test_abort_xhr_streaming)', async () => {
      const url = session();
      const first = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
      assert.equal(await first.chunk(), PRELUDE);
      assert.equal(await first.chunk(), 'o\n');
      const second = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
      try {
        assert.equal(await second.chunk(), PRELUDE);
        assert.equal(await second.chunk(), 'c[2010,"Another connection still open"]\n');
        assert.equal(await second.chunk(), '');
      } finally {
        second.destroy();
      }
      first.destroy();
      await new Promise((resolve) => setTimeout(resolve, 250));
      const third = await Stream.open(port, 'POST', `${url}/xhr_streaming`);
      try {
        assert.equal(await third.chunk(), PRELUDE);
        assert.equal(await third.chunk(), 'c[1002,"Connection interrupted"]\n');
      } finally {
        third.destroy();
      }
    });
  });

  describe('eventsource', () => {
    test('the blank-line prelude, data: frames, never cached; escapes survive (EventSource.test_transport)', async () => {
      const url = session();
      const stream = await Stream.open(port, 'GET', `${url}/eventsource`);
      try {
        assert.equal(stream.status, 200);
        assert.equal(contentType(stream), 'text/event-stream;charset=UTF-8');
        verifyNotCached(stream);
        assert.equal(await stream.chunk(), '\r\n');
        assert.equal(await stream.chunk(), 'data: o\r\n\r\n');
        assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["x"]')).status, 204);
        assert.equal(await stream.chunk(), 'data: a["x"]\r\n\r\n');
        assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["  \\u0000\\n\\r "]')).status, 204);
        assert.equal(await stream.chunk(), 'data: a["  \\u0000\\n\\r "]\r\n\r\n');
        assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["100%"]')).status, 204);
        assert.equal(await stream.chunk(), 'data: a["100%25"]\r\n\r\n');
      } finally {
        stream.destroy();
      }
    });

    test('one message past the limit ends the response (EventSource.test_response_limit)', async () => {
      const url = session();
      const stream = await Stream.open(port, 'GET', `${url}/eventsource`);
      try {
        await stream.chunk();
        assert.equal(await stream.chunk(), 'data: o\r\n\r\n');
        const msg = `"${'x'.repeat(4096)}"`;
        assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, `[${msg}]`)).status, 204);
        assert.equal(await stream.chunk(), `data: a[${msg}]\r\n\r\n`);
        assert.equal(await stream.chunk(), '');
      } finally {
        stream.destroy();
      }
    });
  });

  describe('htmlfile', () => {
    test('the padded page naming the callback, then one <script> per frame (HtmlFile.test_transport)', async () => {
      const url = session();
      const stream = await Stream.open(port, 'GET', `${url}/htmlfile?c=%63allback`);
      try {
        assert.equal(stream.status, 200);
        assert.equal(contentType(stream), 'text/html;charset=UTF-8');
        verifyNotCached(stream);
        const page = await stream.chunk();
        assert.ok(page.length > 1024, `the page is ${page.length} bytes`);
        assert.match(page.trim(), /^<!doctype html>\n<html><head>[\s\S]*var c = parent\.callback;\n    c\.start\(\);[\s\S]*<\/script>$/);
        assert.equal(await stream.chunk(), '<script>\np("o");\n</script>\r\n');
        assert.equal((await request(port, 'POST', `${url}/xhr_send`, {}, '["x"]')).status, 204);
        assert.equal(await stream.chunk(), '<script>\np("a[\\"x\\"]");\n</script>\r\n');
      } finally {
        stream.destroy();
      }
    });

    test('a missing or invalid callback is 500 with the protocol texts (test_no_callback, test_invalid_callback)', async () => {
      const missing = await request(port, 'GET', '/echo/a/a/htmlfile');
      assert.equal(missing.status, 500);
      assert.match(missing.body, /"callback" parameter required/);
      for (const callback of ['%20', '*', 'abc(', 'abc%28']) {
        const r = await request(port, 'GET', `/echo/a/a/htmlfile?c=${callback}`);
        assert.equal(r.status, 500, callback);
        assert.match(r.body, /invalid "callback" parameter/);
      }
    });
  });

  describe('jsonp polling', () => {
    test('/**/callback("frame"); with jsonp_send as a form or raw text (JsonPolling.test_transport, test_content_types)', async () => {
      const url = session();
      const open = await request(port, 'GET', `${url}/jsonp?c=%63allback`);
      assert.equal(open.status, 200);
      assert.equal(contentType(open), JAVASCRIPT);
      verifyNotCached(open);
      assert.equal(open.body, '/**/callback("o");\r\n');
      const form = await request(port, 'POST', `${url}/jsonp_send`, { 'Content-Type': 'application/x-www-form-urlencoded' }, 'd=%5B%22abc%22%5D');
      assert.equal(form.status, 200);
      assert.equal(form.body, 'ok');
      assert.equal(contentType(form), 'text/plain;charset=UTF-8');
      verifyNotCached(form);
      const raw = await request(port, 'POST', `${url}/jsonp_send`, { 'Content-Type': 'text/plain' }, '["%61bc"]');
      assert.equal(raw.body, 'ok');
      const poll = await request(port, 'GET', `${url}/jsonp?c=x`);
      assert.equal(poll.body, '/**/x("a[\\"abc\\",\\"%61bc\\"]");\r\n');
    });

    test('broken and missing payloads are 500; empty frames are fine; a closed session repeats its close (test_invalid_json, test_close)', async () => {
      const url = session();
      assert.equal((await request(port, 'GET', `${url}/jsonp?c=x`)).body, '/**/x("o");\r\n');
      const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
      const broken = await request(port, 'POST', `${url}/jsonp_send`, form, 'd=%5B%22x');
      assert.equal(broken.status, 500);
      assert.match(broken.body, /Broken JSON encoding\./);
      for (const data of ['', 'd=', 'p=p']) {
        const r = await request(port, 'POST', `${url}/jsonp_send`, form, data);
        assert.equal(r.status, 500, JSON.stringify(data));
        assert.match(r.body, /Payload expected\./);
      }
      assert.equal((await request(port, 'POST', `${url}/jsonp_send`, form, 'd=%5B%5D')).body, 'ok');
      assert.equal((await request(port, 'POST', `${url}/jsonp_send`, form, 'd=%5B%22b%22%5D')).body, 'ok');
      assert.equal((await request(port, 'GET', `${url}/jsonp?c=x`)).body, '/**/x("a[\\"b\\"]");\r\n');

      const closing = session('close');
      assert.equal((await request(port, 'GET', `${closing}/jsonp?c=x`)).body, '/**/x("o");\r\n');
      for (let i = 0; i < 2; i++) {
        assert.equal((await request(port, 'GET', `${closing}/jsonp?c=x`)).body, '/**/x("c[3000,\\"Go away!\\"]");\r\n');
      }
      const missing = await request(port, 'GET', '/echo/a/a/jsonp');
      assert.equal(missing.status, 500);
      assert.match(missing.body, /"callback" parameter required/);
    });
  });

  describe('JSESSIONID (cookie_needed)', () => {
    const verifyCookie = (r, value = 'dummy') => {
      const [pair, path] = (r.headers['set-cookie'] ?? '').split(';');
      assert.equal(pair.trim(), `JSESSIONID=${value}`);
      assert.equal(path.trim().toLowerCase(), 'path=/');
    };

    test('every session transport sets it; a cookie the client has is echoed (JsessionidCookie)', async () => {
      const info = await request(port, 'GET', '/cookie_needed_echo/info');
      assert.equal(info.headers['set-cookie'], undefined);
      const poll = await request(port, 'POST', `${session('cookie_needed_echo')}/xhr`);
      assert.equal(poll.body, 'o\n');
      verifyCookie(poll);
      const echoed = await request(port, 'POST', `${session('cookie_needed_echo')}/xhr`, { Cookie: 'JSESSIONID=abcdef' });
      verifyCookie(echoed, 'abcdef');
      for (const [method, suffix] of [['POST', 'xhr_streaming'], ['GET', 'eventsource'], ['GET', 'htmlfile?c=%63allback']]) {
        const stream = await Stream.open(port, method, `${session('cookie_needed_echo')}/${suffix}`);
        try {
          assert.equal(stream.status, 200);
          verifyCookie(stream);
        } finally {
          stream.destroy();
        }
      }
      const url = session('cookie_needed_echo');
      verifyCookie(await request(port, 'GET', `${url}/jsonp?c=%63allback`));
      const sent = await request(port, 'POST', `${url}/jsonp_send`, { 'Content-Type': 'application/x-www-form-urlencoded' }, 'd=%5B%22x%22%5D');
      assert.equal(sent.body, 'ok');
      verifyCookie(sent);
      // Not on the services without the option.
      assert.equal((await request(port, 'POST', `${session()}/xhr`)).headers['set-cookie'], undefined);
    });
  });
});
