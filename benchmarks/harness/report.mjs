// From raw load-generator steps to the figures the tables show, the
// saturation check, results.md, the charts and the README's results section.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { barChart, roomChart } from './charts.mjs';
import { crossNodeSection } from './cross-node-report.mjs';
import { byConfig, cellMark, runsOf, serversIn, table } from './report-tables.mjs';

// Shared with the other reports (`report-tables.mjs`), for their importers.
export { byConfig, cellMark, runsOf, serversIn, table };
import { bytes, mib, pct, ratio, si } from './format.mjs';
import { STOP_MEAN_LATENCY_MS } from './scenarios.mjs';
import { SERVERS } from './servers.mjs';

// A process at or above this share of its core is taken as saturated.
export const SATURATED = 0.9;

/**
 * Which side limited a closed loop. 'server' is what the suite wants to
 * measure; 'client' means the figure is a floor for the server; 'neither'
 * means the loop itself (latency × in-flight) was the limit.
 */
export function bound(step, core, pin) {
  const server = step.server?.cpu_util;
  const client = step.loadgen?.cpu_util;
  const serverSat = Number.isFinite(server) ? server >= SATURATED : null;
  const clientSat = Number.isFinite(client) ? client >= SATURATED : null;
  let limit = 'unknown';
  if (serverSat !== null && clientSat !== null) {
    limit = serverSat && clientSat ? 'both' : serverSat ? 'server' : clientSat ? 'client' : 'neither';
  }
  return {
    server_cpu: server ?? null,
    loadgen_cpu: client ?? null,
    server_saturated: serverSat,
    loadgen_saturated: clientSat,
    bound: limit,
    // The pinned cores' whole utilisation over the window (all processes,
    // interrupts, steal): explains a run where neither process was saturated.
    server_core: pin?.pinned ? core?.cpus?.[pin.server_cpu] ?? null : null,
    loadgen_core: pin?.pinned ? core?.cpus?.[pin.loadgen_cpu] ?? null : null,
  };
}

function latencyMs(step) {
  const l = step.latency_us ?? {};
  const f = (v) => (Number.isFinite(v) ? v / 1000 : null);
  return { mean: f(l.mean), p50: f(l.p50), p99: f(l.p99), max: f(l.max) };
}

/** The figures of one run, derived from its raw steps (which results.json keeps too). */
export function summarize(scenario, steps, { cores = [], pin = null, config = null } = {}) {
  if (!steps.length) return null;
  const step = steps[0];
  const core = cores[0] ?? null;
  switch (scenario) {
    case 'ws-echo':
      return {
        msgs_per_s: step.received_per_s,
        connected: step.connected,
        latency_ms: latencyMs(step),
        errors: step.errors,
        ...bound(step, core, pin),
      };
    case 'ws-channels':
      return {
        incoming_per_s: step.sent_per_s,
        outgoing_per_s: step.received_per_s,
        rss_kb: step.server?.rss_kb ?? null,
        rss_peak_kb: step.server?.rss_peak_kb ?? null,
        connected: step.connected,
        latency_ms: latencyMs(step),
        errors: step.errors,
        ...bound(step, core, pin),
      };
    case 'ws-idle':
      return {
        bytes_per_connection: step.idle?.bytes_per_connection ?? null,
        rss_before_kb: step.idle?.rss_before_kb ?? null,
        rss_after_kb: step.idle?.rss_after_kb ?? null,
        connected: step.connected,
        connections: step.connections,
      };
    case 'cross-node':
    case 'ws-broadcast-room': {
      // cross-node: the publishers (connected too) receive nothing.
      const receivers = (s) => (scenario === 'cross-node' ? s.connected - (config?.publishers ?? 0) : s.connected);
      const points = steps.map((s, i) => ({
        rate: s.rate,
        target_delivered_per_s: Number.isFinite(s.rate) ? s.rate * receivers(s) : null,
        delivered_per_s: s.received_per_s,
        mean_ms: latencyMs(s).mean,
        p50_ms: latencyMs(s).p50,
        p99_ms: latencyMs(s).p99,
        backlogged: s.errors?.backlogged ?? 0,
        ...bound(s, cores[i], pin),
      }));
      const within = points.filter((p) => p.mean_ms !== null && p.mean_ms <= STOP_MEAN_LATENCY_MS);
      const best = within.reduce((a, p) => (a === null || p.delivered_per_s > a.delivered_per_s ? p : a), null);
      const over = points.find((p) => p.mean_ms === null || p.mean_ms > STOP_MEAN_LATENCY_MS) ?? null;
      // The step where the server gave up (or the last one if it never did)
      // tells which side was the limit.
      const limitStep = over ?? points.at(-1);
      return {
        saturation_rate: best?.delivered_per_s ?? null,
        // 'at_least': no step went over the limit, so the true rate is higher;
        // 'below': already the first step did.
        saturation_kind: best === null ? 'below' : over === null ? 'at_least' : 'exact',
        first_step_delivered: points[0]?.target_delivered_per_s ?? null,
        limit_step: limitStep,
        server_saturated: limitStep?.server_saturated ?? null,
        loadgen_saturated: limitStep?.loadgen_saturated ?? null,
        bound: limitStep?.bound ?? 'unknown',
        server_cpu: limitStep?.server_cpu ?? null,
        loadgen_cpu: limitStep?.loadgen_cpu ?? null,
        server_core: limitStep?.server_core ?? null,
        loadgen_core: limitStep?.loadgen_core ?? null,
        // cross-node: the first step is the moderate rate, the latency figure.
        ...(scenario === 'cross-node' ? { moderate: points[0] ?? null } : {}),
        points,
      };
    }
    default:
      return null;
  }
}

// ---------------------------------------------------------------- Markdown


const int = (n) => Number(n).toLocaleString('en-US');


/** Switchboard's figure against a peer's, oriented so above 1× means Switchboard does better. */
function versus(ours, theirs, lowerIsBetter) {
  if (!Number.isFinite(ours) || !Number.isFinite(theirs) || ours <= 0 || theirs <= 0) return null;
  return lowerIsBetter ? theirs / ours : ours / theirs;
}

const column = (s) => s.short ?? s.label;

/**
 * The ratio columns of a table: Switchboard (its WebSocket server) against
 * every other server, headed "vs X", when it ran; then each Switchboard
 * server on another transport against the peer on the same transport
 * (its `versus`; results written before that field existed find it in
 * SERVERS), headed "A vs B".
 */
export function comparisons(servers) {
  const pairs = [];
  const ws = servers.find((s) => s.name === 'switchboard');
  if (ws) for (const p of servers) if (p !== ws) pairs.push({ ours: ws, peer: p, header: `vs ${column(p)}` });
  for (const s of servers) {
    if (s === ws) continue;
    const versusName = s.versus ?? SERVERS.find((k) => k.name === s.name)?.versus;
    const peer = versusName && servers.find((p) => p.name === versusName);
    if (peer) pairs.push({ ours: s, peer, header: `${column(s)} vs ${column(peer)}` });
  }
  return pairs;
}

/**
 * A table with a row per configuration, a column per server, then a
 * column per comparison (above) with the ratio of its two servers.
 * rows: [{ label: [cells], values: { server: { value, text } } }]
 */
export function comparisonTable({ keyHeaders, rows, servers, lowerIsBetter = false }) {
  const pairs = comparisons(servers);
  const header = [...keyHeaders, ...servers.map(column), ...pairs.map((p) => p.header)];
  const body = rows.map((row) => {
    const cells = [...row.label];
    for (const s of servers) cells.push(row.values[s.name]?.text ?? '—');
    for (const { ours, peer } of pairs) {
      const mine = row.values[ours.name];
      const theirs = row.values[peer.name];
      const r = versus(mine?.value, theirs?.value, lowerIsBetter);
      // A bound ("≥ 8.8M") on either side makes the ratio a bound too.
      let prefix = '';
      if (r !== null) {
        const a = mine.kind ?? 'exact';
        const b = theirs.kind ?? 'exact';
        if (a === 'at_least' && b === 'at_least') prefix = '?';
        else if (a === 'at_least') prefix = lowerIsBetter ? '≤ ' : '≥ ';
        else if (b === 'at_least') prefix = lowerIsBetter ? '≥ ' : '≤ ';
      }
      cells.push(prefix === '?' ? '—' : r === null ? '—' : `${prefix}${ratio(r)}`);
    }
    return cells;
  });
  return table(header, body);
}


export function failedCell(run) {
  return run?.error ? { value: null, text: '✗' } : undefined;
}

export function chartFiles(results) {
  const files = [];
  for (const g of byConfig(runsOf(results, 'ws-broadcast-room'))) {
    files.push({ kind: 'room', n: g.config.connections, file: `room-n${g.config.connections}.svg`, group: g });
  }
  if (runsOf(results, 'ws-echo').length) files.push({ kind: 'echo', file: 'echo.svg' });
  // cross-node: the configurations that step up to saturation (not the latency-only one).
  for (const g of byConfig(runsOf(results, 'cross-node')).filter((g) => g.config.rates.length > 1)) {
    files.push({ kind: 'cross-node', n: g.config.connections, file: `cross-node-n${g.config.connections}.svg`, group: g });
  }
  return files;
}

export function pinningSentence(p) {
  if (!p.pinned) return `Server and load generator ran **unpinned** (${p.reason}); their CPU shares may interfere.`;
  return (
    `The server ran pinned to CPU ${p.server_cpu} and the load generator to CPU ${p.loadgen_cpu} ` +
    `(\`taskset -c\`; the server's allowed CPUs were read back from /proc and recorded per run).`
  );
}

/**
 * The top of a results page: title, when and how it was measured, the
 * machine, the pinning, the notes, the servers with their versions and
 * settings, and the key to the tables' marks and ratios.
 */
export function resultsHeader(results, { bench, title }) {
  const servers = results.servers;
  const m = results.machine;
  const out = [];
  out.push(`# ${title} (${results.mode} run${results.partial ? ', partial' : ''})`);
  out.push('');
  out.push(
    `Measured ${results.started_at.slice(0, 10)} in ${Math.round(results.measure_s ?? results.duration_s)} s with \`${results.command}\`. ` +
      `Raw figures of every step: [${results.file ?? 'results.json'}](${results.file ?? 'results.json'}). Method: [README](${bench}/README.md), scenarios: [SCENARIOS.md](${bench}/SCENARIOS.md).`,
  );
  out.push('');
  out.push(
    `- Machine: ${m.cpu.model}, ${m.cpu.logical_cpus} logical CPUs, ${(m.memory_bytes / 2 ** 30).toFixed(1)} GiB RAM, ` +
      `Linux ${m.kernel}${m.os ? ` (${m.os})` : ''}${m.virtualized ? ', virtualized' : ''}`,
  );
  out.push(`- Node ${m.node}, ${m.rustc ?? 'rustc unknown'}; Switchboard ${m.switchboard.version}${m.switchboard.git ? ` at ${m.switchboard.git.commit.slice(0, 12)}${m.switchboard.git.dirty ? ' with uncommitted changes' : ''}` : ''}`);
  out.push(`- ${pinningSentence(results.pinning)}`);
  out.push(
    `- Open files: hard limit ${results.fd_limit.hard}${results.fd_limit.hard_raisable === false ? ' (cannot be raised here)' : ''}; ` +
      `load average ${results.load_average.start.join(' ')} at the start, ${results.load_average.end.join(' ')} at the end.`,
  );
  for (const note of results.notes) out.push(`- ${note}`);
  out.push('');
  out.push('| Server | Protocol | Versions | Settings |');
  out.push('|---|---|---|---|');
  for (const s of servers) {
    const env = Object.entries(s.env ?? {}).map(([k, v]) => `${k}=${v}`).join(' ');
    out.push(`| ${s.label} | ${s.protocol} | ${s.versions_text} | ${env || 'defaults of its peer script'} |`);
  }
  out.push('');
  const pairs = comparisons(servers);
  const ratios = [
    pairs.some((p) => p.ours.name === 'switchboard') && `"vs X" columns are Switchboard's figure relative to X's`,
    pairs.some((p) => p.ours.name !== 'switchboard') &&
      `"A vs B" columns are A's figure relative to B's (Switchboard on a SockJS transport against sockjs-node on the same transport)`,
  ].filter(Boolean);
  out.push(
    (ratios.length ? `${ratios.join('; ')}, oriented so that **above 1× Switchboard does better**. ` : '') +
      `Marks: † the load generator, not the server, was saturated (≥ ${SATURATED * 100}% of its core): the figure is a floor for the server; ` +
      `‡ both were saturated; ° neither was (the loop's latency, or other work on the cores, was the limit: see the saturation check at the end); ✗ the run failed (see ${results.file ?? 'results.json'}).`,
  );
  return out;
}

/** results.md; `benchRel` is the benchmarks folder relative to the output folder, for its links. */
export function renderMarkdown(results, { benchRel = '..' } = {}) {
  const bench = benchRel.split(path.sep).join('/') || '.';
  const out = resultsHeader(results, { bench, title: 'Switchboard benchmark results' });

  // ws-echo
  const echo = byConfig(runsOf(results, 'ws-echo'));
  if (echo.length) {
    const servers = serversIn(results, 'ws-echo');
    out.push('', '## ws-echo: messages echoed per second (higher is better)', '');
    out.push(
      comparisonTable({
        keyHeaders: ['Connections', 'In flight', 'Payload'],
        servers,
        rows: echo.map((g) => ({
          label: [int(g.config.connections), String(g.config.in_flight), `${int(g.config.payload)} B`],
          values: Object.fromEntries(
            servers.map((s) => {
              const run = g.runs[s.name];
              const sum = run?.summary;
              return [s.name, failedCell(run) ?? (sum ? { value: sum.msgs_per_s, text: `${si(sum.msgs_per_s)}${cellMark(sum)}` } : undefined)];
            }),
          ),
        })),
      }),
    );
    out.push('', '![ws-echo messages/s](echo.svg)');
  }

  // ws-broadcast-room
  const room = byConfig(runsOf(results, 'ws-broadcast-room'));
  if (room.length) {
    const servers = serversIn(results, 'ws-broadcast-room');
    out.push('', `## ws-broadcast-room: saturation rate (higher is better)`, '');
    out.push(
      `The highest delivered messages/s whose mean latency stayed at or under ${STOP_MEAN_LATENCY_MS} ms. ` +
        `"≥" means no step went over the limit (the rate is higher than measured); "<" means the first step already did.`,
    );
    out.push('');
    out.push(
      comparisonTable({
        keyHeaders: ['Clients (N)'],
        servers,
        rows: room.map((g) => ({
          label: [int(g.config.connections)],
          values: Object.fromEntries(
            servers.map((s) => {
              const run = g.runs[s.name];
              const sum = run?.summary;
              if (failedCell(run)) return [s.name, failedCell(run)];
              if (!sum) return [s.name, undefined];
              // Below the limit at every step, the server was expected to have capacity left: no mark.
              const mark = sum.saturation_kind === 'at_least' ? '' : cellMark(sum);
              if (sum.saturation_kind === 'below') return [s.name, { value: null, text: `< ${si(sum.first_step_delivered)}${mark}` }];
              const prefix = sum.saturation_kind === 'at_least' ? '≥ ' : '';
              return [s.name, { value: sum.saturation_rate, kind: sum.saturation_kind, text: `${prefix}${si(sum.saturation_rate)}${mark}` }];
            }),
          ),
        })),
      }),
    );
    out.push('');
    for (const c of chartFiles(results).filter((f) => f.kind === 'room')) {
      out.push(`![ws-broadcast-room, N = ${c.n}: mean latency against delivered messages/s](${c.file})`);
    }
  }

  // ws-channels
  const channels = byConfig(runsOf(results, 'ws-channels'));
  if (channels.length) {
    const servers = serversIn(results, 'ws-channels');
    out.push('', '## ws-channels: channels of 10, one request in flight per connection', '');
    out.push('Incoming is requests/s received by the server; outgoing is messages/s it delivered (1 reply + 9 broadcasts each). RSS is the server\'s resident memory at the end of the run; its ratio is the peer\'s RSS ÷ Switchboard\'s (above 1×: Switchboard uses less).');
    out.push('');
    const rows = [];
    for (const g of channels) {
      const metric = (label, pick, fmt, withMark) => ({
        label: [int(g.config.connections), label],
        values: Object.fromEntries(
          servers.map((s) => {
            const run = g.runs[s.name];
            const v = run?.summary ? pick(run.summary) : null;
            return [s.name, failedCell(run) ?? (run?.summary ? { value: v, text: `${fmt(v)}${withMark ? cellMark(run.summary) : ''}` } : undefined)];
          }),
        ),
      });
      rows.push({ ...metric('incoming/s', (x) => x.incoming_per_s, si, true), lower: false });
      rows.push({ ...metric('outgoing/s', (x) => x.outgoing_per_s, si, true), lower: false });
      rows.push({ ...metric('RSS', (x) => x.rss_kb, mib, false), lower: true });
    }
    // One table, but RSS rows compare the other way round: render them per orientation.
    const higher = comparisonTable({ keyHeaders: ['Connections', 'Figure'], servers, rows: rows.filter((r) => !r.lower) });
    const lower = comparisonTable({ keyHeaders: ['Connections', 'Figure'], servers, rows: rows.filter((r) => r.lower), lowerIsBetter: true });
    out.push(higher, ...lower.split('\n').slice(2));
  }

  // ws-idle
  const idle = byConfig(runsOf(results, 'ws-idle'));
  if (idle.length) {
    const servers = serversIn(results, 'ws-idle');
    out.push('', '## ws-idle: server memory per idle connection (lower is better)', '');
    out.push(
      'Resident memory after all connections opened minus before, divided by the connections. The ratios are the peer\'s figure ÷ Switchboard\'s, so **above 1× Switchboard uses less memory**.' +
        (servers.some((s) => s.protocol === 'sockjs-xhr-streaming')
          ? ' Over SockJS xhr-streaming a connection is a session held open by its streaming request (one socket; idle sessions send nothing, so they have no xhr_send connection).'
          : ''),
    );
    out.push('');
    out.push(
      comparisonTable({
        keyHeaders: ['Connections'],
        servers,
        lowerIsBetter: true,
        rows: idle.map((g) => ({
          label: [
            g.config.requested && g.config.requested !== g.config.connections
              ? `${int(g.config.connections)} (of ${int(g.config.requested)} asked)`
              : int(g.config.connections),
          ],
          values: Object.fromEntries(
            servers.map((s) => {
              const run = g.runs[s.name];
              const v = run?.summary?.bytes_per_connection;
              return [s.name, failedCell(run) ?? (run?.summary ? { value: v, text: bytes(v) } : undefined)];
            }),
          ),
        })),
      }),
    );
  }

  out.push(...crossNodeSection(results));

  // The saturation check, summed up.
  const closed = results.runs.filter((r) => r.summary && ['ws-echo', 'ws-channels', 'ws-broadcast-room', 'cross-node'].includes(r.scenario));
  const count = (b) => closed.filter((r) => r.summary.bound === b).length;
  out.push('', '## Saturation check', '');
  out.push(
    `Of ${closed.length} load-carrying runs, the server alone was saturated in ${count('server')}, ` +
      `the load generator alone in ${count('client')}, both in ${count('both')}, neither in ${count('neither')}` +
      `${count('unknown') ? `, unknown in ${count('unknown')}` : ''}. ` +
      (closed.some((r) => r.scenario === 'cross-node')
        ? `For ws-broadcast-room and cross-node the check is made at the step that went over ${STOP_MEAN_LATENCY_MS} ms (or the last step); ` +
          `in cross-node "the server" is node B, whose core it has to itself.`
        : `For ws-broadcast-room the check is made at the step that went over ${STOP_MEAN_LATENCY_MS} ms (or the last step).`),
  );
  const coreText = (c) => (c ? `${pct(c.busy)} busy (interrupts ${pct(c.irq)}, steal ${pct(c.steal)})` : 'not sampled');
  const listRuns = (title, runs) => {
    if (!runs.length) return;
    out.push('', title, '');
    for (const r of runs) {
      const s = r.summary;
      out.push(
        `- ${r.scenario} ${r.label} ${r.server}: server ${pct(s.server_cpu)}, load generator ${pct(s.loadgen_cpu)} of a core; ` +
          `server's core ${coreText(s.server_core)}, load generator's core ${coreText(s.loadgen_core)}`,
      );
    }
  };
  listRuns('Runs where the load generator was saturated (†, ‡):', closed.filter((r) => r.summary.bound === 'client' || r.summary.bound === 'both'));
  // Room runs that never reached the limit are expected to be "neither": the server had capacity left.
  listRuns(
    'Runs where neither process was saturated (°), with what their cores did:',
    closed.filter(
      (r) => r.summary.bound === 'neither' && !(['ws-broadcast-room', 'cross-node'].includes(r.scenario) && r.summary.saturation_kind === 'at_least'),
    ),
  );
  // The server's core busier than the server: interrupt work for its sockets,
  // or another process on a shared machine taking the server's CPU.
  const crowded = closed.filter((r) => r.summary.server_core && r.summary.server_core.busy - (r.summary.server_cpu ?? 0) >= 0.2);
  if (crowded.length) {
    out.push(
      '',
      `In ${crowded.length} run(s) the server's core was at least 20 points busier than the server process ` +
        '(interrupt work for its sockets, or other processes on the machine):',
      '',
    );
    for (const r of crowded.slice(0, 20)) {
      out.push(`- ${r.scenario} ${r.label} ${r.server}: server ${pct(r.summary.server_cpu)}, its core ${coreText(r.summary.server_core)}`);
    }
    if (crowded.length > 20) out.push(`- … and ${crowded.length - 20} more (results.json has every run's core figures)`);
  }
  const failed = results.runs.filter((r) => r.error);
  if (failed.length) {
    out.push('', '## Failed runs', '');
    for (const r of failed) out.push(`- ${r.scenario} ${r.label} ${r.server}: ${r.error.split('\n')[0]}`);
  }
  out.push('');
  return out.join('\n');
}

/** Write the SVG charts next to results.md; returns the file names. */
export function writeCharts(results, outDir) {
  const files = [];
  const where = results.pinning.pinned
    ? `server on CPU ${results.pinning.server_cpu}, load generator on CPU ${results.pinning.loadgen_cpu}`
    : 'unpinned';
  const subtitle = `${results.machine.cpu.model} · ${where} · ${results.mode} run ${results.started_at.slice(0, 10)}`;
  for (const c of chartFiles(results)) {
    let svg;
    if (c.kind === 'room' || c.kind === 'cross-node') {
      const series = results.servers
        .filter((s) => c.group.runs[s.name]?.summary)
        .map((s) => ({
          name: s.name,
          label: s.label,
          points: c.group.runs[s.name].summary.points.map((p) => ({ x: p.delivered_per_s, y: p.mean_ms })),
        }));
      svg = roomChart({
        title:
          c.kind === 'room'
            ? `ws-broadcast-room, N = ${c.n} clients, 32-byte messages`
            : `cross-node: publishers on node A, N = ${c.n} subscribers on node B (one node: no broker), 32 B`,
        subtitle,
        series,
        limitMs: STOP_MEAN_LATENCY_MS,
      });
    } else {
      const groups = byConfig(runsOf(results, 'ws-echo'));
      const payloads = [...new Set(groups.map((g) => g.config.payload))];
      svg = barChart({
        title: 'ws-echo: messages echoed per second (higher is better)',
        subtitle,
        yLabel: 'messages/s',
        series: results.servers.map((s) => ({ name: s.name, label: s.label })),
        // One panel per payload size, each on its own scale.
        panels: payloads.map((p) => {
          const gs = groups.filter((g) => g.config.payload === p);
          return {
            title: `${p}-byte messages`,
            groups: gs.map((g) => ({ lines: [`${g.config.connections} conns`, `${g.config.in_flight} in flight`] })),
            values: Object.fromEntries(
              results.servers.map((s) => [s.name, gs.map((g) => g.runs[s.name]?.summary?.msgs_per_s ?? null)]),
            ),
          };
        }),
      });
    }
    writeFileSync(path.join(outDir, c.file), svg);
    files.push(c.file);
  }
  return files;
}

export const README_BEGIN = '<!-- results:begin -->';
export const README_END = '<!-- results:end -->';

/**
 * Replace the README's results section (between `markers`: the WebSocket
 * suite's by default) with results.md, its links made relative to the
 * README and its title demoted under the README's heading.
 */
export function updateReadme(readmeFile, resultsMdFile, markers = { begin: README_BEGIN, end: README_END }) {
  const readme = readFileSync(readmeFile, 'utf8');
  const begin = readme.indexOf(markers.begin);
  const end = readme.indexOf(markers.end);
  if (begin < 0 || end < begin) throw new Error(`${readmeFile} has no ${markers.begin} … ${markers.end} section`);
  const rel = path.relative(path.dirname(readmeFile), path.dirname(resultsMdFile)).split(path.sep).join('/');
  const prefix = rel ? `${rel}/` : '';
  let md = readFileSync(resultsMdFile, 'utf8');
  // Relative link targets only: "](results.json)" → "](results/results.json)";
  // "../X" from the results folder is resolved against the README's folder.
  md = md.replace(/\]\((?![a-z]+:|#|\/)([^)]+)\)/g, (_, target) => `](${path.posix.normalize(prefix + target)})`);
  md = md.replace(/^# .*\n+/, '').replace(/^## /gm, '### ');
  const next = `${readme.slice(0, begin + markers.begin.length)}\n${md.trim()}\n${readme.slice(end)}`;
  writeFileSync(readmeFile, next);
}
