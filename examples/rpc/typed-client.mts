// The RPC example's client in TypeScript, with typed message templates:
// `defineAction<Request, Response>(name)` declares an action of the
// example server (app.mjs) once, and every call, handler and one-way
// message through it is type-checked: payloads, results, handlers' returns.
//
//   node examples/rpc/server.mjs                   first, then:
//   npx tsc -p examples/rpc                        compiles to examples/rpc/build/
//   node examples/rpc/build/typed-client.mjs [url] tcp://127.0.0.1:8081 by default;
//                                                  unix:… and ws://… too
//
// `mistakes()` at the end is never run: it holds calls the compiler must
// refuse (`@ts-expect-error`), so the build fails if the types get looser.
// Exits with 1 (after saying why) if anything is not as expected.
import type { Action } from 'switchboard-client/node';
import { Client, RemoteError, defineAction, transportFor } from 'switchboard-client/node';

// ---------------------------------------------------------------- the API

interface Greeting {
  message: string;
  worker: number;
}

interface Stats {
  logs: number;
  lastLog: string | null;
  cancelled: number;
  transport: 'tcp' | 'tls' | 'unix' | 'websocket';
  worker: number;
}

interface Welcome {
  connection: number;
  worker: number;
  transport: Stats['transport'];
}

type FeedItem = { kind: 'post'; text: string; from: number } | { kind: 'tick'; n: number; time: string };

/** The methods app.mjs exposes with the prefix `math.` (the client side: `wrap`). */
interface MathApi {
  mul(a: number, b: number): number;
  hypot(...values: number[]): number;
  mean(...values: number[]): number;
}

// What we call. A payload type of `void` means "no payload".
const greet = defineAction<{ name: string }, Greeting>('greet');
const add = defineAction<[number, number], number>('add');
const countdown = defineAction<number, number | 'liftoff'>('countdown');
const divide = defineAction<[number, number], number>('divide');
const log = defineAction<string>('log'); // one-way: no response type
const stats = defineAction<void, Stats>('stats');
const whoAmI = defineAction<void, { youSaid: string }>('whoAmI');
const feedJoin = defineAction<void, boolean>('feed.join');
const feedPost = defineAction<string, number>('feed.post');
const feedLeave = defineAction<void, boolean>('feed.leave');

// What the server sends us: its calls, its one-way messages, the channel.
const welcome = defineAction<Welcome>('server.welcome');
const describe = defineAction<{ askedBy: string }, string>('client.describe');
/**
 * The channel `feed`. Payloads from the network are only as typed as the
 * code that checks them: `parse` runs on every message before the handler
 * (a throw there reaches `handlererror`, not the handler).
 */
const feed: Action<FeedItem, void> = defineAction<FeedItem>('feed', {
  parse(payload) {
    const item = payload as Partial<FeedItem> | null;
    if (item?.kind === 'post' && typeof item.text === 'string' && typeof item.from === 'number') return item as FeedItem;
    if (item?.kind === 'tick' && typeof item.n === 'number' && typeof item.time === 'string') return item as FeedItem;
    throw new TypeError(`not a feed item: ${JSON.stringify(payload)}`);
  },
});

// ---------------------------------------------------------------- the run

const url = process.argv[2] ?? process.env.URL ?? 'tcp://127.0.0.1:8081';

function check(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Error(`unexpected: ${what}`);
}

let welcomed: (welcome: Welcome) => void = () => {};
const welcomeArrived = new Promise<Welcome>((resolve) => (welcomed = resolve));
const posts: string[] = [];

// A Client connects from a microtask: handlers registered right after the
// constructor are in place for the server's first message.
let client: Client;
try {
  client = new Client({ transport: await transportFor(url), reconnect: false });
  client.handle(welcome, (hello) => welcomed(hello));
  client.handle(describe, ({ askedBy }) => `a typed client, asked by ${askedBy}`);
  client.handle(feed, (item) => {
    if (item.kind === 'post') posts.push(item.text); // narrowed: item.text is a string
  });
  await client.ready;
} catch (error) {
  console.error(`cannot connect to ${url}: ${(error as RemoteError).code} ${(error as Error).message} (is examples/rpc/server.mjs running?)`);
  process.exit(1);
}

try {
  const hello = await welcomeArrived;
  console.log(`typed: connected to ${url}, welcomed as connection ${hello.connection} (${hello.transport})`);

  const greeting = await client.call(greet, { name: 'TypeScript' }); // Greeting
  check(greeting.message === 'Hello, TypeScript!', 'greet');
  const sum = await client.call(add, [40, 2], { timeoutMs: 1000 }); // number
  check(sum === 42, 'add');
  const counted: (number | 'liftoff')[] = [];
  for await (const value of client.callMany(countdown, 3)) counted.push(value);
  check(counted.join() === '3,2,1,liftoff', 'countdown');
  console.log(`typed calls: greet → ${greeting.message}, add([40, 2]) → ${sum}, countdown(3) → ${counted.join(', ')}`);

  const code = await client.call(divide, [1, 0]).then(
    () => 'no error',
    (error: unknown) => (error instanceof RemoteError ? error.code : String(error)),
  );
  check(code === 'E_DIVIDE_BY_ZERO', 'divide');
  client.notify(log, 'from TypeScript');
  const after = await client.call(stats); // no payload: the template's is void
  check(after.lastLog === 'from TypeScript', 'log');
  console.log(`typed errors and one-way: divide([1, 0]) → ${code}; notify(log) → the server's last log "${after.lastLog}"`);

  // The server calls us: the `describe` handler above answers a string.
  const who = await client.call(whoAmI);
  check(who.youSaid.startsWith('a typed client'), 'whoAmI');
  // wrap<T>(): an interface's methods as promises of their results.
  const math = client.wrap<MathApi>({ prefix: 'math.' });
  const mean = await math.mean(1, 2, 6); // number
  check(mean === 3, 'math.mean');
  console.log(`typed handler and wrap: whoAmI → "${who.youSaid}"; math.mean(1, 2, 6) → ${mean}`);

  // The channel, through the parsed template.
  check(await client.call(feedJoin), 'feed.join');
  const reached = await client.call(feedPost, 'typed hello');
  for (let waited = 0; !posts.includes('typed hello') && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
  check(posts.includes('typed hello'), 'the post came back through the feed');
  await client.call(feedLeave);
  console.log(`typed channel: feed.post → ${reached} subscriber(s); received "${posts.at(-1)}"`);
} catch (error) {
  console.error(`FAILED over ${url}:`, error);
  process.exitCode = 1;
} finally {
  await client.close();
  console.log('closed');
}

// ---------------------------------------------------------------- compile-time checks

/** Never called: each line is a mistake the compiler refuses. */
export async function mistakes(typed: Client): Promise<void> {
  // @ts-expect-error: greet's payload is { name: string }
  await typed.call(greet, { nom: 'Ada' });
  // @ts-expect-error: add answers a number
  const text: string = await typed.call(add, [1, 2]);
  // @ts-expect-error: add takes a pair of numbers, not one
  await typed.call(add, 40);
  // @ts-expect-error: the payload of feed.post is required
  await typed.call(feedPost);
  // @ts-expect-error: a handler of client.describe answers a string
  typed.handle(describe, () => 42);
  // @ts-expect-error: MathApi has no `div`
  await typed.wrap<MathApi>({ prefix: 'math.' }).div(1, 2);
  void text;
}
