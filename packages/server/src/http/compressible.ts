/**
 * Which responses are worth compressing, by their `Content-Type`
 * (docs/http.md, "Compression").
 */

/**
 * Media types worth compressing: text, and the text formats under
 * `application/` and `image/` (`+json` and `+xml` suffixes included). Not
 * images, audio, video, fonts or archives: they are compressed already.
 */
const COMPRESSIBLE = /^(?:text\/[!#$%&'*+.^_`|~0-9a-z-]+|application\/(?:json|javascript|x-javascript|ecmascript|xml|[!#$%&'*+.^_`|~0-9a-z-]+\+(?:json|xml))|image\/svg\+xml)$/;
/** Whether each `Content-Type` seen is compressible, by the value as set (an app uses a handful). */
const compressible = new Map<string, boolean>();

export function isCompressible(type: string): boolean {
  let known = compressible.get(type);
  if (known === undefined) {
    const semicolon = type.indexOf(';');
    known = COMPRESSIBLE.test((semicolon < 0 ? type : type.slice(0, semicolon)).trim().toLowerCase());
    // Bounded: an app that builds types from input cannot grow it.
    if (compressible.size < 1024) compressible.set(type, known);
  }
  return known;
}
