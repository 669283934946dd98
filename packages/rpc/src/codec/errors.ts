/**
 * The error every codec check throws: a connection-level protocol
 * violation (docs/protocol.md §8). `code` is the code a peer reports in its
 * GO_AWAY before closing, so callers forward it without any mapping.
 */
export class ProtocolError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
  }
}

/** Fields that do not fit the body, reserved bits, empty action, bad UTF-8, zero counts. */
export function malformed(message: string): ProtocolError {
  return new ProtocolError('ERR_PROTOCOL_MALFORMED', message);
}

/** HELLO / WELCOME fields out of their allowed ranges, or a handshake frame out of place. */
export function handshakeError(message: string): ProtocolError {
  return new ProtocolError('ERR_PROTOCOL_HANDSHAKE', message);
}
