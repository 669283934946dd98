// Latency samples: every measured call's round trip is recorded (a plain
// Float64Array of microseconds) until a million are held; past that a
// uniform reservoir sample (Vitter's algorithm R) keeps a million. The mean
// and the maximum are over every call; the percentiles are read from the
// sorted samples (exact below a million calls, an unbiased sample above).
// Chosen over an HDR histogram for having no dependency and no bucket
// error; a five-second run on this machine stays under the million.
export class Samples {
  constructor(capacity = 1 << 20) {
    this.values = new Float64Array(capacity);
    this.held = 0;
    this.seen = 0;
    this.sum = 0;
    this.max = 0;
  }

  add(us) {
    this.seen++;
    this.sum += us;
    if (us > this.max) this.max = us;
    if (this.held < this.values.length) this.values[this.held++] = us;
    else {
      const j = Math.floor(Math.random() * this.seen);
      if (j < this.values.length) this.values[j] = us;
    }
  }

  /** { mean, p50, p90, p99, p999, max, count, sampled } in µs, or null without samples. */
  summary() {
    if (this.held === 0) return null;
    const sorted = this.values.subarray(0, this.held).sort();
    const at = (q) => sorted[Math.min(this.held - 1, Math.max(0, Math.ceil(q * this.held) - 1))];
    const r = (v) => Math.round(v * 10) / 10;
    return {
      mean: r(this.sum / this.seen),
      p50: r(at(0.5)),
      p90: r(at(0.9)),
      p99: r(at(0.99)),
      p999: r(at(0.999)),
      max: r(this.max),
      count: this.seen,
      sampled: this.held < this.seen,
    };
  }
}
