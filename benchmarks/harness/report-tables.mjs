// The pieces every results report builds its Markdown tables from: the
// marks of a bound step, a table, and a scenario's runs and servers. Apart
// from report.mjs so the scenario reports (cross-node-report.mjs) and the
// main report can share them without importing each other.

const MARKS = {
  client: '†',
  neither: '°',
  both: '‡',
};

export function cellMark(summary) {
  if (!summary) return '';
  return MARKS[summary.bound] ?? '';
}

export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  const align = header.map((_, i) => (i === 0 ? '---' : '---:'));
  return [line(header), line(align), ...rows.map(line)].join('\n');
}

/** The servers that ran `scenario` (a table leaves out the others' empty columns). */
export function serversIn(results, scenario) {
  return results.servers.filter((s) => results.runs.some((r) => r.scenario === scenario && r.server === s.name));
}

export function runsOf(results, scenario) {
  return results.runs.filter((r) => r.scenario === scenario);
}

/** Group a scenario's runs by configuration label, in run order. */
export function byConfig(runs) {
  const groups = new Map();
  for (const r of runs) {
    if (!groups.has(r.label)) groups.set(r.label, { config: r.config, runs: {} });
    groups.get(r.label).runs[r.server] = r;
  }
  return [...groups.values()];
}
