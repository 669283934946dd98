// The matrix of runs: the full suite (SCENARIOS.md) and a quick mode that
// exercises every scenario against every server in well under two minutes,
// so CI keeps the harness working (it measures nothing worth reading).

export const SCENARIO_NAMES = ['ws-echo', 'ws-broadcast-room', 'ws-channels', 'ws-idle', 'cross-node'];

/** The load generator's name for each scenario. */
export const LOADGEN_SCENARIO = {
  'ws-echo': 'echo',
  'ws-broadcast-room': 'room',
  'ws-channels': 'channels',
  'ws-idle': 'idle',
  'cross-node': 'fanout',
};

// The open-file limit bounds connections in each process (the server holds
// one socket per client, the load generator one per connection). Leave room
// for everything else a process opens: Node's own descriptors, worker
// threads' pipes, the listening socket, /proc reads.
const FD_MARGIN = 1000;
const CHANNELS_WANTED = 20_000;
const IDLE_WANTED = [10_000, 50_000];
const CHANNEL_SIZE = 10;
export const STOP_MEAN_LATENCY_MS = 200;

/**
 * Aggregate send rates for the room scenario: delivered = N × R, stepped
 * ×1.5 from about 20 k to about 8 M delivered messages/s, so each N is
 * measured across the same range of work for the server.
 */
export function roomRates(n, { from = 20_000, to = 8_000_000, factor = 1.5 } = {}) {
  const rates = [];
  // Step until the delivered target passes `to`: the last step is the first at or above it.
  for (let delivered = from; ; delivered *= factor) {
    const rate = Math.max(1, Math.round(delivered / n));
    if (rates.length === 0 || rate > rates.at(-1)) rates.push(rate);
    if (delivered >= to) break;
  }
  return rates;
}

/**
 * cross-node: publishes/s for N subscribers, so that N × R (delivered/s)
 * starts at the moderate rate (the latency figure) and doubles up to about
 * `to`: 20k, 40k, … 10.24M delivered/s, ten steps, the first at or above
 * `to` the last. Doubling rather than the room's ×1.5 keeps a full run of
 * the scenario to a few minutes.
 */
export function crossNodeRates(n, { moderate = 20_000, to = 10_000_000, factor = 2 } = {}) {
  return roomRates(n, { from: moderate, to, factor });
}

/** How many connections the fd limit allows, and the notes that explain a cap. */
export function connectionBudget(fd) {
  const hard = Number.isFinite(fd.hard) && fd.hard > 0 ? fd.hard : Infinity;
  const why =
    `the open-file hard limit is ${hard} per process` +
    (fd.hard_raisable === false ? ' and cannot be raised on this machine (ulimit -Hn is refused)' : '') +
    `, and ${FD_MARGIN} descriptors are left for everything else the process opens`;
  return { max: hard === Infinity ? Infinity : Math.max(0, hard - FD_MARGIN), hard, margin: FD_MARGIN, why };
}

function roundDown(n, multiple) {
  return Math.floor(n / multiple) * multiple;
}

/**
 * The configurations of each scenario. Returns { configs, notes } where
 * configs is a list of { scenario, config, args, expectedS, settleMs }:
 * `args` are the load generator's scenario arguments (port, protocol and
 * server pid are added per run).
 */
export function buildMatrix({ quick, scenarios, fd }) {
  const budget = connectionBudget(fd);
  const notes = [];
  const configs = [];
  const add = (scenario, config, args, expectedS, settleMs = 0) => {
    if (scenarios.includes(scenario)) configs.push({ scenario, config, args, expectedS, settleMs });
  };
  const timing = (warmup, duration) => ['--warmup', String(warmup), '--duration', String(duration)];

  // ws-echo: closed loop, every (connections, in flight, payload).
  {
    const grid = quick
      ? { connections: [50], inFlight: [4], payload: [32], warmup: 0.2, duration: 0.5 }
      : { connections: [100, 1000], inFlight: [1, 16], payload: [32, 1024, 16384], warmup: 1, duration: 5 };
    for (const c of grid.connections) {
      for (const k of grid.inFlight) {
        for (const p of grid.payload) {
          add(
            'ws-echo',
            { connections: c, in_flight: k, payload: p },
            ['--connections', String(c), '--in-flight', String(k), '--payload', String(p), ...timing(grid.warmup, grid.duration)],
            grid.warmup + grid.duration,
          );
        }
      }
    }
  }

  // ws-broadcast-room: open loop, rate steps until the mean latency passes 200 ms.
  {
    const grid = quick
      ? { sizes: [50], rates: () => [100, 400], warmup: 0.2, duration: 0.5 }
      : { sizes: [100, 1000, 5000], rates: (n) => roomRates(n), warmup: 1, duration: 3 };
    for (const n of grid.sizes) {
      const rates = grid.rates(n);
      add(
        'ws-broadcast-room',
        { connections: n, payload: 32, rates, stop_mean_latency_ms: STOP_MEAN_LATENCY_MS },
        [
          '--connections', String(n), '--payload', '32', '--rates', rates.join(','),
          '--stop-mean-latency-ms', String(STOP_MEAN_LATENCY_MS), ...timing(grid.warmup, grid.duration),
        ],
        rates.length * (grid.warmup + grid.duration),
      );
    }
  }

  // ws-channels: as many connections as the fd limit allows, up to 20,000, in channels of 10.
  {
    let c = 100;
    if (!quick) {
      c = roundDown(Math.min(CHANNELS_WANTED, budget.max), CHANNEL_SIZE);
      if (c < CHANNELS_WANTED && scenarios.includes('ws-channels')) {
        notes.push(
          `ws-channels: ${c.toLocaleString('en-US')} connections instead of ${CHANNELS_WANTED.toLocaleString('en-US')}: ` +
            `${budget.why}.`,
        );
      }
    }
    const [warmup, duration] = quick ? [0.2, 0.5] : [1, 5];
    add(
      'ws-channels',
      { connections: c, channel_size: CHANNEL_SIZE, in_flight: 1, payload: 32 },
      [
        '--connections', String(c), '--channel-size', String(CHANNEL_SIZE), '--in-flight', '1', '--payload', '32',
        ...timing(warmup, duration),
      ],
      warmup + duration + c / 2000,
    );
  }

  // cross-node: publishers on node A, N subscribers on node B (or both on one
  // node for the baselines); open loop, the first step at a moderate rate.
  // Full runs: N = 100 at the moderate rate only (the latency figure, the
  // least fan-out time in it), then N = 1,000 from the moderate rate to
  // saturation (N = 100 would need 100k publishes/s to saturate node B, which
  // would load node A and Redis, on the load generator's core, as much).
  {
    const grids = quick
      ? [{ n: 50, publishers: 2, rates: [20, 200], warmup: 0.2, duration: 0.5 }]
      : [
          { n: 100, publishers: 10, rates: [200], warmup: 1, duration: 5 },
          { n: 1000, publishers: 10, rates: crossNodeRates(1000), warmup: 1, duration: 3 },
        ];
    for (const grid of grids) {
      add(
        'cross-node',
        {
          connections: grid.n, publishers: grid.publishers, payload: 32, rates: grid.rates,
          moderate_rate: grid.rates[0], stop_mean_latency_ms: STOP_MEAN_LATENCY_MS,
        },
        [
          '--connections', String(grid.n), '--publishers', String(grid.publishers), '--payload', '32',
          '--rates', grid.rates.join(','), '--stop-mean-latency-ms', String(STOP_MEAN_LATENCY_MS),
          ...timing(grid.warmup, grid.duration),
        ],
        grid.rates.length * (grid.warmup + grid.duration),
      );
    }
  }

  // ws-idle: a fresh server per size; memory after minus before, per connection.
  {
    const sizes = []; // { n, requested }
    // 1,000 rather than fewer: a Node server's heap may shrink by a megabyte
    // or two while connections open, which would swamp a smaller total.
    if (quick) sizes.push({ n: 1000, requested: 1000 });
    else {
      for (const wanted of IDLE_WANTED) {
        const n = Math.min(wanted, budget.max);
        if (n < wanted && scenarios.includes('ws-idle')) {
          notes.push(
            `ws-idle: ${n.toLocaleString('en-US')} connections instead of ${wanted.toLocaleString('en-US')}: ` +
              `${budget.why}.`,
          );
        }
        // A limit below 10,000 would make both sizes equal: measure it once.
        if (!sizes.some((s) => s.n === n)) sizes.push({ n, requested: wanted });
      }
    }
    const settle = quick ? 0.5 : 2;
    for (const { n, requested } of sizes) {
      add(
        'ws-idle',
        { connections: n, requested },
        ['--connections', String(n), '--settle', String(settle)],
        settle + n / 2000,
        // Let the server's start-up allocations settle before the load generator reads "before".
        quick ? 1000 : 2000,
      );
    }
  }
  return { configs, notes };
}

/** A short label for a configuration, as the progress display and the tables show it. */
export function configLabel(scenario, config) {
  switch (scenario) {
    case 'ws-echo':
      return `c=${config.connections} k=${config.in_flight} p=${config.payload}`;
    case 'ws-broadcast-room':
      return `N=${config.connections}`;
    case 'ws-channels':
      return `c=${config.connections}`;
    case 'ws-idle':
      return `n=${config.connections}`;
    case 'cross-node':
      return `N=${config.connections}`;
    default:
      return JSON.stringify(config);
  }
}
