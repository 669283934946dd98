// The gRPC service of the `grpc` peer, written by hand: every message is a
// raw Buffer (identity serialize/deserialize) instead of a protobuf message.
// So the figures are gRPC's transport (HTTP/2 framing, the 5-byte message
// prefix, headers and trailers per call, grpc-js's call machinery) without
// protobuf's encoding cost, matching the other peers, which carry opaque
// bytes too (README.md discusses this choice).
const raw = (b) => b;

function method(name, { requestStream = false, responseStream = false } = {}) {
  return {
    path: `/bench.Bench/${name}`,
    requestStream,
    responseStream,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  };
}

export const service = {
  tiny: method('Tiny'), // unary: the 16 bytes back
  fast: method('Fast'), // unary: an empty message (gRPC's smallest response)
  upload: method('Upload'), // unary: N bytes in one message; reply its length (decimal ASCII)
  file: method('File', { requestStream: true }), // client streaming: 64 KiB chunks; reply the byte count
  many: method('Many', { responseStream: true }), // server streaming: request = count (decimal ASCII); N messages of 16 bytes
  notify: method('Notify', { requestStream: true }), // client streaming: one-way messages; counted
  count: method('Count'), // unary: the one-way count (decimal ASCII)
};

/** Chunk size of file uploads: gRPC's own guidance for streaming large data is 16-64 KiB messages. */
export const FILE_CHUNK = 64 * 1024;
