/**
 * The `metrics` option: where the core serves the counters in Prometheus's
 * text format (it renders them itself on the I/O thread, so a scrape needs
 * no worker: `crates/runtime/src/http/exposition.rs`), and the dashboard
 * page with its script and style, which are fixed responses of the core
 * too (`metrics-dashboard.ts`). Nothing here runs per request.
 */
import { SwitchboardError } from '../errors.js';
import type { NativeStaticRoute } from '../native.js';
import { nativeStaticRoute } from '../options.js';
import { DASHBOARD_CSS, dashboardPage, dashboardScript } from './metrics-dashboard.js';

/** `metrics: { … }` of the server's options. */
export interface MetricsOptions {
  /** Where `GET` answers with every counter in Prometheus's text format. Default `'/metrics'`. */
  path?: string;
  /**
   * The live dashboard page, or `false` for none. Default `<path>/dashboard`
   * (`/metrics/dashboard`). Its script and style are served beside it, at
   * `<dashboard>.js` and `<dashboard>.css`.
   */
  dashboard?: string | false;
}

/** The defaults of `MetricsOptions`. */
export const METRICS_DEFAULTS = { path: '/metrics', dashboard: 'dashboard' } as const;

/** What the `metrics` option adds to a server: the endpoint's path and the dashboard's fixed routes. */
export interface MetricsRoutes {
  metricsPath: string;
  staticRoutes: NativeStaticRoute[];
}

/** The strict policy the dashboard runs under: its own script, style and endpoint, nothing else. */
const DASHBOARD_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Validate the `metrics` option; undefined when it is off (the default). */
export function metricsRoutes(option: boolean | MetricsOptions | undefined): MetricsRoutes | undefined {
  if (option === undefined || option === false) return undefined;
  const options: MetricsOptions = option === true ? {} : option;
  if (typeof options !== 'object' || options === null) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `metrics must be true, false or an object, got ${String(option)}`);
  }
  for (const key of Object.keys(options)) {
    if (key !== 'path' && key !== 'dashboard') {
      throw new SwitchboardError('ERR_INVALID_OPTION', `metrics: unknown option ${JSON.stringify(key)} (path, dashboard)`);
    }
  }
  const path = options.path ?? METRICS_DEFAULTS.path;
  checkPath('metrics.path', path);
  const dashboard = options.dashboard ?? `${path.replace(/\/$/, '')}/${METRICS_DEFAULTS.dashboard}`;
  if (dashboard === false) return { metricsPath: path, staticRoutes: [] };
  checkPath('metrics.dashboard', dashboard);
  if (dashboard === path) {
    throw new SwitchboardError('ERR_INVALID_OPTION', 'metrics.dashboard must differ from metrics.path');
  }
  const name = dashboard.slice(dashboard.lastIndexOf('/') + 1) || 'index';
  const headers = {
    'Content-Security-Policy': DASHBOARD_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-cache',
  };
  // The page links its assets relative to itself: `<name>.js` beside it.
  const base = dashboard.endsWith('/') ? `${dashboard}${name}` : dashboard;
  return {
    metricsPath: path,
    staticRoutes: [
      nativeStaticRoute(dashboard, { body: dashboardPage(`${name}.js`, `${name}.css`), headers }),
      nativeStaticRoute(`${base}.js`, { body: dashboardScript(path), contentType: 'text/javascript; charset=utf-8', headers }),
      nativeStaticRoute(`${base}.css`, { body: DASHBOARD_CSS, contentType: 'text/css; charset=utf-8', headers }),
    ],
  };
}

/** A fixed path: starts with `/`, visible ASCII, no parameter or wildcard segment. */
function checkPath(name: string, path: unknown): asserts path is string {
  if (typeof path !== 'string' || !/^\/[\x21-\x7e]*$/.test(path) || /\/[:*]/.test(path)) {
    throw new SwitchboardError('ERR_INVALID_OPTION', `${name} must be a fixed path starting with "/", got ${JSON.stringify(path)}`);
  }
}
