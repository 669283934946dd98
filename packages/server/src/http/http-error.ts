/**
 * An error with the HTTP status it answers with. Thrown (or passed to
 * `next`) by a handler, it reaches the error handlers; the default one
 * answers with its status and `{ error: { code, message } }`, and
 * `details` when the error has some (validation's list of failures).
 */
export class HttpError extends Error {
  /** What the default error handler sends as `error.details` (JSON); undefined: nothing. */
  readonly details: unknown;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown; details?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HttpError';
    this.details = options?.details;
  }
}
