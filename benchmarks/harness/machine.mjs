// What the results were measured on: a ratio means little without the CPU,
// the kernel, the runtimes and how the two processes shared the cores.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function read(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function output(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.error || result.status !== 0) return null;
  return result.stdout.trim();
}

/** Parse a kernel CPU list such as "0-1,4" into [0, 1, 4]. */
export function parseCpuList(text) {
  const cpus = [];
  for (const part of String(text ?? '').trim().split(',')) {
    if (!part) continue;
    const [a, b] = part.split('-').map(Number);
    for (let cpu = a; cpu <= (b ?? a); cpu++) cpus.push(cpu);
  }
  return cpus;
}

/** The CPUs a process may run on, from /proc/<pid>/status (null when unreadable). */
export function allowedCpus(pid = 'self') {
  const m = /^Cpus_allowed_list:\s*(\S+)/m.exec(read(`/proc/${pid}/status`) ?? '');
  return m ? parseCpuList(m[1]) : null;
}

/**
 * The open-file limit the benchmark processes get. Node raises its own soft
 * limit to the hard one at startup and children inherit it, so the hard
 * limit is what bounds the connections a server or the load generator holds.
 */
export function fdLimits() {
  const soft = output('sh', ['-c', 'ulimit -Sn']);
  const hard = output('sh', ['-c', 'ulimit -Hn']);
  const num = (v) => (v === null ? null : v === 'unlimited' ? Infinity : Number(v));
  const limits = { soft: num(soft), hard: num(hard), hard_raisable: null };
  // Try raising the hard limit in a throw-away shell: the results say whether
  // a cap on connections was this machine's doing or a choice.
  if (Number.isFinite(limits.hard)) {
    limits.hard_raisable = output('sh', ['-c', `ulimit -Hn ${limits.hard * 4} && ulimit -Hn`]) !== null;
  }
  return limits;
}

/**
 * Decide the pinning: the server on the first CPU this process may use, the
 * load generator on the second. Without taskset or a second CPU both run
 * unpinned, and the results say so.
 */
export function pinning() {
  const cpus = allowedCpus() ?? [...Array(os.cpus().length).keys()];
  const taskset = output('taskset', ['--version']);
  if (taskset === null) {
    return { pinned: false, reason: 'taskset is not installed', server_cpu: null, loadgen_cpu: null, allowed_cpus: cpus };
  }
  if (cpus.length < 2) {
    return { pinned: false, reason: `only ${cpus.length} CPU available`, server_cpu: null, loadgen_cpu: null, allowed_cpus: cpus };
  }
  return { pinned: true, tool: taskset, server_cpu: cpus[0], loadgen_cpu: cpus[1], allowed_cpus: cpus };
}

/** Prefix a command with taskset when pinned. */
export function pinned(cpu, command, args) {
  return cpu === null || cpu === undefined
    ? { command, args }
    : { command: 'taskset', args: ['-c', String(cpu), command, ...args] };
}

function cpuInfo() {
  const text = read('/proc/cpuinfo') ?? '';
  const field = (name) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(text)?.[1]?.trim() ?? null;
  const logical = (text.match(/^processor\s*:/gm) ?? []).length || os.cpus().length;
  const sockets = new Set([...text.matchAll(/^physical id\s*:\s*(\d+)/gm)].map((m) => m[1])).size || null;
  const coresPerSocket = Number(field('cpu cores')) || null;
  return {
    model: field('model name') ?? os.cpus()[0]?.model ?? null,
    logical_cpus: logical,
    physical_cores: sockets && coresPerSocket ? sockets * coresPerSocket : coresPerSocket,
    mhz: Number(field('cpu MHz')) || null,
    flags_sample: (field('flags') ?? '').split(' ').filter((f) => ['avx2', 'avx512f', 'sse4_2', 'hypervisor'].includes(f)),
    governor: read('/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor')?.trim() ?? null,
  };
}

function osRelease() {
  const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(read('/etc/os-release') ?? '');
  return m?.[1] ?? null;
}

function gitState(root) {
  const commit = output('git', ['rev-parse', 'HEAD'], { cwd: root });
  if (!commit) return null;
  const dirty = output('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root });
  return { commit, dirty: Boolean(dirty) };
}

/** The machine and toolchain metadata recorded at the top of results.json. */
export function machineInfo(root) {
  const pkg = JSON.parse(read(path.join(root, 'packages', 'server', 'package.json')) ?? '{}');
  return {
    cpu: cpuInfo(),
    memory_bytes: os.totalmem(),
    kernel: output('uname', ['-r']) ?? os.release(),
    os: osRelease(),
    arch: process.arch,
    node: process.version,
    rustc: output('rustc', ['--version']),
    cargo: output('cargo', ['--version']),
    switchboard: { version: pkg.version ?? null, git: gitState(root) },
    virtualized: existsSync('/proc/cpuinfo') && /\bhypervisor\b/.test(read('/proc/cpuinfo') ?? ''),
  };
}

/** Load average, recorded at the start and the end: the machine may be shared. */
export function loadAverage() {
  return os.loadavg().map((v) => Math.round(v * 100) / 100);
}
