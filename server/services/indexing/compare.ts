// Comparing two extracted texts line by line with jsdiff: what b removed from a and
// added to it, and how much of both stayed the same.
import { diffLines, type Change } from 'diff'

export interface TextChange {
  type: 'added' | 'removed'
  text: string
  /** First line (1-based) in its own text: a's for removed, b's for added. */
  line: number
  lines: number
}

export interface Comparison {
  /** Characters of unchanged lines, counted in both texts, over the characters of both: 1 identical, 0 nothing shared. */
  similarity: number
  changes: TextChange[]
}

/** Past this the diff gives up and both texts count as wholly different. */
export const COMPARE_TIMEOUT_MS = 20_000

export async function compareTexts(a: string, b: string, timeoutMs = COMPARE_TIMEOUT_MS): Promise<Comparison> {
  if (a === b) return { similarity: 1, changes: [] }
  // The callback form diffs in slices, so a long comparison does not hold the event loop.
  const parts = await new Promise<Change[] | undefined>((resolve) => {
    diffLines(a, b, { stripTrailingCr: true, timeout: timeoutMs, callback: resolve })
  })
  const changes = parts ?? [
    { value: a, removed: true, added: false, count: lineCount(a) },
    { value: b, removed: false, added: true, count: lineCount(b) },
  ].filter((part) => part.value !== '')
  let lineA = 1
  let lineB = 1
  let common = 0
  const out: TextChange[] = []
  for (const part of changes) {
    if (part.added) {
      out.push({ type: 'added', text: trimNewline(part.value), line: lineB, lines: part.count })
      lineB += part.count
    } else if (part.removed) {
      out.push({ type: 'removed', text: trimNewline(part.value), line: lineA, lines: part.count })
      lineA += part.count
    } else {
      common += part.value.length
      lineA += part.count
      lineB += part.count
    }
  }
  const total = a.length + b.length
  const similarity = total === 0 ? 1 : Math.min(1, (2 * common) / total)
  return { similarity, changes: out }
}

const lineCount = (text: string) => Math.max(1, text.split('\n').length - (text.endsWith('\n') ? 1 : 0))
const trimNewline = (text: string) => text.replace(/\r?\n$/, '')
