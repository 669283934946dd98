// The RPC scenarios (README.md): what each measures, the adapter methods it
// needs, and its configurations in a full and in a quick run. The driver
// (../driver.mjs) turns a scenario and a configuration into load.
import { MANY_RESPONSES, MiB, TINY } from './wire.mjs';

const T = TINY.length;

/**
 * name: what --scenario takes. requires: the client adapter methods it calls
 * (ADAPTERS.md). unit: what one operation is. full / quick: configurations:
 *   connections   connections the driver opens (one connect() each)
 *   in_flight     calls each connection keeps outstanding (closed loop: a
 *                 completed call starts the next); absent for one-way
 *   payload       request bytes; response the response bytes per call
 *   responses     responses per call (many-responses)
 *   source        'memory' or 'disk' (file scenarios)
 * figure: the primary figure of the tables: 'ops' (per second), 'latency'
 * (serial-rtt), 'bytes' (MiB/s), 'responses' (responses/s).
 */
export const SCENARIOS = [
  {
    name: 'heartbeat',
    title: 'heartbeat: protocol-level ping round trips',
    requires: ['ping'],
    unit: 'round trips',
    figure: 'ops',
    full: [
      { connections: 1, in_flight: 1 },
      { connections: 1, in_flight: 8 },
    ],
    quick: [{ connections: 1, in_flight: 1 }],
  },
  {
    name: 'one-way',
    title: 'one-way: fire-and-forget messages received per second',
    requires: ['notify', 'count'],
    unit: 'messages',
    figure: 'ops',
    full: [{ connections: 1, payload: T }],
    quick: [{ connections: 1, payload: T }],
  },
  {
    name: 'fast-reply',
    title: 'fast-reply: calls answered with an integer',
    requires: ['fast'],
    unit: 'replies',
    figure: 'ops',
    full: [{ connections: 10, in_flight: 10, payload: 0 }],
    quick: [{ connections: 2, in_flight: 10, payload: 0 }],
  },
  {
    name: 'tiny-response',
    title: 'tiny-response: request/response with 16 bytes each way',
    requires: ['call'],
    unit: 'calls',
    figure: 'ops',
    full: [{ connections: 10, in_flight: 10, payload: T, response: T }],
    quick: [{ connections: 2, in_flight: 10, payload: T, response: T }],
  },
  {
    name: 'payload-1mib',
    title: 'payload-1mib: the request carries 1 MiB, small response',
    requires: ['upload'],
    unit: 'calls',
    figure: 'bytes',
    full: [{ connections: 4, in_flight: 1, payload: MiB }],
    quick: [{ connections: 2, in_flight: 1, payload: MiB }],
  },
  {
    name: 'payload-4mib',
    title: 'payload-4mib: the request carries 4 MiB, small response',
    requires: ['upload'],
    unit: 'calls',
    figure: 'bytes',
    full: [{ connections: 4, in_flight: 1, payload: 4 * MiB }],
    quick: [{ connections: 2, in_flight: 1, payload: 4 * MiB }],
  },
  {
    name: 'file-1mib-memory',
    title: 'file-1mib-memory: a 1 MiB file uploaded from memory, consumed as a stream',
    requires: ['uploadFile'],
    unit: 'files',
    figure: 'bytes',
    full: [{ connections: 4, in_flight: 1, payload: MiB, source: 'memory' }],
    quick: [{ connections: 2, in_flight: 1, payload: MiB, source: 'memory' }],
  },
  {
    name: 'file-1mib-disk',
    title: 'file-1mib-disk: a 1 MiB file uploaded from a file on disk, consumed as a stream',
    requires: ['uploadFile'],
    unit: 'files',
    figure: 'bytes',
    full: [{ connections: 4, in_flight: 1, payload: MiB, source: 'disk' }],
    quick: [{ connections: 2, in_flight: 1, payload: MiB, source: 'disk' }],
  },
  {
    name: 'serial-rtt',
    title: 'serial-rtt: one call at a time, round-trip time',
    requires: ['call'],
    unit: 'calls',
    figure: 'latency',
    full: [{ connections: 1, in_flight: 1, payload: T, response: T }],
    quick: [{ connections: 1, in_flight: 1, payload: T, response: T }],
  },
  {
    name: 'parallel',
    title: 'parallel: many 16-byte calls in flight',
    requires: ['call'],
    unit: 'calls',
    figure: 'ops',
    full: [
      { connections: 1, in_flight: 100, payload: T, response: T },
      { connections: 10, in_flight: 100, payload: T, response: T },
    ],
    quick: [{ connections: 1, in_flight: 100, payload: T, response: T }],
  },
  {
    name: 'many-responses',
    title: `many-responses: one call, ${MANY_RESPONSES} responses of 16 bytes`,
    requires: ['many'],
    unit: 'calls',
    figure: 'responses',
    full: [{ connections: 1, in_flight: 10, payload: 0, responses: MANY_RESPONSES, response: T }],
    quick: [{ connections: 1, in_flight: 10, payload: 0, responses: MANY_RESPONSES, response: T }],
  },
];

export const SCENARIO_NAMES = SCENARIOS.map((s) => s.name);

export function scenarioByName(name) {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s) throw new Error(`unknown RPC scenario "${name}" (known: ${SCENARIO_NAMES.join(', ')})`);
  return s;
}

/** Warm-up and measured seconds per run. */
export function timing({ quick, warmup, duration }) {
  return {
    warmup: warmup ?? (quick ? 0.25 : 2),
    duration: duration ?? (quick ? 1 : 5),
  };
}

function size(bytes) {
  if (bytes >= MiB) return `${bytes / MiB} MiB`;
  return `${bytes} B`;
}

/** A short label for a configuration: "c=10 k=10 p=16 B". */
export function configLabel(config) {
  const parts = [`c=${config.connections}`];
  if (config.in_flight !== undefined) parts.push(`k=${config.in_flight}`);
  if (config.payload) parts.push(`p=${size(config.payload)}`);
  if (config.responses) parts.push(`r=${config.responses}`);
  if (config.source) parts.push(config.source);
  return parts.join(' ');
}

/** The configuration in words, for results.md. */
export function describeConfig(scenario, config) {
  const c = config.connections;
  const conns = `${c} connection${c === 1 ? '' : 's'}`;
  switch (scenario) {
    case 'heartbeat':
      return `${conns}, ${config.in_flight} ping${config.in_flight === 1 ? '' : 's'} in flight (each answered ping sends the next)`;
    case 'one-way':
      return `${conns}, ${size(config.payload)} messages sent as fast as the transport's flow control allows; the receiver counts them`;
    case 'serial-rtt':
      return `${conns}, one call at a time, ${size(config.payload)} request, ${size(config.response)} response`;
    case 'many-responses':
      return `${conns} × ${config.in_flight} calls in flight, each answered by ${config.responses} responses of ${size(config.response)}`;
    case 'file-1mib-memory':
    case 'file-1mib-disk':
      return `${conns} × ${config.in_flight} upload in flight, ${size(config.payload)} ${config.source === 'disk' ? 'read from a file (in the page cache)' : 'from a Buffer'}; the receiver counts the bytes as they stream in and answers the count`;
    case 'payload-1mib':
    case 'payload-4mib':
      return `${conns} × ${config.in_flight} call in flight, ${size(config.payload)} request received whole, the byte count as the response`;
    case 'fast-reply':
      return `${conns} × ${config.in_flight} calls in flight, empty request, an integer as the response`;
    default:
      return `${conns} × ${config.in_flight} calls in flight, ${size(config.payload)} request, ${size(config.response)} response`;
  }
}

/**
 * Every (scenario, configuration) of a run, with its timing. Returns
 * [{ scenario, config, label, warmup, duration, expectedS }].
 */
export function buildMatrix({ quick, scenarios, warmup, duration }) {
  const t = timing({ quick, warmup, duration });
  const out = [];
  for (const s of SCENARIOS) {
    if (!scenarios.includes(s.name)) continue;
    for (const config of quick ? s.quick : s.full) {
      // Starting the server and the driver's connections: about a second.
      out.push({ scenario: s.name, config, label: configLabel(config), ...t, expectedS: t.warmup + t.duration + 1.5 });
    }
  }
  return out;
}
