// Request heads ported as data from the test suite of http_desync_guardian
// (https://github.com/aws/http-desync-guardian, tests/severe.yaml,
// tests/ambiguous.yaml, tests/edge-cases.yaml, tests/real-life-test-cases.yaml;
// Apache License 2.0, Copyright Amazon.com, Inc. or its affiliates), for
// tests/e2e/http/smuggling.test.mjs.
//
// What was kept: each case's name, method, target, version and header lines
// (names and values as bytes, one character per byte; the YAML's non-ASCII
// characters as their UTF-8 bytes), for the cases about body framing and
// header syntax. What changed: the guardian classifies a head (Compliant,
// Acceptable, Ambiguous, Severe); `expect` here is Switchboard's answer under
// docs/http.md "Strict parsing" (a status the core refuses with, then
// closes; or what it serves). A `Host: x` line is put first when the case has
// no Host (as spec/http/requests.json's [+Host] cases do), so a case reaches
// the rule it tests rather than "no Host". The test sends each head followed
// by a pipelined `GET /smuggled` and no body: an accepted head with a
// Content-Length takes the pipelined bytes as its body.
//
// Left out: the URI-only, compliant and acceptable files (no framing
// question in them) and the cases that repeat one below with other values.

/** Headers a browser sends, as the real-life cases have them (values with their leading space). */
const BROWSER = [
  ['User-Agent', ' Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:68.0) Gecko/20100101 Firefox/68.0'],
  ['Accept', ' text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
  ['Accept-Language', ' en-US,en;q=0.5'],
  ['Accept-Encoding', ' gzip, deflate'],
  ['Connection', ' keep-alive'],
  ['Upgrade-Insecure-Requests', ' 1'],
];

/** UTF-8 bytes of `text` as a one-byte-per-character string. */
const utf8 = (text) => Buffer.from(text, 'utf8').toString('latin1');

const post = (headers, extra = {}) => ({ method: 'POST', uri: '/foo/bar', version: 'HTTP/1.1', headers, ...extra });

// `expect`: a number is a refusal with that status and a close; an object is
// { status: [...], closed, served: [[method, url, body?], ...] } as in the
// main table of smuggling.test.mjs.
export const GUARDIAN_CASES = [
  // severe.yaml: "MUST be treated as irrecoverable error (400 + closing FE connection)".
  { file: 'severe.yaml', name: 'Multiple Content-Length', ...post([['Content-Length', '1000'], ['Content-Length', '100']]), expect: 400 },
  { file: 'severe.yaml', name: 'Bad Content-Length: 1000,1000', ...post([['Content-Length', '1000,1000']]), expect: 400 },
  { file: 'severe.yaml', name: 'Bad Content-Length: 1000 1000', ...post([['Content-Length', '1000 1000']]), expect: 400 },
  { file: 'severe.yaml', name: 'Bad Content-Length: 1000.1000', ...post([['Content-Length', '1000.1000']]), expect: 400 },
  { file: 'severe.yaml', name: 'Bad Content-Length (64-bits overflow)', ...post([['Content-Length', '18446744073709551616']]), expect: 400 },
  { file: 'severe.yaml', name: 'Unknown Transfer-Encoding: xchunked', ...post([['Transfer-Encoding', 'xchunked']]), expect: 400 },
  { file: 'severe.yaml', name: 'Bad character in Transfer-Encoding value: chunked\\x11', ...post([['Transfer-Encoding', 'chunked\x11']]), expect: 400 },
  { file: 'severe.yaml', name: 'Bad character in Content-Length value: 1000\\x11', ...post([['Content-Length', '1000\x11']]), expect: 400 },
  { file: 'severe.yaml', name: 'Multiple Transfer-Encoding: chunked', ...post([['Transfer-Encoding', 'chunked'], ['Transfer-Encoding', 'chunked']]), expect: 400 },
  { file: 'severe.yaml', name: 'Multiple Transfer-Encoding: chunked,chunked', ...post([['Transfer-Encoding', 'chunked,chunked']]), expect: 400 },
  {
    file: 'severe.yaml',
    name: 'Multiline headers are deprecated',
    ...post([['Content-Length', '1000'], ['Some-Custom-Header', 'Multi-line values\r\n are \n deprecated. E.g. it may contain \n Transfer-Encoding: chunked\r\n']]),
    expect: 400,
  },
  {
    file: 'severe.yaml',
    name: 'Multiline headers are deprecated (with \\n only)',
    ...post([['Content-Length', '1000'], ['Some-Custom-Header', 'Multi-line values\n are \n deprecated. E.g. it may contain \n Transfer-Encoding: chunked']]),
    expect: 400,
  },
  { file: 'severe.yaml', name: 'Http Engine missed CR', ...post([['Content-Length', '1000'], ['Some-Custom-Header', 'Parser error\r must not contain\r symbols.']]), expect: 400 },
  { file: 'severe.yaml', name: 'Http Engine missed LF', ...post([['Content-Length', '1000'], ['Some-Custom-Header', 'Parser error\n must not contain\n symbols.']]), expect: 400 },
  { file: 'severe.yaml', name: '\\r in name is bad', ...post([['Some-Bad-Header\r', '1000']]), expect: 400 },
  {
    file: 'severe.yaml',
    name: '\\n in name is bad',
    ...post([['Some-Bad-Header\n', 'Content-Length:1000\r\n Transfer-Encoding: chunked'], ['Content-Length', '100']]),
    expect: 400,
  },
  { file: 'severe.yaml', name: '\\0 in name is bad', ...post([['Some-Bad-Header\x00', '1000']]), expect: 400 },
  { file: 'severe.yaml', name: '\\r in value is bad', ...post([['Some-Bad-Header', 'value\rcontent-length: 1000'], ['Content-Length', '100']]), expect: 400 },
  { file: 'severe.yaml', name: '\\n in value is bad', ...post([['Some-Bad-Header', 'value\n content-length: 1000'], ['Content-Length', '100']]), expect: 400 },
  { file: 'severe.yaml', name: '\\0 in value is bad', ...post([['Some-Bad-Header', 'value\x00content-length: 1000'], ['Content-Length', '100']]), expect: 400 },
  { file: 'severe.yaml', name: '\\0 at the start of a line', ...post([['\x00Some-Bad-Header', 'value'], ['Content-Length', '100']]), expect: 400 },
  { file: 'severe.yaml', name: '\\0 at the start of a value', ...post([['Some-Bad-Header', '\x00value'], ['Content-Length', '100']]), expect: 400 },
  { file: 'severe.yaml', name: '\\0 at the end of a value', ...post([['Some-Bad-Header', 'value\x00'], ['Content-Length', '100']]), expect: 400 },
  { file: 'severe.yaml', name: 'Content-Length[white-space] and Content-Length', ...post([['Content-Length ', '100'], ['Content-Length', '1000']]), expect: 400 },
  { file: 'severe.yaml', name: '[white-space]Content-Length and Content-Length', ...post([[' Content-Length', '100'], ['Content-Length', '1000']]), expect: 400 },
  { file: 'severe.yaml', name: 'Transfer-Encoding[white-space] and Transfer-Encoding', ...post([['Transfer-Encoding ', 'chunked'], ['Transfer-Encoding', 'chunked']]), expect: 400 },
  { file: 'severe.yaml', name: 'Bad method', method: 'bad_method\x01', uri: '/foo/bar', version: 'HTTP/1.1', headers: [['Host', 'localhost']], expect: 400 },

  // ambiguous.yaml: "The proxy should either reject such requests, or close both FE/BE connections".
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding with a trailing space in name', ...post([['Transfer-Encoding ', 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding with a trailing tab in name', ...post([['Transfer-Encoding\t', 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: '\\x01Transfer-Encoding with a non-printable character', ...post([['\x01Transfer-Encoding', 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: '\\x01\\x01Content-Length with a non-printable character', ...post([['\x01\x01Content-Length', '1']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding with a space in the middle', ...post([['Transfer- Encoding', 'chunked']]), expect: 400 },
  // A valid token that is not Transfer-Encoding: an unknown header (RFC 9110
  // §5.1), so the POST has no body and the pipelined request is the next one,
  // for node:http too. (A front end that maps `_` to `-` would disagree; that
  // is the front end's bug to refuse, as the guardian does.)
  {
    file: 'ambiguous.yaml',
    name: 'Transfer_Encoding with underscore.',
    ...post([['Transfer_Encoding', 'chunked']]),
    expect: { status: [200, 200], closed: false, served: [['POST', '/foo/bar', ''], ['GET', '/smuggled', '']] },
  },
  {
    file: 'ambiguous.yaml',
    name: 'Content_Length with underscore.',
    ...post([['Content_Length', '1000']]),
    expect: { status: [200, 200], closed: false, served: [['POST', '/foo/bar', ''], ['GET', '/smuggled', '']] },
  },
  { file: 'ambiguous.yaml', name: 'Duplicate Content-Length', ...post([['Content-Length', '1000'], ['Content-Length', '1000']], { method: 'PUT' }), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Both Transfer-Encoding:chunked and Content-Length', ...post([['Transfer-Encoding', 'chunked'], ['Content-Length', '100']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Both Transfer-Encoding and Content-Length', ...post([['Transfer-Encoding', 'gzip'], ['Content-Length', '100']]), expect: 400 },
  // RFC 9110 §9.3.1: a GET body has no defined semantics but is framed like
  // any other (RFC 9112 §6.3): the 1000 bytes are awaited, and the pipelined
  // request is the start of them, never a request.
  {
    file: 'ambiguous.yaml',
    name: 'Get with a body and Content-Length',
    ...post([['Content-Length', '1000']], { method: 'GET' }),
    expect: { status: [], closed: false, served: [['GET', '/foo/bar']] },
  },
  // The chunked body starts with the pipelined bytes: `GET ...` is not a chunk size.
  { file: 'ambiguous.yaml', name: 'Get with a body and Transfer-Encoding', ...post([['Transfer-Encoding', 'chunked']], { method: 'GET' }), expect: { status: [400], closed: true, served: [['GET', '/foo/bar', null]] } },
  {
    file: 'ambiguous.yaml',
    name: 'Head with a body and Content-Length',
    ...post([['Content-Length', '1000']], { method: 'HEAD' }),
    expect: { status: [], closed: false, served: [['HEAD', '/foo/bar']] },
  },
  { file: 'ambiguous.yaml', name: 'Head with a body and Transfer-Encoding', ...post([['Transfer-Encoding', 'chunked']], { method: 'HEAD' }), expect: { status: [400], closed: true, served: [['HEAD', '/foo/bar', null]] }, headOnly: true },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding[white-space] and Content-Length', ...post([['Transfer-Encoding ', 'chunked'], ['Content-Length', '1000']]), expect: 400 },
  { file: 'ambiguous.yaml', name: '[white-space]Transfer-Encoding and Content-Length', ...post([[' Transfer-Encoding', 'chunked'], ['Content-Length', '1000']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding[white-space] with a printable character', ...post([['Transfer-Encoding x', 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding[white-space] with a non-printable character', ...post([['Transfer-Encoding \x01', 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Empty header name', ...post([['', 'chunked'], ['Content-Length', '1000']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Header name starts with :', ...post([[':SomeHeader:Transfer-Encoding:', 'chunked'], ['Content-Length', '1000']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Only white-spaces header name', ...post([['   \t\t  ', 'chunked'], ['Content-Length', '1000']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding for HTTP/1.0', ...post([['Transfer-Encoding', 'chunked']], { version: 'HTTP/1.0' }), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding for HTTP/0.9', ...post([['Transfer-Encoding', 'chunked']], { version: 'HTTP/0.9' }), expect: 505 },
  { file: 'ambiguous.yaml', name: 'Content-Length for HTTP/0.9', ...post([['Content-Length', '100']], { version: 'HTTP/0.9' }), expect: 505 },
  // No version at all is not a version Switchboard refuses with 505 but a
  // malformed request line (RFC 9112 §3: the HTTP-version is part of it).
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding for empty protocol, which is HTTP/0.9', ...post([['Transfer-Encoding', 'chunked']], { version: '' }), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Content-Length for empty protocol, which is HTTP/0.9', ...post([['Content-Length', '100']], { version: '' }), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding Latin Small Letter Long S', ...post([[utf8('Tranſfer-Encoding'), 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding Latin Small Letter Dotless I', ...post([[utf8('Transfer-Encodıng'), 'chunked']]), expect: 400 },
  {
    file: 'ambiguous.yaml',
    name: 'Transfer-Encoding with multiple hyphens',
    ...post([['Transfer---Encoding', 'chunked']]),
    expect: { status: [200, 200], closed: false, served: [['POST', '/foo/bar', ''], ['GET', '/smuggled', '']] },
  },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding with UTF8 spaces', ...post([[utf8('\u2003Transfer-Encoding'), 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Content-Length with UTF8 spaces', ...post([[utf8('Content-Length\u2003'), '1000']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding with a UTF8 delimiter', ...post([[utf8('Transfer\u2015Encoding'), 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Transfer-Encoding with arbitrary non-ASCII chars', ...post([['Transfer-Encoding\x88', 'chunked']]), expect: 400 },
  { file: 'ambiguous.yaml', name: 'Content-Length with arbitrary non-ASCII chars', ...post([['\xa0Content-Length', '100']]), expect: 400 },

  // edge-cases.yaml: several violations at once.
  { file: 'edge-cases.yaml', name: 'Bad non-essential header does not shadow bad Content-Length', ...post([['Some-Custom-Header', 'Non-Rfc Compliant\x12'], ['Content-Length', '1000\x11']]), expect: 400 },
  { file: 'edge-cases.yaml', name: 'Bad non-essential header does not shadow bad Transfer-Encoding', ...post([['Some-Custom-Header', 'Non-Rfc Compliant\x11'], ['Transfer-Encoding', 'chunked\x7f']]), expect: 400 },
  {
    file: 'edge-cases.yaml',
    name: 'Non-compliant character does not shadow bad character',
    ...post([['Some-Custom-Header\t', '\x11\x12 But then \x00 which is bad'], ['Transfer-Encoding\t', 'chunked']], { method: 'PUT' }),
    expect: 400,
  },
  { file: 'edge-cases.yaml', name: 'Bad header does not shadow other bad headers', ...post([['Some-Custom-Header', '\x11Rfc Compliant'], ['Transfer-Encoding', 'chunked\x80'], ['Content-Length', '$9000']]), expect: 400 },
  {
    file: 'edge-cases.yaml',
    name: 'Bad URI does not shadow essential ambiguous headers',
    ...post([['Some-Custom-Header', 'Non Rfc -Compliant\x01'], ['Content-Length', '9000']], { method: 'GET', uri: '/foo/bar\t/baz' }),
    expect: 400,
  },

  // real-life-test-cases.yaml: a browser's headers around the bad one.
  // Content-Length 22 takes `GET /smuggled HTTP/1.1` as the body; what is
  // left (`\r\nHost: x\r\n\r\n`) is an empty line and then `Host: x` as a
  // request line, which is malformed: 400 after the first response.
  {
    file: 'real-life-test-cases.yaml',
    name: 'Has a CL in GET',
    method: 'GET',
    uri: '/test.html',
    version: 'HTTP/1.1',
    headers: [...BROWSER, ['Content-Length', ' 22']],
    expect: { status: [200, 400], closed: true, served: [['GET', '/test.html', 'GET /smuggled HTTP/1.1']] },
  },
  { file: 'real-life-test-cases.yaml', name: 'Two Identical Fields - TE', ...post([...BROWSER, ['Transfer-Encoding', ' chunked'], ['Transfer-Encoding', ' chunked'], ['Content-Length', ' 4']], { uri: '/test.html' }), expect: 400 },
  { file: 'real-life-test-cases.yaml', name: 'Null in Headers', ...post([...BROWSER, ['Bad-Accept-Encoding', ' gzip, \x00deflate'], ['Transfer-Encoding', ' chunked']], { uri: '/test.html' }), expect: 400 },
  { file: 'real-life-test-cases.yaml', name: 'CRLF', ...post([...BROWSER, ['Content-Length', ' 4'], ['\x00Transfer-Encoding', ' chunked']], { uri: '/test.html' }), expect: 400 },
  { file: 'real-life-test-cases.yaml', name: 'Size Issue', ...post([...BROWSER, ['Content-Length', ' 4'], ['X-test', ' x\rTransfer-Encoding: chunked']], { uri: '/test.html' }), expect: 400 },
  { file: 'real-life-test-cases.yaml', name: 'Transfer-Encoding[tab]: chunked', ...post([...BROWSER, ['Transfer-Encoding\t', ' chunked'], ['Content-Length', ' 4']], { uri: '/test.html' }), expect: 400 },
  { file: 'real-life-test-cases.yaml', name: '\\rTransfer-Encoding: chunked without CL', ...post([...BROWSER, ['\rTransfer-Encoding', ' chunked']], { uri: '/test.html' }), expect: 400 },
  { file: 'real-life-test-cases.yaml', name: 'Transfer-Encoding: chunk', ...post([...BROWSER, ['Transfer-Encoding', ' chunk'], ['Content-Length', ' 4']], { uri: '/test.html' }), expect: 400 },
];

/** The bytes of a ported case: its head (Host first when it has none), then `after`. */
export function guardianRequest(c, after) {
  const hasHost = c.headers.some(([name]) => name.toLowerCase() === 'host');
  const headers = hasHost ? c.headers : [['Host', 'x'], ...c.headers];
  const line = `${c.method} ${c.uri}${c.version ? ` ${c.version}` : ''}`;
  return `${line}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${after}`;
}
