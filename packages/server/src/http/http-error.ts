/**
 * An error with the HTTP status it answers with. Thrown (or passed to
 * `next`) by a handler, it reaches the error handlers; the default one
 * answers with its status and `{ error: { code, message } }`.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'HttpError';
  }
}
