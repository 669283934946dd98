// Raw protocol connections for the tests of what a well-behaved client
// cannot send: bytes written by hand, frames decoded with the codec.
import net from 'node:net';
import { once } from 'node:events';
import { ALL_FEATURES, FrameDecoder, PREFACE, encodeFrame, randomSeed } from 'switchboard-rpc';

export const HELLO = {
  type: 'hello',
  maxFrameSize: 1 << 20,
  initialWindow: 1 << 20,
  maxConcurrentCalls: 16,
  heartbeatMs: 0,
  features: ALL_FEATURES,
  codecs: ['json'],
  data: new Uint8Array(),
};

/** A socket whose received frames (after the server's preface) queue in `frames`. */
export async function rawConnect(target) {
  const socket = typeof target === 'string' ? net.connect(target) : net.connect(target, '127.0.0.1');
  await once(socket, 'connect');
  const decoder = new FrameDecoder({ maxFrameSize: 64 << 20, expectPreface: true });
  const frames = [];
  let waiting = null;
  socket.received = 0;
  socket.on('data', (chunk) => {
    socket.received += chunk.length;
    decoder.push(chunk);
    try {
      for (let frame; (frame = decoder.next()); ) frames.push(frame);
    } catch (error) {
      frames.push({ type: 'decode-error', code: error.code });
    }
    waiting?.();
  });
  socket.ended = new Promise((resolve) => socket.on('close', resolve));
  socket.on('error', () => {});
  /** The next frame, or null when the connection closed first. */
  socket.nextFrame = async (timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    while (frames.length === 0) {
      if (socket.destroyed && frames.length === 0) return null;
      if (Date.now() > deadline) throw new Error('timed out waiting for a frame');
      await Promise.race([new Promise((r) => (waiting = r)), socket.ended, new Promise((r) => setTimeout(r, 20))]);
    }
    return frames.shift();
  };
  return socket;
}

/** Connect and complete the handshake; resolves with the socket and the WELCOME. */
export async function handshake(target, hello = {}) {
  const socket = await rawConnect(target);
  socket.write(PREFACE);
  socket.write(encodeFrame({ ...HELLO, seed: randomSeed(), ...hello }));
  const welcome = await socket.nextFrame();
  return { socket, welcome };
}

export { encodeFrame, PREFACE };
