// One measured run, as both scripts of the suite do it (README.md,
// "Method"): a fresh server of the peer pinned to its core, the client
// pinned to the other (the Node driver for run.mjs, switchboard-rpcload for
// capacity.mjs; both print one JSON step), both cores sampled over the
// window, the server stopped. A failure is recorded in `error`, never thrown.
import { startCoreSampler } from '../../harness/cpustat.mjs';
import { describeRun, runLoadgen } from '../../harness/loadgen.mjs';
import { binDir } from '../../harness/prepare.mjs';
import { startServer } from '../../harness/servers.mjs';
import { summarize } from './report.mjs';

/**
 * peer: an entry of lib/peers.mjs. pin: harness/machine.mjs pinning().
 * client: { binary, binaryArgs, args } (the peer's name goes as --protocol,
 * the server's pid as --server-pid, its port as --port). limitS: the
 * server's lifetime limit. track: an object the run keeps `server` and
 * `client` (the child process) in while they run, for a signal handler.
 * Resolves { server_process, client, steps, cores, summary, error }.
 */
export async function measure({ root, peer, pin, client, timeoutMs, limitS, track = {}, onProgress }) {
  const record = { server_process: null, client: null, steps: [], cores: [], summary: null, error: null };
  let server = null;
  try {
    server = await startServer(
      { name: peer.name, entry: peer.entry, env: { ...peer.env, RPC_SERVER_MAX_S: String(limitS) } },
      { root, binDir: binDir(), cpu: pin.pinned ? pin.server_cpu : null },
    );
    track.server = server;
    record.server_process = { pid: server.pid, port: server.port, command: server.command, cpus_allowed: server.cpus };
    const sampler = startCoreSampler();
    const cores = [];
    const run = await runLoadgen({
      binary: client.binary,
      binaryArgs: client.binaryArgs ?? [],
      cpu: pin.pinned ? pin.loadgen_cpu : null,
      port: server.port,
      protocol: peer.name,
      serverPid: server.pid,
      args: client.args,
      timeoutMs,
      onSpawn: (child) => (track.client = child),
      onProgress,
      onStep: (step) => {
        const now = performance.now();
        cores.push(sampler.window(now - (step.duration_s ?? 0) * 1000, now));
      },
    });
    sampler.stop();
    record.client = describeRun(run);
    record.steps = run.steps;
    record.cores = cores;
    record.summary = summarize(run.steps[0], { core: cores[0], pin });
    const lastLines = (text) => text.trim().split('\n').slice(-3).join(' | ');
    if (!server.running()) {
      const e = await server.exited;
      record.error = `the server exited during the run (code ${e.code}, signal ${e.signal}): ${lastLines(server.output())}`;
    } else if (run.error) record.error = `cannot run the client: ${run.error}`;
    else if (run.timedOut) record.error = 'the client did not finish in time and was stopped';
    else if (run.code !== 0) record.error = `the client exited with ${run.code ?? run.signal}: ${lastLines(run.stderr)}`;
    else if (!run.steps.length) record.error = 'the client printed no result';
  } catch (err) {
    record.error = err.message;
  } finally {
    if (server) await server.stop();
    track.server = null;
    track.client = null;
  }
  return record;
}
