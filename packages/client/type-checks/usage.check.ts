// Compile-time checks of the public API as a browser application sees it
// (DOM lib, no Node types). Run by tests/client/types.test.mjs.
import type { GapEvent, IncomingCall, Publication, RpcResponse, WebSocketConstructor } from '../src/index.js';
import { Client, ConnectionState, SubscriptionState, connect, defineAction, webSocketTransport } from '../src/index.js';

type Assert<T extends true> = T;
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// The browser's WebSocket class is a WebSocketConstructor.
export const browserWebSocket: WebSocketConstructor = WebSocket;

interface MathApi {
  add(a: number, b: number): number;
  slow(ms: number): Promise<string>;
}

export async function usage(): Promise<void> {
  const client = new Client({ transport: webSocketTransport('wss://example.com/rpc'), reconnect: { maxAttempts: 5 } });
  const viaConnect: Client = await connect('wss://example.com/rpc', { connectData: () => 'token', defaultTimeoutMs: 5000 });
  void viaConnect;

  // Typed actions: payload and result types flow through.
  const add = defineAction<{ a: number; b: number }, number>('add');
  const sum = await client.call(add, { a: 1, b: 2 }, { timeoutMs: 100 });
  type SumIsNumber = Assert<Equals<typeof sum, number>>;
  // @ts-expect-error: the payload type is checked
  await client.call(add, { a: 'one', b: 2 });
  // The action alone fixes the types: a payload does not widen them.
  const pair = defineAction<[number, number], number>('pair');
  // @ts-expect-error: a tuple of the wrong element type
  await client.call(pair, [1, '2']);
  const widened: { a: number | string; b: number } = { a: 1, b: 2 };
  // @ts-expect-error: a wider payload than the action takes
  await client.call(add, widened);
  // @ts-expect-error: the same for one-way messages
  client.notify(pair, [1, '2']);
  const ping = defineAction<void, string>('ping');
  const pong: string = await client.call(ping);
  void pong;

  // Untyped calls: unknown unless asked.
  const value = await client.call('echo', { x: 1 });
  type ValueIsUnknown = Assert<Equals<typeof value, unknown>>;
  const text = await client.call<string>('echo', 'x');
  void text.length;
  const response: RpcResponse = await client.request('echo', 1);
  void response.files;
  for await (const item of client.callMany<number>('count', 3)) void (item + 1);

  // Handlers for the server's calls.
  const double = defineAction<number, number>('double');
  const off = client.handle(double, (n: number, call: IncomingCall) => (call.cancelled ? 0 : n * 2));
  off();
  client.handle<{ name: string }>('greet', ({ name }) => `hello ${name}`);
  // @ts-expect-error: a typed action's handler returns its response type
  client.handle(double, () => 'not a number');
  client.setHandler(null);

  // wrap(): methods as promises.
  const api = client.wrap<MathApi>();
  const three = await api.add(1, 2);
  type ThreeIsNumber = Assert<Equals<typeof three, number>>;
  const later = await api.slow(5);
  type LaterIsString = Assert<Equals<typeof later, string>>;

  // Channels: an iterable of publications, or a callback; a template types the values.
  const prices = client.subscribe(defineAction<{ price: number }>('prices'));
  for await (const publication of prices) {
    const price: number = publication.value.price;
    void (price + publication.channel.length + publication.bytes.length + publication.uuid.length);
    break;
  }
  const news = client.subscribe<string>('news', (item: string, publication: Publication<string>) => void (item + publication.channel), { maxBuffered: 10 });
  await news.ready;
  news.on('gap', (gap: GapEvent) => void (gap.missedUntil - gap.missedFrom + (gap.dropped ?? 0) + gap.reason.length));
  news.on('closed', ({ error }) => void error?.code);
  const subscriptionState: SubscriptionState = news.state;
  if (subscriptionState === SubscriptionState.Resubscribing) news.unsubscribe();
  client.on('gap', (gap) => void gap.channel);
  // @ts-expect-error: the callback gets the template's type
  client.subscribe(defineAction<number>('n'), (value: string) => value);

  // State and events.
  const state: ConnectionState = client.state;
  if (state === ConnectionState.Reconnecting) void 0;
  client.on('disconnect', (event) => void (event.code + String(event.willReconnect)));
  client.on('reconnecting', (event) => void (event.attempt + event.delayMs));
  client.on('closed', (event) => void event.code);
  // @ts-expect-error: no such event
  client.on('nope', () => {});
  await client.ready;
  await client.close({ timeoutMs: 1000 });

  const checks: [SumIsNumber, ValueIsUnknown, ThreeIsNumber, LaterIsString] = [true, true, true, true];
  void checks;
}
