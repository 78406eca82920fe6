// CSV with csv-parse: rows as tab-separated lines, one section. A file csv-parse
// rejects (an unclosed quote, a stray quote) fails with the line it stopped at.
import { parse } from 'csv-parse/sync'
import { MAX_CELLS, Unreadable, type Read } from './common.ts'
import { decodeText } from './text.ts'

export function readCsv(bytes: Uint8Array): Read {
  const text = decodeText(bytes)
  let rows: string[][]
  try {
    rows = parse(text, {
      bom: true, relax_column_count: true, skip_empty_lines: true,
      delimiter: sniffDelimiter(text), max_record_size: 1_000_000,
    }) as string[][]
  } catch (error) {
    const line = (error as { lines?: number }).lines
    throw new Unreadable(line ? `the CSV file could not be parsed (near line ${line})` : 'the CSV file could not be parsed')
  }
  const lines: string[] = []
  let cells = 0
  for (const row of rows) {
    cells += row.length
    if (cells > MAX_CELLS) break
    const line = row.map((cell) => cell.replace(/[\t\r\n]+/g, ' ').trim()).join('\t')
    if (line.trim()) lines.push(line)
  }
  const joined = lines.join('\n')
  const sections = joined ? [{ text: joined }] : []
  return cells > MAX_CELLS ? { sections, note: `only the first ${MAX_CELLS} cells were indexed` } : { sections }
}

// Spreadsheet exports in many locales use semicolons; the first line says which it is.
function sniffDelimiter(text: string): string {
  const first = text.slice(0, text.search(/\r?\n|$/))
  const counts = [',', ';', '\t'].map((delimiter) => [delimiter, first.split(delimiter).length - 1] as const)
  return counts.reduce((best, next) => (next[1] > best[1] ? next : best))[0]
}
