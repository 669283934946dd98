// Member names and rooms of the chat, checked the same way by the server
// (app.mjs, in the upgrade hook) and by the page (chat.js imports this file,
// served as /names.mjs), so the page shows the name the server will use.
//
// Two members must never look alike because one name carries characters
// nobody sees: "sam" and "sam" + U+200B (zero-width space) would both show
// as "sam". So a name is normalised before it is checked or compared:
//   1. invisible characters are removed: format characters (Unicode
//      category Cf: zero-width space and joiners U+200B-U+200D, direction
//      marks U+200E/U+200F, bidirectional embeddings and overrides
//      U+202A-U+202E and isolates U+2066-U+2069, the word joiner and
//      invisible operators U+2060-U+2064, the byte-order mark U+FEFF, the
//      soft hyphen...), the other default-ignorable code points (Hangul
//      fillers, variation selectors, tag characters...) and the line and
//      paragraph separators U+2028/U+2029;
//   2. NFKC: compatibility forms become their plain letters, so fullwidth
//      "ｓａｍ" is "sam" and a ligature "ﬁ" is "fi";
//   3. runs of white space become one space, and the ends are trimmed.
// What is left is refused when it is empty, longer than MAX_NAME characters
// or holds a control character (C0/C1, other than white space). Names stay
// case-sensitive ("Sam" and "sam" are two members) and letters that merely
// look alike across scripts (Latin "a", Cyrillic "а") are not folded.

/** Longest name, in characters (code points) after normalisation. */
export const MAX_NAME = 32;
/**
 * Longest input looked at, in UTF-16 units before normalisation: enough for
 * any 32-character name and the marks that may come with it, and a bound on
 * the work a hostile query can ask for.
 */
export const MAX_NAME_INPUT = 256;

export const ROOM_PATTERN = /^[a-z0-9_-]{1,32}$/;

const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]/gu;
const CONTROL = /\p{Cc}/u;

/**
 * Normalise a name as typed. Returns `{ name }` or `{ error }`, where error
 * is 'empty' (nothing typed), 'invisible' (nothing visible), 'too-long' or
 * 'control'.
 */
export function normalizeName(raw) {
  const input = String(raw ?? '');
  if (input.length > MAX_NAME_INPUT) return { error: 'too-long' };
  // Invisible characters go before NFKC too: one between a letter and its
  // accent would otherwise keep the two from composing.
  const name = input
    .replace(INVISIBLE, '')
    .normalize('NFKC')
    .replace(INVISIBLE, '')
    .replace(/\s+/gu, ' ')
    .trim();
  if (name.length === 0) return { error: input.trim().length === 0 ? 'empty' : 'invisible' };
  if ([...name].length > MAX_NAME) return { error: 'too-long' };
  if (CONTROL.test(name)) return { error: 'control' };
  return { name };
}

/** A room as typed: trimmed, lower case; null unless it matches ROOM_PATTERN. */
export function normalizeRoom(raw) {
  const room = String(raw ?? '').trim().toLowerCase();
  return ROOM_PATTERN.test(room) ? room : null;
}
