// The process side of the server contract (ADAPTERS.md), shared by the peer
// servers: the port to listen on, the `LISTENING <port>` line, SIGTERM, and a
// lifetime limit so that a server left behind by a crashed runner stops by
// itself.

/** PORT from the environment (0 = any free port). The host is always 127.0.0.1. */
export function listenPort() {
  const v = process.env.PORT;
  return v === undefined || v === '' ? 0 : Number(v);
}

export const HOST = '127.0.0.1';

/**
 * Announce the port, and arrange for `stop` on SIGTERM / SIGINT and after
 * RPC_SERVER_MAX_S seconds (default 900: far longer than any run).
 */
export function serve(port, stop) {
  let stopping = false;
  const finish = async (why) => {
    if (stopping) return;
    stopping = true;
    if (why) process.stderr.write(`${why}: stopping\n`);
    // Whatever `stop` does, the process ends within a second.
    setTimeout(() => process.exit(0), 1000).unref();
    try {
      await stop?.();
    } finally {
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => finish());
  process.on('SIGINT', () => finish());
  const maxS = Number(process.env.RPC_SERVER_MAX_S) || 900;
  setTimeout(() => finish(`lifetime of ${maxS} s reached`), maxS * 1000).unref();
  process.stdout.write(`LISTENING ${port}\n`);
}

/** The count of one-way messages received, across connections (the `count` action answers it). */
export const received = { notify: 0 };
