// What every format reader shares: the refusal it throws for a file it cannot read
// (extract.ts turns it into {ok:false, reason}), the bounds a hostile file runs into,
// and a text collector that stops at the bound instead of growing without end.
import type { Section } from '../extract.ts'

/** A file this reader cannot read, with a reason fit to show the user. */
export class Unreadable extends Error {
  constructor(readonly reason: string) {
    super(reason)
    this.name = 'Unreadable'
  }
}

/** What a reader returns: the sections, and a note when it stopped at a bound. */
export interface Read { sections: Section[]; note?: string }

// Generous for real documents, small enough that one file cannot take a worker's
// memory: 10 million characters is about 8,000 chunks.
export const MAX_TEXT_CHARS = 10_000_000
export const MAX_PAGES = 2_000
export const MAX_SHEETS = 200
export const MAX_CELLS = 2_000_000
// Declared uncompressed size of the zip entries a reader inflates (zip bombs).
export const MAX_UNZIPPED_BYTES = 512 * 1024 * 1024
// Nesting of binary records (ppt) and of markup; real files stay far below.
export const MAX_DEPTH = 64

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted')
}

/**
 * Collects sections up to MAX_TEXT_CHARS; past it, `full` is true and further text is
 * dropped, so a reader can stop early and say the file was cut.
 */
export class Sections {
  readonly list: Section[] = []
  private chars = 0

  get full(): boolean {
    return this.chars >= MAX_TEXT_CHARS
  }

  add(section: Section): void {
    if (this.full || section.text.trim() === '') return
    const room = MAX_TEXT_CHARS - this.chars
    const text = section.text.length > room ? section.text.slice(0, room) : section.text
    this.chars += text.length
    this.list.push({ ...section, text })
  }
}

export const TRUNCATED_NOTE = `only the first ${MAX_TEXT_CHARS.toLocaleString('en-US')} characters were indexed`

/** Collapses runs of blank lines and trailing spaces that layout-driven formats leave. */
export function tidy(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(/[ \t]+\n/g, '\n').replace(/\n{3,}/g, '\n\n').trim()
}

export function startsWith(bytes: Uint8Array, signature: readonly number[]): boolean {
  return bytes.length >= signature.length && signature.every((byte, index) => bytes[index] === byte)
}

export const ZIP_SIGNATURE = [0x50, 0x4b, 0x03, 0x04] as const
export const CFB_SIGNATURE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1] as const
