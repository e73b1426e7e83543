/**
 * Limits on JSON from outside, checked before `JSON.parse` spends anything on it. A 1 MB body of
 * 500,000 nested arrays cost over a second of CPU (and hundreds of MB) in the parser and the
 * validator; no document this service takes nests deeper than a handful of levels.
 */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * True when the text opens more than `max` nested objects/arrays. One linear pass over the
 * characters, skipping strings (with their escapes); it does not validate the JSON, which the
 * parser does afterwards on text of bounded depth.
 */
export function exceedsJsonDepth(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

export class JsonTooDeepError extends SyntaxError {
  constructor(max: number = MAX_JSON_DEPTH) {
    super(`JSON nested deeper than ${max} levels`);
  }
}

/** `JSON.parse` of text whose nesting was bounded first; both failures are SyntaxErrors. */
export function parseBoundedJson(text: string, max: number = MAX_JSON_DEPTH): unknown {
  if (exceedsJsonDepth(text, max)) throw new JsonTooDeepError(max);
  return JSON.parse(text);
}
