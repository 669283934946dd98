/**
 * Files and streams between Node and the protocol: files to send from a
 * path or a Readable, and received streams to a Writable, to disk, or as a
 * Readable.
 */

import { createReadStream, createWriteStream } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { ReadableOptions, Writable } from 'node:stream';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FileSource, IncomingFile, IncomingStream } from 'switchboard-rpc';
import { RpcError, RpcErrorCode } from 'switchboard-rpc';

/** A received stream, or a received file (whose `stream` is used). */
export type Incoming = IncomingStream | IncomingFile;

export interface FileFromPathOptions {
  /** The name sent (default: the path's base name). */
  name?: string;
  /** Bytes read at a time (default 64 KiB). */
  highWaterMark?: number;
}

function streamOf(incoming: Incoming): IncomingStream {
  return 'stream' in incoming ? incoming.stream : incoming;
}

/**
 * A file to attach to a call or a response (`files: [await fileFromPath(p)]`):
 * name and size from the file system. The file is opened only when the
 * peer starts sending it, so a call that never goes out leaks no
 * descriptor; exactly the size found now is sent, even if the file grows.
 */
export async function fileFromPath(filePath: string, options: FileFromPathOptions = {}): Promise<FileSource> {
  const info = await stat(filePath);
  if (!info.isFile()) throw new RpcError(RpcErrorCode.InvalidArgument, `${filePath} is not a regular file`);
  const size = info.size;
  const highWaterMark = options.highWaterMark ?? 64 * 1024;
  const data: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: (): AsyncIterator<Uint8Array> => {
      if (size === 0) return { next: async () => ({ done: true, value: undefined }) };
      return createReadStream(filePath, { start: 0, end: size - 1, highWaterMark })[Symbol.asyncIterator]();
    },
  };
  return { name: options.name ?? path.basename(filePath), size, data };
}

/**
 * A file to attach from a Readable (or any async iterable of chunks) whose
 * size is known; it must produce exactly `size` bytes, else the stream is
 * aborted with `ERR_FILE_SIZE`.
 */
export function fileFromReadable(name: string, size: number, readable: Readable | AsyncIterable<Uint8Array>): FileSource {
  return { name, size, data: readable as AsyncIterable<Uint8Array> };
}

export interface PipeOptions {
  /** End the writable when the stream ends (default true). */
  end?: boolean;
  signal?: AbortSignal;
}

/** Pipes a received stream into a Writable, with backpressure (credit follows the writable). Resolves with the byte count. */
export async function pipeTo(incoming: Incoming, writable: Writable, options: PipeOptions = {}): Promise<number> {
  const stream = streamOf(incoming);
  let bytes = 0;
  async function* counted(): AsyncGenerator<Uint8Array> {
    for await (const chunk of stream) {
      bytes += chunk.length;
      yield chunk;
    }
  }
  await pipeline(counted(), writable, { end: options.end ?? true, ...(options.signal === undefined ? {} : { signal: options.signal }) });
  return bytes;
}

/**
 * Saves a received stream or file to `filePath` (created or truncated).
 * Resolves with the byte count; on failure the partial file is removed.
 */
export async function saveTo(incoming: Incoming, filePath: string, options: { mode?: number; signal?: AbortSignal } = {}): Promise<number> {
  const out = createWriteStream(filePath, { flags: 'w', ...(options.mode === undefined ? {} : { mode: options.mode }) });
  try {
    return await pipeTo(incoming, out, options.signal === undefined ? {} : { signal: options.signal });
  } catch (error) {
    out.destroy();
    await unlink(filePath).catch(() => {});
    throw error;
  }
}

/**
 * A received stream as a Node Readable (bytes, not objects). Destroying the
 * Readable early stops the stream (STOP to the sender).
 */
export function toReadable(incoming: Incoming, options: Omit<ReadableOptions, 'objectMode' | 'read'> = {}): Readable {
  return Readable.from(streamOf(incoming), { ...options, objectMode: false });
}
