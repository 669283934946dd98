/** The codec of the Switchboard protocol, version 1 (docs/protocol.md). */

export * from './frames.js';
export { encodeFrame, encodeFrameHead, encodeFrameInto, encodedLength, frameTail } from './encode.js';
export { decodeFrame } from './decode.js';
export { FrameDecoder } from './decoder.js';
export type { FrameDecoderOptions } from './decoder.js';
export { checkPreface } from './preface.js';
export { messageUuid, randomSeed, responseUuid, unnumberedUuid, uuidToString } from './uuid.js';
export { ProtocolError } from './errors.js';
export { SequenceCheck } from './sequence.js';
