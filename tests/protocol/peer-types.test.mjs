// Type-level checks of the peer's public API (templates, wrap, overloads),
// compiled with `tsc --noEmit` against the built declarations. Every
// `@ts-expect-error` line must be an error and nothing else may be.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const entry = path.join(root, 'packages', 'rpc', 'dist', 'index.js');

const source = `
import {
  Peer, defineAction, wrap, exposeObject, openStream,
  type Action, type IncomingCall, type IncomingHandler, type Promisified, type RpcResponse, type RequestOf, type ResponseOf,
} from ${JSON.stringify(entry)};

declare const peer: Peer;
const add = defineAction<{ a: number; b: number }, number>('add');
const ping = defineAction('ping');
const greet = defineAction<string, string>('greet', { parse: (v) => String(v) });

type Same<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
const check = <T extends true>(): T | undefined => undefined;
check<Same<RequestOf<typeof add>, { a: number; b: number }>>();
check<Same<ResponseOf<typeof add>, number>>();

export async function calls(): Promise<void> {
  const n: number = await peer.call(add, { a: 1, b: 2 });
  // @ts-expect-error a missing field
  await peer.call(add, { a: 1 });
  // @ts-expect-error the payload is required
  await peer.call(add);
  // @ts-expect-error the result is a number
  const s: string = await peer.call(add, { a: 1, b: 2 });
  await peer.call(ping);
  await peer.call(ping, undefined, { timeoutMs: 5 });
  const g: string = await peer.call(greet, 'you', { signal: new AbortController().signal });
  const free: unknown = await peer.call('anything', { any: 'payload' });
  const typed: string = await peer.call<string>('anything');
  for await (const v of peer.callMany(add, { a: 1, b: 2 })) {
    const x: number = v;
    // @ts-expect-error a number, not a string
    const y: string = v;
    void x, y;
  }
  const r: RpcResponse = await peer.request(add, { a: 1, b: 2 });
  const code: number | null = r.code;
  peer.notify(ping);
  peer.notify(greet, 'x');
  // @ts-expect-error wrong payload type
  peer.notify(greet, 1);
  // @ts-expect-error unknown option
  await peer.call('x', null, { timeout: 5 });
  void n, s, g, free, typed, code;
}

export const handlers: IncomingHandler[] = [
  add.implement(({ a, b }) => a + b),
  add.implement(async ({ a }, call: IncomingCall) => (call.signal.aborted ? 0 : a)),
  // @ts-expect-error the handler must return a number
  add.implement(() => 'not a number'),
  ping.implement(() => undefined),
  exposeObject({ add: (a: number, b: number) => a + b }),
  (call) => {
    call.respond({ anything: true }, { last: false, stream: openStream(), files: [{ name: 'f', size: 0, data: new Uint8Array(0) }] });
    call.fastReply(3);
    call.error('E_CODE', 'message', { details: 1 });
    const payload: { a: number } = call.decode<{ a: number }>();
    return payload.a;
  },
];

interface Api {
  add(a: number, b: number): number;
  hello(name: string): Promise<string>;
  nothing(): void;
  count: number;
}
export async function remote(): Promise<void> {
  const api: Promisified<Api> = wrap<Api>(peer, { prefix: 'api.' });
  const sum: number = await api.add(1, 2);
  const hi: string = await api.hello('x');
  const none: void = await api.nothing();
  // @ts-expect-error a string argument where a number is expected
  await api.add('1', 2);
  // @ts-expect-error properties that are not methods are not exposed
  api.count;
  // @ts-expect-error the result is a number, not a string
  const wrong: string = await api.add(1, 2);
  void sum, hi, none, wrong;
}

export const actionIsReadOnly = (a: Action<number, number>): string => a.name;
`;

test('the public types of the peer check (tsc --noEmit)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'peer-types-'));
  try {
    writeFileSync(path.join(dir, 'check.ts'), source);
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM', 'DOM.AsyncIterable'],
          strict: true,
          noEmit: true,
          types: [],
          skipLibCheck: false,
        },
        files: ['check.ts'],
      }),
    );
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    assert.equal(result.status, 0, `tsc failed:\n${result.stdout}${result.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
