// Per-core utilisation from /proc/stat, sampled while the load generator
// runs. The processes' own CPU figures say whether the server or the client
// was saturated; these say what else used their cores (softirq work on the
// loopback, a hypervisor's steal, a neighbour on a shared machine) when
// neither process reached its core's limit.
import { readFileSync } from 'node:fs';

const FIELDS = ['user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal'];

function readStat() {
  let text;
  try {
    text = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  const cpus = {};
  for (const m of text.matchAll(/^cpu(\d+) (.*)$/gm)) {
    const values = m[2].trim().split(/\s+/).map(Number);
    cpus[m[1]] = Object.fromEntries(FIELDS.map((f, i) => [f, values[i] ?? 0]));
  }
  return cpus;
}

/** Utilisation of each core between two samples, as fractions of the elapsed ticks. */
function between(a, b) {
  const out = {};
  for (const cpu of Object.keys(b)) {
    if (!a[cpu]) continue;
    const d = Object.fromEntries(FIELDS.map((f) => [f, b[cpu][f] - a[cpu][f]]));
    const total = FIELDS.reduce((sum, f) => sum + d[f], 0);
    if (total <= 0) continue;
    const r = (v) => Math.round((v / total) * 1000) / 1000;
    out[cpu] = {
      busy: r(total - d.idle - d.iowait),
      user: r(d.user + d.nice),
      system: r(d.system),
      irq: r(d.irq + d.softirq),
      steal: r(d.steal),
    };
  }
  return out;
}

/**
 * Sample every `intervalMs` until stop(). window(fromMs, toMs) gives each
 * core's utilisation between the samples closest to those times
 * (performance.now() clock), or null without /proc/stat.
 */
export function startCoreSampler(intervalMs = 200) {
  const samples = [];
  const take = () => {
    const cpus = readStat();
    if (cpus) samples.push({ t: performance.now(), cpus });
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      take();
    },
    window(fromMs, toMs) {
      if (samples.length < 2) return null;
      const nearest = (t) => samples.reduce((best, s) => (Math.abs(s.t - t) < Math.abs(best.t - t) ? s : best));
      const a = nearest(fromMs);
      const b = nearest(toMs);
      if (b.t <= a.t) return null;
      return { seconds: Math.round((b.t - a.t) / 10) / 100, cpus: between(a.cpus, b.cpus) };
    },
  };
}
