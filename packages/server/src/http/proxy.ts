/**
 * Trusting the proxies in front of the server (`app.trustProxy`): which
 * hops of `X-Forwarded-For` to believe, so that `req.ip`, `req.protocol`
 * and `req.hostname` describe the client rather than the last proxy.
 * Nothing is trusted by default: a client can write these headers itself.
 */
import { SwitchboardError } from '../errors.js';

/** `true`: every hop; a number: that many hops nearest the server; addresses: those proxies. */
export type TrustProxy = boolean | number | readonly string[];

/** Whether the hop at `address`, `hop` steps from the server (0: the socket's peer), is a trusted proxy. */
export type TrustTest = (address: string, hop: number) => boolean;

export function trustTest(trust: TrustProxy): TrustTest | undefined {
  if (trust === false || trust === 0) return undefined;
  if (trust === true) return () => true;
  if (typeof trust === 'number') {
    if (!Number.isInteger(trust) || trust < 0) {
      throw new SwitchboardError('ERR_INVALID_OPTION', `trustProxy as a number is a count of hops >= 0, got ${String(trust)}`);
    }
    return (_address, hop) => hop < trust;
  }
  if (Array.isArray(trust) && trust.every((a) => typeof a === 'string' && a.length > 0)) {
    const trusted = new Set(trust.map((a) => a.toLowerCase()));
    return (address) => trusted.has(address.toLowerCase());
  }
  throw new SwitchboardError('ERR_INVALID_OPTION', 'trustProxy is true, false, a number of hops, or a list of proxy addresses');
}

/**
 * The client's address: from the socket's peer, walk `X-Forwarded-For`
 * from the right (nearest hop first) while the address in hand is a
 * trusted proxy.
 */
export function clientAddress(peer: string, forwardedFor: string | undefined, trust: TrustTest): string {
  if (!forwardedFor) return peer;
  const hops = forwardedFor.split(',').map((a) => a.trim()).filter((a) => a.length > 0);
  let address = peer;
  for (let hop = 0; hop < hops.length; hop++) {
    if (!trust(address, hop)) break;
    address = hops[hops.length - 1 - hop]!;
  }
  return address;
}

/** The first value of a forwarded header (`X-Forwarded-Proto: https, http`). */
export function firstValue(header: string | undefined): string | undefined {
  const value = header?.split(',')[0]?.trim();
  return value ? value : undefined;
}
