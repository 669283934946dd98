// What every Node HTTP peer of the suite shares (contract: ../../SCENARIOS.md,
// "HTTP"): the port and static folder from the environment, the answers'
// fixed bodies, the `LISTENING <port>` line, and SIGTERM.
import { statSync } from 'node:fs';
import path from 'node:path';

/** `GET /hello`'s body. */
export const HELLO = 'Hello, World!';
/** The largest request body any peer accepts (`POST /echo` sends 64 KiB). */
export const BODY_LIMIT = 1024 * 1024;

/** PORT (0 or unset: any free port); a malformed value stops the server. */
export function portFromEnv() {
  const raw = process.env.PORT;
  if (raw === undefined || raw === '') return 0;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`PORT must be a port number, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return port;
}

/**
 * STATIC_DIR: the folder `/static/<name>` serves (the runner creates it with
 * 64k.bin and 1m.bin). Required: a peer without it would answer 404 and
 * fail the static runs for a reason that is not the library's.
 */
export function staticDirFromEnv() {
  const dir = process.env.STATIC_DIR;
  if (!dir) {
    console.error('STATIC_DIR must name the folder of the static files');
    process.exit(2);
  }
  try {
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    console.error(`STATIC_DIR=${dir}: ${err.message}`);
    process.exit(2);
  }
  return path.resolve(dir);
}

/** A file name `/static/<name>` may serve: one path segment, no dot files, no traversal. */
export function safeFileName(name) {
  return /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name) && !name.includes('..');
}

/** Prints the line the runner waits for. */
export function announce(port) {
  process.stdout.write(`LISTENING ${port}\n`);
}

/** SIGTERM (or SIGINT) runs `stop` once, then exits 0. */
export function onStop(stop) {
  let stopping = false;
  const handler = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await stop();
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
