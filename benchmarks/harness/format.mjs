// Number formatting shared by the progress display, the tables and the charts.

/** 1210000 → "1.21M", 845000 → "845k", 12345 → "12.3k", 950 → "950". */
export function si(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  const abs = Math.abs(value);
  const scaled = (v, unit) => `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)}${unit}`;
  if (abs >= 1e9) return scaled(value / 1e9, 'G');
  if (abs >= 1e6) return scaled(value / 1e6, 'M');
  if (abs >= 1e3) return scaled(value / 1e3, 'k');
  return abs >= 10 || Number.isInteger(value) ? value.toFixed(0) : value.toFixed(2);
}

/** A ratio as "1.12×". */
export function ratio(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)}×`;
}

/** Milliseconds with sensible precision: 0.042, 1.35, 27.4, 812. */
export function ms(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (value >= 100) return value.toFixed(0);
  if (value >= 10) return value.toFixed(1);
  if (value >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

/** A fraction as a percentage: 0.987 → "99%". */
export function pct(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '?';
  return `${Math.round(value * 100)}%`;
}

/** Bytes as "1.9 kB" / "214 MiB"-style figures: kB (1000) for per-connection, MiB for process memory. */
export function bytes(value) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 1e6) return `${(value / 1e6).toFixed(1)} MB`;
  if (Math.abs(value) >= 1e4) return `${(value / 1e3).toFixed(0)} kB`;
  if (Math.abs(value) >= 1e3) return `${(value / 1e3).toFixed(1)} kB`;
  return `${Math.round(value)} B`;
}

export function mib(kb) {
  if (kb === null || kb === undefined || !Number.isFinite(kb)) return '—';
  return `${(kb / 1024).toFixed(kb >= 100 * 1024 ? 0 : 1)} MiB`;
}
