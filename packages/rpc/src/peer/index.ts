/** The symmetric RPC peer of the Switchboard protocol (docs/protocol.md). */

export { Peer } from './peer.js';
export type { PeerOptions, PeerSettings, PeerStats, Timers } from './types.js';
export type { CallOptions, NotifyOptions } from './calls.js';
export type { RpcResponse, RpcResponseKind } from './response.js';
export type { IncomingCall, IncomingHandler, ReplyOptions } from './incoming.js';
export { isFastReplyCode } from './incoming.js';
export type { IncomingStream } from './streams.js';
export type { StreamSource, ReadableStreamLike } from './sender.js';
export { StreamWriter, openStream } from './writer.js';
export type { AttachmentOptions, Attachments, FileSource, IncomingFile } from './files.js';
export { RpcError, RemoteError, RpcErrorCode, RPC_ERROR_DESCRIPTIONS, isWireCode } from './errors.js';
export type { RpcErrorOptions } from './errors.js';
export type { PayloadCodec } from './codecs.js';
export { rawCodec, jsonCodec, msgpackCodec, payloadCodecs, findCodec } from './codecs.js';
export { defineAction } from './templates.js';
export type { Action, ActionOptions, PayloadArgs, RequestOf, ResponseOf } from './templates.js';
export { wrap, exposeObject } from './wrap.js';
export type { Caller, ExposeOptions, Promisified, WrapOptions } from './wrap.js';
