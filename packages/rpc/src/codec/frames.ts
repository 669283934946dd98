/**
 * The frames of the Switchboard protocol, version 1, as values.
 *
 * This is the model both directions of the codec share (`encode.ts`,
 * `decode.ts`) and the shape of the `frame` objects in the test vectors
 * (`spec/wire/*.json`), with hex strings there where bytes are
 * `Uint8Array`s here. `docs/protocol.md` is the normative description.
 */

/** `SWB` and the version byte: the first four bytes each side sends. */
export const PREFACE = Uint8Array.of(0x53, 0x57, 0x42, 0x01);
export const PROTOCOL_VERSION = 1;
/** The WebSocket subprotocol name of this version. */
export const WEBSOCKET_SUBPROTOCOL = 'switchboard.v1';

export const FrameType = {
  Hello: 0x01,
  Welcome: 0x02,
  Message: 0x03,
  Response: 0x04,
  End: 0x05,
  FastReply: 0x06,
  Error: 0x07,
  StreamOpen: 0x08,
  StreamData: 0x09,
  StreamEnd: 0x0a,
  Credit: 0x0b,
  Stop: 0x0c,
  Cancel: 0x0d,
  Heartbeat: 0x0e,
  GoAway: 0x0f,
} as const;
export type FrameTypeCode = (typeof FrameType)[keyof typeof FrameType];

/** Feature bits of HELLO / WELCOME. */
export const Feature = {
  Streams: 1 << 0,
  Files: 1 << 1,
  Cancel: 1 << 2,
} as const;
export const ALL_FEATURES = Feature.Streams | Feature.Files | Feature.Cancel;

/** Fields HELLO and WELCOME share. */
export interface Settings {
  /** 16 bytes in UUID v4 layout: the base of this side's UUIDs. */
  seed: Uint8Array;
  maxFrameSize: number;
  initialWindow: number;
  maxConcurrentCalls: number;
  heartbeatMs: number;
  features: number;
}

export interface HelloFrame extends Settings {
  type: 'hello';
  /** Codec names in preference order. */
  codecs: string[];
  /** Connect data (a token, for instance). */
  data: Uint8Array;
}

export interface WelcomeFrame extends Settings {
  type: 'welcome';
  /** The codec chosen. */
  codec: string;
  data: Uint8Array;
}

export interface MessageFrame {
  type: 'message';
  callId: number;
  /** false: a one-way message. */
  expectsReply: boolean;
  /** An explicit UUID (16 bytes), or null for the derived one. */
  uuid: Uint8Array | null;
  /** Number of STREAM_OPEN frames that follow (0 = none). */
  attachments: number;
  action: string;
  payload: Uint8Array;
}

export interface ResponseFrame {
  type: 'response';
  callId: number;
  last: boolean;
  attachments: number;
  payload: Uint8Array;
}

export interface EndFrame {
  type: 'end';
  callId: number;
}

export interface FastReplyFrame {
  type: 'fastReply';
  callId: number;
  code: number;
}

export interface ErrorFrame {
  type: 'error';
  callId: number;
  code: string;
  message: string;
  /** Codec-encoded details; empty = none. */
  details: Uint8Array;
}

export interface FileInfo {
  size: number;
  name: string;
}

export interface StreamOpenFrame {
  type: 'streamOpen';
  streamId: number;
  /** Set for a file attachment, null for a plain stream. */
  file: FileInfo | null;
}

export interface StreamDataFrame {
  type: 'streamData';
  streamId: number;
  data: Uint8Array;
}

export interface Abort {
  code: string;
  message: string;
}

export interface StreamEndFrame {
  type: 'streamEnd';
  streamId: number;
  /** Set when the sender aborted the stream. */
  abort: Abort | null;
}

export interface CreditFrame {
  type: 'credit';
  streamId: number;
  increment: number;
}

export interface StopFrame {
  type: 'stop';
  streamId: number;
  code: string;
}

export interface CancelFrame {
  type: 'cancel';
  callId: number;
}

export interface HeartbeatFrame {
  type: 'heartbeat';
  pong: boolean;
}

export interface GoAwayFrame {
  type: 'goAway';
  lastCallId: number;
  code: string;
  message: string;
}

export type Frame =
  | HelloFrame
  | WelcomeFrame
  | MessageFrame
  | ResponseFrame
  | EndFrame
  | FastReplyFrame
  | ErrorFrame
  | StreamOpenFrame
  | StreamDataFrame
  | StreamEndFrame
  | CreditFrame
  | StopFrame
  | CancelFrame
  | HeartbeatFrame
  | GoAwayFrame;

/** Largest integer a 6-byte field holds. */
export const MAX_INTEGER = 2 ** 48 - 1;
/** Smallest `maxFrameSize` and `initialWindow` a handshake may announce. */
export const MIN_FRAME_SIZE = 1024;
/**
 * Largest body of a HELLO or WELCOME, whatever either side's `maxFrameSize`
 * (docs/protocol.md §2): it is read before the limits are known.
 */
export const MAX_HANDSHAKE_SIZE = 64 * 1024;
