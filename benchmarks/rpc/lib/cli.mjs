// What the suite's command-line scripts (run.mjs, capacity.mjs) share: a
// comma-separated list checked against the known names, and the progress
// display on stderr (a status line redrawn in place on a terminal, log
// lines kept).

/** The known names `value` selects, in their own order; exits 2 on an unknown one. */
export function parseList(value, known, what) {
  if (!value) return [...known];
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of list) {
    if (!known.includes(item)) {
      console.error(`unknown ${what} "${item}" (known: ${known.join(', ')})`);
      process.exit(2);
    }
  }
  return known.filter((k) => list.includes(k));
}

/** A positive number of seconds from an option, or undefined; exits 2 otherwise. */
export function seconds(value, what) {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(n > 0)) {
    console.error(`--${what} takes a positive number of seconds`);
    process.exit(2);
  }
  return n;
}

/** { log(line), status(line) }: log lines stay, the status line is replaced by the next. */
export function progressDisplay(stream = process.stderr) {
  const tty = stream.isTTY;
  let statusShown = false;
  return {
    log(line) {
      if (statusShown) stream.write('\r\x1b[K');
      statusShown = false;
      stream.write(`${line}\n`);
    },
    status(line) {
      if (!tty) return;
      const width = stream.columns || 120;
      stream.write(`\r\x1b[K${line.slice(0, width - 1)}`);
      statusShown = true;
    },
  };
}
