// Compile-time check that the hand-written view of the addon in
// `src/native.ts` matches the declarations napi-rs generates from the Rust
// code (`crates/node/index.d.ts`). Run by tests/docs/native-types.test.mjs.
import type * as Generated from '../../../crates/node/index.js';
import type { NativeModule, NativeServerHandle, NativeServerOptions, NativeStats } from '../src/native.js';

type Assert<T extends true> = T;
type Extends<A, B> = [A] extends [B] ? true : false;

// Everything our interface promises, the generated class has (with
// compatible signatures).
export type HandleMatches = Assert<Extends<Generated.ServerHandle, NativeServerHandle>>;
// What we pass as options, the addon accepts.
export type OptionsMatch = Assert<Extends<NativeServerOptions, Generated.ServerOptions>>;
// What the addon returns as stats is what we expose.
export type StatsMatch = Assert<Extends<Generated.StatsJs, NativeStats>>;
// The per-batch module function matches its declaration. (`send` and
// `publish` are raw Node-API functions the generator does not see; see
// crates/node/src/raw.rs. The end-to-end tests exercise them.)
export type DrainMatches = Assert<Extends<typeof Generated.drainEvents, NativeModule['drainEvents']>>;
