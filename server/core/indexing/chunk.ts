// Splitting extracted sections into the chunks that are embedded and searched. A chunk
// never spans two sections, so its page and heading are exact; within a section the
// cut falls at a paragraph break, else a sentence end, else a word boundary, in the
// second half of the window (so chunks are not tiny), and consecutive chunks overlap
// by up to overlapChars starting at a word boundary, so a sentence cut in two is
// still found whole in one of them. Lengths are in UTF-16 code units, and a cut never
// separates a surrogate pair.
import type { Section } from './extract.ts'

export interface Chunk { ordinal: number; content: string; page: number | null; heading: string | null }

export const CHUNK_CHARS = 1200
export const OVERLAP_CHARS = 200

export function chunkSections(sections: Section[], options: { chunkChars?: number; overlapChars?: number } = {}): Chunk[] {
  const size = options.chunkChars ?? CHUNK_CHARS
  if (!Number.isInteger(size) || size < 2) throw new RangeError('chunkChars must be an integer of at least 2')
  // An overlap under half a chunk guarantees every step moves forward.
  const overlap = Math.max(0, Math.min(Math.floor(options.overlapChars ?? OVERLAP_CHARS), Math.ceil(size / 2) - 1))
  const chunks: Chunk[] = []
  for (const section of sections) {
    for (const content of splitText(section.text, size, overlap)) {
      chunks.push({ ordinal: chunks.length, content, page: section.page ?? null, heading: section.heading ?? null })
    }
  }
  return chunks
}

const PARAGRAPH = /\n[ \t]*\n/g
// A sentence end followed by whitespace, or a CJK full stop, which needs none.
const SENTENCE = /[.!?…]["'”’)\]]*(?=\s)|[。！？]/g
const SPACE = /\s/

export function* splitText(text: string, size: number, overlap: number): Generator<string> {
  let start = skipSpace(text, 0)
  while (start < text.length) {
    if (text.length - start <= size) {
      const piece = text.slice(start).trim()
      if (piece) yield piece
      return
    }
    const end = start + size
    const { cut, hard } = breakPoint(text, start + Math.ceil(size / 2), end)
    const piece = text.slice(start, cut).trim()
    if (piece) yield piece
    start = skipSpace(text, overlapStart(text, cut, overlap, hard))
  }
}

/** Where to end a chunk that may reach `end`: the best boundary at or after `earliest`. */
function breakPoint(text: string, earliest: number, end: number): { cut: number; hard: boolean } {
  // Only the window is searched (a little before it for a match's start, and one
  // character past it so that a boundary right at `end` is seen), so long text costs
  // linear time.
  const offset = Math.max(0, earliest - 8)
  const window = text.slice(offset, end + 1)
  const paragraph = lastMatch(PARAGRAPH, window, earliest - offset, end - offset, false)
  if (paragraph >= 0) return { cut: offset + paragraph, hard: false }
  const sentence = lastMatch(SENTENCE, window, earliest - offset, end - offset, true)
  if (sentence >= 0) return { cut: offset + sentence, hard: false }
  for (let i = end; i >= earliest; i--) {
    if (SPACE.test(text[i] ?? '')) return { cut: i, hard: false }
  }
  return { cut: isPairSplit(text, end) ? end - 1 : end, hard: true }
}

// The last match of pattern whose start (or end, with atEnd) lies in [from, to].
function lastMatch(pattern: RegExp, text: string, from: number, to: number, atEnd: boolean): number {
  let found = -1
  pattern.lastIndex = 0
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    const at = atEnd ? match.index + match[0].length : match.index
    if (at > to) break
    if (at >= from) found = at
  }
  return found
}

/** Where the next chunk starts: up to `overlap` before the cut, after a word boundary. */
function overlapStart(text: string, cut: number, overlap: number, hard: boolean): number {
  if (overlap === 0) return cut
  let target = cut - overlap
  for (let i = target; i < cut; i++) {
    if (SPACE.test(text[i]!)) return i + 1
  }
  // No boundary in reach: a word cut mid-way (a hard cut) overlaps mid-word too,
  // anything else starts at the cut rather than inside a word.
  if (!hard) return cut
  if (isPairSplit(text, target)) target++
  return target
}

function isPairSplit(text: string, at: number): boolean {
  const before = text.charCodeAt(at - 1)
  const after = text.charCodeAt(at)
  return before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && SPACE.test(text[at]!)) at++
  return at
}
