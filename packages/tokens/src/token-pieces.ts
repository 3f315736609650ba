/**
 * Cuts a segment of text at its tokens' boundaries. The pieces are slices of the text itself,
 * never decoded token bytes: o200k_base has tokens that hold part of a character's UTF-8 bytes
 * (an emoji's or a CJK character's bytes split over two tokens), and such a token decodes to no
 * valid text of its own. Where a token ends inside a character, its piece runs on to the end of
 * the next token that ends on a character boundary, so every piece is whole text.
 */
import bytePairRanks from 'gpt-tokenizer/bpeRanks/o200k_base';

/** UTF-8 length of each token, 0 until first needed (no token is empty). The longest is 128 bytes. */
const tokenByteLengths = new Uint8Array(bytePairRanks.length);

function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length && isLowSurrogate(text.charCodeAt(index + 1))) {
      bytes += 4;
      index += 1;
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

function byteLengthOf(token: number): number {
  let length = tokenByteLengths[token];
  if (length === 0) {
    const value = bytePairRanks[token];
    if (value === undefined) throw new Error(`token ${token} is not an o200k_base text token`);
    length = typeof value === 'string' ? utf8Length(value) : value.length;
    tokenByteLengths[token] = length;
  }
  return length;
}

/**
 * Calls `onPiece` with each piece of `segment` and how many of `tokens` (its encoding) it holds,
 * in order, until `onPiece` returns false; returns false then, true when every piece was given.
 * Joined, the pieces are the segment. A lone surrogate counts as the 3 bytes of U+FFFD, which is
 * how the tokenizer's TextEncoder encodes it.
 */
export function forEachTokenPiece(segment: string, tokens: readonly number[], onPiece: (piece: string, tokens: number) => boolean): boolean {
  let unit = 0;
  let textBytes = 0;
  let tokenBytes = 0;
  let pieceStart = 0;
  let pieceTokens = 0;
  for (const token of tokens) {
    tokenBytes += byteLengthOf(token);
    pieceTokens += 1;
    while (textBytes < tokenBytes && unit < segment.length) {
      const code = segment.charCodeAt(unit);
      if (code < 0x80) {
        textBytes += 1;
        unit += 1;
      } else if (code < 0x800) {
        textBytes += 2;
        unit += 1;
      } else if (code >= 0xd800 && code <= 0xdbff && unit + 1 < segment.length && isLowSurrogate(segment.charCodeAt(unit + 1))) {
        textBytes += 4;
        unit += 2;
      } else {
        textBytes += 3;
        unit += 1;
      }
    }
    if (textBytes === tokenBytes) {
      if (!onPiece(segment.slice(pieceStart, unit), pieceTokens)) return false;
      pieceStart = unit;
      pieceTokens = 0;
    }
  }
  // Never reached when the tokens encode the segment; kept so that the pieces always join to it.
  if (pieceStart < segment.length || pieceTokens > 0) return onPiece(segment.slice(pieceStart), pieceTokens);
  return true;
}
