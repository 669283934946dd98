/**
 * Attachments (docs/protocol.md §4 STREAM_OPEN): the streams and files a
 * MESSAGE or RESPONSE carries. Outgoing ones are described by sources;
 * incoming ones are exposed as `IncomingStream`s, files with their name and
 * size known before any data arrives.
 */

import type { FileInfo } from '../codec/index.js';
import { Feature, MAX_INTEGER } from '../codec/index.js';
import { RpcError, RpcErrorCode } from './errors.js';
import type { StreamSource } from './sender.js';
import type { IncomingStream, InboundStream } from './streams.js';
import { StreamWriter, failWriter } from './writer.js';

/** A file to send: its data must total exactly `size` bytes (else the stream is aborted with `ERR_FILE_SIZE`). */
export interface FileSource {
  name: string;
  size: number;
  data: StreamSource;
}

/** A file received: name and size as declared by the sender, the data as a stream. */
export interface IncomingFile {
  readonly name: string;
  readonly size: number;
  readonly stream: IncomingStream;
}

/** The attachments of an outgoing message or response. */
export interface AttachmentOptions {
  /** A stream sent with the message or response. */
  stream?: StreamSource;
  /** More plain streams, sent after `stream`. */
  streams?: readonly StreamSource[];
  /** Files, sent after the plain streams. */
  files?: readonly FileSource[];
}

/** The attachments of an incoming message or response. */
export interface Attachments {
  /** The first plain stream, or null. */
  readonly stream: IncomingStream | null;
  /** Every plain stream, in order. */
  readonly streams: readonly IncomingStream[];
  /** Every file, in order. */
  readonly files: readonly IncomingFile[];
}

export interface PlannedAttachment {
  source: StreamSource;
  file: FileInfo | null;
}

const NONE: readonly PlannedAttachment[] = [];
const utf8 = new TextEncoder();

function checkSource(source: unknown, what: string, writers: Set<StreamWriter>): asserts source is StreamSource {
  if (source instanceof Uint8Array) return;
  if (source instanceof StreamWriter) {
    if (source.isAttached || writers.has(source)) {
      throw new RpcError(RpcErrorCode.InvalidArgument, `${what} is a StreamWriter that is attached already`);
    }
    writers.add(source);
    return;
  }
  if (typeof source === 'object' && source !== null) {
    const s = source as Record<PropertyKey, unknown>;
    if (
      typeof s[Symbol.asyncIterator] === 'function' ||
      typeof s[Symbol.iterator] === 'function' ||
      typeof s['getReader'] === 'function'
    ) {
      return;
    }
  }
  throw new RpcError(RpcErrorCode.InvalidArgument, `${what} is not a stream source (Uint8Array, iterable, ReadableStream or StreamWriter)`);
}

/**
 * Validates the attachments of `options` against the features in effect
 * and the receiver's frame size. Throws an RpcError before anything is sent.
 */
export function planAttachments(
  options: AttachmentOptions | undefined,
  features: number,
  maxFrameSize: number,
): readonly PlannedAttachment[] {
  if (options === undefined) return NONE;
  const { stream, streams, files } = options;
  if (stream === undefined && (streams === undefined || streams.length === 0) && (files === undefined || files.length === 0)) {
    return NONE;
  }
  const planned: PlannedAttachment[] = [];
  const writers = new Set<StreamWriter>();
  const plain = stream === undefined ? [...(streams ?? [])] : [stream, ...(streams ?? [])];
  if (plain.length > 0 && (features & Feature.Streams) === 0) {
    throw new RpcError(RpcErrorCode.FeatureDisabled, 'streams are not enabled on this connection');
  }
  for (const source of plain) {
    checkSource(source, 'a stream', writers);
    planned.push({ source, file: null });
  }
  if (files !== undefined && files.length > 0) {
    if ((features & Feature.Files) === 0) {
      throw new RpcError(RpcErrorCode.FeatureDisabled, 'files are not enabled on this connection');
    }
    for (const file of files) {
      const { name, size, data } = file;
      if (typeof name !== 'string') throw new RpcError(RpcErrorCode.InvalidArgument, 'a file name is a string');
      // STREAM_OPEN: id and size (6 bytes each at most), u16 name length, name.
      const nameBytes = utf8.encode(name).length;
      if (nameBytes > 0xffff || nameBytes > maxFrameSize - 14) {
        throw new RpcError(RpcErrorCode.InvalidArgument, `the file name "${name.slice(0, 40)}…" is too long (${nameBytes} bytes)`);
      }
      if (!Number.isSafeInteger(size) || size < 0 || size > MAX_INTEGER) {
        throw new RpcError(RpcErrorCode.InvalidArgument, `file "${name}": size ${size} is not an integer in 0…2^48-1`);
      }
      checkSource(data, `file "${name}"`, writers);
      if (data instanceof Uint8Array && data.length !== size) {
        throw new RpcError(RpcErrorCode.FileSize, `file "${name}": ${data.length} bytes of data for a declared size of ${size}`);
      }
      planned.push({ source: data, file: { name, size } });
    }
  }
  if (planned.length > 255) {
    throw new RpcError(RpcErrorCode.InvalidArgument, `at most 255 attachments, got ${planned.length}`);
  }
  return planned;
}

const EMPTY_ATTACHMENTS: Attachments = Object.freeze({ stream: null, streams: Object.freeze([]), files: Object.freeze([]) });

/** Sorts received attachments into plain streams and files. */
export function attachmentsOf(opened: readonly InboundStream[]): Attachments {
  if (opened.length === 0) return EMPTY_ATTACHMENTS;
  const streams: IncomingStream[] = [];
  const files: IncomingFile[] = [];
  for (const stream of opened) {
    if (stream.file === null) streams.push(stream);
    else files.push({ name: stream.file.name, size: stream.file.size, stream });
  }
  return { stream: streams[0] ?? null, streams, files };
}

/**
 * Fails the StreamWriters among `options`' sources: their message or
 * response was never sent. Writers attached to another stream are left alone.
 */
export function releaseSources(options: AttachmentOptions | undefined, error: Error): void {
  if (options === undefined) return;
  const sources: unknown[] = [options.stream, ...(options.streams ?? []), ...(options.files ?? []).map((f) => f?.data)];
  for (const source of sources) {
    if (source instanceof StreamWriter && !source.isAttached) source[failWriter](error);
  }
}
