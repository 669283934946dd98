/**
 * `multipart/form-data` bodies (RFC 7578): `req.multipart()` is an async
 * iterable of the form's parts, parsed on the worker by busboy as the body
 * arrives. A field comes whole (a string); a file comes as a `Readable` of
 * its bytes, to be read before the next part is asked for.
 *
 * Memory: busboy's parser takes the body pieces as they are iterated, and
 * a file's bytes go to its stream as views into those pieces (busboy
 * copies only the few bytes it had to hold back while looking for a
 * boundary). The pieces are views into event batches, which are never
 * reused, so a view stays valid; keeping a small one for long keeps its
 * batch alive, as for `for await (const piece of req)`. When a file's
 * stream is not read, busboy holds its write callback, its input fills up
 * (`highWaterMark`), and the loop that feeds it stops pulling body pieces
 * until it drains: an upload waits for its reader, holding at most the
 * parser's and the stream's buffers plus what the body had already queued.
 */
import { Readable } from 'node:stream';
import busboy from 'busboy';
import { SwitchboardError } from '../errors.js';
import { HttpError } from './http-error.js';
import type { Request } from './request.js';

/** Limits of one multipart body. Crossing one fails the iteration with 413 `ERR_HTTP_MULTIPART_LIMIT`. */
export interface MultipartOptions {
  /** Parts (fields and files) in the form. Default 1000. */
  parts?: number;
  /** File parts. Default 10. */
  files?: number;
  /** Field (non-file) parts. Default 1000. */
  fields?: number;
  /** Bytes of one field's value. Default 1 MiB. */
  fieldSize?: number;
  /** Bytes of one file. Default 100 MiB (the route's `bodyLimit` bounds the whole body anyway). */
  fileSize?: number;
}

/** A form field: its value decoded as text (UTF-8 unless the part names a charset). */
export interface MultipartField {
  kind: 'field';
  name: string;
  value: string;
  /** The part's `Content-Type` (`text/plain` when it has none). */
  mimeType: string;
  /** The part's `Content-Transfer-Encoding` (`7bit` when it has none); informative only. */
  encoding: string;
}

/** A file part: its bytes are `stream`, to be read before the next part is asked for. */
export interface MultipartFile {
  kind: 'file';
  name: string;
  /** The file's name without any directory; undefined when the part (typed `application/octet-stream`) names none. */
  filename: string | undefined;
  /** The part's `Content-Type`. */
  mimeType: string;
  /** The part's `Content-Transfer-Encoding`; informative only (the bytes are not decoded). */
  encoding: string;
  /**
   * The file's bytes. Ends with the file; fails with the iteration's error
   * (a limit, a malformed body, the client leaving). Chunks are views into
   * the body's event batches (see the module's comment).
   */
  stream: Readable;
}

export type MultipartPart = MultipartField | MultipartFile;

/** A file of `multipartAll`, in memory. */
export interface MultipartBufferedFile {
  name: string;
  filename: string | undefined;
  mimeType: string;
  encoding: string;
  data: Buffer;
}

/** What `multipartAll` collects: fields by name (a repeated name gives an array), files in order. */
export interface MultipartForm {
  fields: Record<string, string | string[]>;
  files: MultipartBufferedFile[];
}

/** The defaults, each with its reason. */
export const MULTIPART_DEFAULTS: Readonly<Required<MultipartOptions>> = Object.freeze({
  // A generous form; the count bounds the per-part work and objects.
  parts: 1000,
  // Uploads are few per form; each file is a stream the handler must read.
  files: 10,
  fields: 1000,
  // busboy's default: fields are held whole, as strings.
  fieldSize: 1024 * 1024,
  // Files are streamed, so this is about the handler's storage, not memory.
  fileSize: 100 * 1024 * 1024,
});

// What busboy buffers: its input (body pieces not yet parsed) and each
// file stream's queue. 64 KiB each, Node 22's default, rather than Node
// 20's 16 KiB: fewer pauses of the feeding loop for the same bound.
const PARSER_HIGH_WATER_MARK = 64 * 1024;
const FILE_HIGH_WATER_MARK = 64 * 1024;

function limitError(name: keyof MultipartOptions, value: number): HttpError {
  const error = new HttpError(413, 'ERR_HTTP_MULTIPART_LIMIT', `the multipart body crosses the "${name}" limit (${value})`);
  return Object.assign(error, { limit: name });
}

function malformed(cause: unknown): HttpError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new HttpError(400, 'ERR_HTTP_MULTIPART_MALFORMED', `malformed multipart body: ${detail}`, { cause });
}

/** The limits, checked and completed with the defaults. */
export function multipartLimits(options: MultipartOptions = {}): Required<MultipartOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new SwitchboardError('ERR_INVALID_OPTION', 'multipart options must be an object');
  }
  const limits = { ...MULTIPART_DEFAULTS };
  for (const [key, value] of Object.entries(options)) {
    if (!(key in MULTIPART_DEFAULTS)) throw new SwitchboardError('ERR_INVALID_OPTION', `unknown multipart option "${key}"`);
    if (value === undefined) continue;
    if (!(value === Infinity || (Number.isSafeInteger(value) && value >= 0))) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `multipart option ${key} must be a whole number >= 0 (or Infinity), got ${String(value)}`);
    }
    limits[key as keyof MultipartOptions] = value;
  }
  return limits;
}

/** Whether a `Content-Type` is `multipart/form-data` (parameters aside). */
function isFormData(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === 'multipart/form-data';
}

/** The iteration's state: one value, not a set of flags. */
const enum State {
  /** Nothing asked yet: the body is not claimed. */
  Idle,
  Parsing,
  /** Every part was handed out (or queued) and the form ended well. */
  Done,
  Failed,
  /** The consumer left the loop. */
  Stopped,
}

/**
 * One multipart body, read through an async iterator. The feeding loop
 * (`pump`) starts at the first `next()`; parts queue up in `ready` as
 * busboy emits them, which is one at a time when files are read in turn
 * (busboy emits nothing past an unread file).
 */
class MultipartReader implements AsyncIterableIterator<MultipartPart> {
  private state = State.Idle;
  private failure: Error | undefined;
  private parser: busboy.Busboy | undefined;
  private readonly ready: MultipartPart[] = [];
  /** The last file handed out, whose stream may be unread. */
  private current: Readable | undefined;
  /** The file busboy is writing to (until its part ends). */
  private writing: FileStream | undefined;
  private partCount = 0;
  private wakeConsumer: (() => void) | undefined;
  private wakePump: (() => void) | undefined;
  private readonly limits: Required<MultipartOptions>;

  constructor(
    private readonly req: Request,
    options: MultipartOptions | undefined,
  ) {
    this.limits = multipartLimits(options);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<MultipartPart, undefined>> {
    if (this.state === State.Idle) this.start();
    // Files are read one after another: asking for the next part drops
    // what is left of the previous file, or busboy would wait for it.
    if (this.current && !this.current.readableEnded && !this.current.destroyed) this.current.resume();
    this.current = undefined;
    for (;;) {
      const part = this.ready.shift();
      if (part !== undefined) {
        if (part.kind === 'file') this.current = part.stream;
        return { value: part, done: false };
      }
      if (this.state === State.Failed) {
        const failure = this.failure!;
        // Thrown once: the loop that sees it is over.
        this.state = State.Stopped;
        throw failure;
      }
      if (this.state !== State.Parsing) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.wakeConsumer = resolve));
    }
  }

  /** `break` (or a throw) in the consumer's loop: stop parsing and pulling the body. */
  async return(): Promise<IteratorResult<MultipartPart, undefined>> {
    if (this.state === State.Parsing || this.state === State.Idle) {
      this.stop(State.Stopped, undefined);
    } else {
      this.state = State.Stopped;
    }
    return { value: undefined, done: true };
  }

  private start(): void {
    this.state = State.Parsing;
    const contentType = this.req.header('content-type');
    if (!isFormData(contentType)) {
      this.stop(State.Failed, new HttpError(415, 'ERR_HTTP_UNSUPPORTED_MEDIA_TYPE', `expected a multipart/form-data body, got ${contentType === undefined ? 'no Content-Type' : JSON.stringify(contentType)}`));
      return;
    }
    const { parts, files, fields, fieldSize, fileSize } = this.limits;
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: { 'content-type': contentType },
        limits: {
          // busboy reports `parts` when the boundary after that many parts
          // is seen, the last one included, and `fieldSize` and `fileSize`
          // when a value reaches the size: one more of each tells a form
          // that is exactly at a limit from one past it. `files` and
          // `fields` it reports when one more starts.
          parts: parts + 1,
          files,
          fields,
          fieldSize: fieldSize + 1,
          fileSize: fileSize + 1,
        },
        highWaterMark: PARSER_HIGH_WATER_MARK,
        fileHwm: FILE_HIGH_WATER_MARK,
        // Browsers send file names as raw UTF-8 in the part's head.
        defParamCharset: 'utf8',
      });
    } catch (error) {
      // A missing boundary, an unparsable Content-Type.
      this.stop(State.Failed, malformed(error));
      return;
    }
    this.parser = parser;
    parser.on('field', (name, value, info) => {
      this.partEnded();
      if (info.valueTruncated) return this.fail(limitError('fieldSize', fieldSize));
      if (!this.countPart()) return;
      this.queue({ kind: 'field', name: name ?? '', value, mimeType: info.mimeType, encoding: info.encoding });
    });
    parser.on('file', (name, source, info) => {
      this.partEnded();
      if (!this.countPart()) {
        source.on('error', noop).resume();
        return;
      }
      const stream = new FileStream(source, fileSize);
      this.writing = stream;
      source.once('limit', () => this.fail(limitError('fileSize', fileSize)));
      this.queue({ kind: 'file', name: name ?? '', filename: info.filename, mimeType: info.mimeType, encoding: info.encoding, stream });
    });
    parser.on('partsLimit', () => this.fail(limitError('parts', parts), true));
    parser.on('filesLimit', () => this.fail(limitError('files', files), true));
    parser.on('fieldsLimit', () => this.fail(limitError('fields', fields), true));
    parser.on('error', (error: unknown) => this.fail(malformed(error)));
    parser.on('drain', () => this.resumePump());
    parser.on('finish', () => {
      if (this.state !== State.Parsing) return;
      this.state = State.Done;
      this.wake();
    });
    this.pump().catch((error: unknown) => this.fail(error));
  }

  /**
   * busboy started a part (or saw the boundary after one): the file before
   * it has all its bytes, and a failure from now on is not that file's.
   */
  private partEnded(): void {
    this.writing = undefined;
  }

  /** Count a part busboy handed out; false (and failed) past the limit. */
  private countPart(): boolean {
    if (this.state !== State.Parsing) return false;
    if (++this.partCount > this.limits.parts) {
      this.fail(limitError('parts', this.limits.parts));
      return false;
    }
    return true;
  }

  private queue(part: MultipartPart): void {
    this.ready.push(part);
    this.wake();
  }

  /** Feed the body to busboy, waiting while it is full. */
  private async pump(): Promise<void> {
    const parser = this.parser!;
    // Claims the body: a body already read fails here (ERR_HTTP_BODY_CONSUMED).
    for await (const piece of this.req) {
      if (this.state !== State.Parsing) return;
      if (!parser.write(piece)) {
        await new Promise<void>((resolve) => (this.wakePump = resolve));
        if (this.state !== State.Parsing) return;
      }
    }
    if (this.state === State.Parsing) parser.end();
  }

  private resumePump(): void {
    const wake = this.wakePump;
    this.wakePump = undefined;
    wake?.();
  }

  /** A limit, a malformed body or a failed read: the first one wins. `between`: it came at a part's boundary. */
  private fail(error: unknown, between = false): void {
    if (this.state !== State.Parsing) return;
    if (between) this.partEnded();
    this.stop(State.Failed, error instanceof Error ? error : new Error(String(error)));
  }

  private stop(state: State.Failed | State.Stopped, error: Error | undefined): void {
    this.state = state;
    this.failure = error;
    const writing = this.writing;
    this.writing = undefined;
    // The file being written gets the iteration's error; one the consumer
    // stopped at ends as cut short.
    writing?.destroy(error ?? new HttpError(400, 'ERR_HTTP_MULTIPART_MALFORMED', 'the multipart iteration ended before this file was read'));
    for (const part of this.ready.splice(0)) {
      if (part.kind === 'file' && part.stream !== writing) part.stream.destroy();
    }
    const parser = this.parser;
    this.parser = undefined;
    if (parser) {
      parser.removeAllListeners('field').removeAllListeners('file');
      parser.on('error', noop);
      // Not from inside busboy's own write (a limit is reported there):
      // it goes on with the rest of the piece after the event.
      process.nextTick(() => parser.destroy());
    }
    this.wake();
    this.resumePump();
  }

  private wake(): void {
    const wake = this.wakeConsumer;
    this.wakeConsumer = undefined;
    wake?.();
  }
}

function noop(): void {}

/**
 * What the consumer reads of a file: busboy's stream, passed through so
 * that its errors are `HttpError`s (busboy fails a cut-short file with a
 * plain `Error`) and so that dropping it (`destroy()`, or `next()` before
 * its end) reads the rest of the part away instead of stalling busboy,
 * which would wait for its reader forever.
 */
class FileStream extends Readable {
  private received = 0;

  constructor(
    private readonly source: Readable,
    /** `fileSize`: busboy passes one byte more, then reports the limit, which fails this stream. */
    private readonly limit: number,
  ) {
    super({ highWaterMark: FILE_HIGH_WATER_MARK });
    // The error reaches the consumer through the iteration too: a stream
    // not yet handed out, or dropped unread, must not crash the worker.
    this.on('error', noop);
    source.on('data', (chunk: Buffer) => {
      if (this.destroyed) return;
      const room = this.limit - this.received;
      this.received += chunk.length;
      if (chunk.length > room) {
        if (room > 0) this.push(chunk.subarray(0, room));
        return;
      }
      if (!this.push(chunk)) source.pause();
    });
    source.on('end', () => this.push(null));
    source.on('error', (error: unknown) => this.destroy(error instanceof HttpError ? error : malformed(error)));
    source.pause();
  }

  override _read(): void {
    this.source.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.source.resume();
    callback(error);
  }
}

/** `req.multipart(options)`. */
export function readMultipart(req: Request, options?: MultipartOptions): AsyncIterableIterator<MultipartPart> {
  return new MultipartReader(req, options);
}

/**
 * `req.multipartAll(options)`: the whole form in memory, for small forms.
 * Every file is held whole, so the memory is up to `files * fileSize` (and
 * `bodyLimit`): lower `fileSize` for this, or stream with `multipart()`.
 */
export async function readMultipartAll(req: Request, options?: MultipartOptions): Promise<MultipartForm> {
  // No prototype: a field named `__proto__` is a field.
  const fields = Object.create(null) as Record<string, string | string[]>;
  const files: MultipartBufferedFile[] = [];
  for await (const part of readMultipart(req, options)) {
    if (part.kind === 'field') {
      const previous = fields[part.name];
      if (previous === undefined) fields[part.name] = part.value;
      else if (Array.isArray(previous)) previous.push(part.value);
      else fields[part.name] = [previous, part.value];
    } else {
      const chunks: Buffer[] = [];
      for await (const chunk of part.stream) chunks.push(chunk as Buffer);
      // One Buffer of its own: the chunks are views into event batches.
      files.push({ name: part.name, filename: part.filename, mimeType: part.mimeType, encoding: part.encoding, data: Buffer.concat(chunks) });
    }
  }
  return { fields, files };
}
