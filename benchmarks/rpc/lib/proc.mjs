// A process's CPU time and memory from /proc, as the WebSocket suite's load
// generator reads them (benchmarks/loadgen): /proc/<pid>/stat covers every
// thread of the process, so a server's worker and I/O threads count too.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticks = null;
/** Clock ticks per second (getconf CLK_TCK; 100 on Linux in practice). */
function clockTicks() {
  if (ticks === null) {
    const out = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    ticks = Number(out.stdout?.trim()) || 100;
  }
  return ticks;
}

/** User + system CPU seconds of a process so far, or null when unreadable. */
export function cpuSeconds(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat(5); here indices 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

/** Resident memory now and at its peak, in kB (VmRSS, VmHWM), or nulls. */
export function memoryKb(pid) {
  let text = '';
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    // gone
  }
  const field = (name) => {
    const m = new RegExp(`^${name}:\\s*(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  return { rss_kb: field('VmRSS'), rss_peak_kb: field('VmHWM') };
}
