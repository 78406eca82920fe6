// Spreadsheets (xlsx, xls) with SheetJS (@e965/xlsx, the maintained republish): one
// section per sheet, headed by its name, rows as tab-separated lines of the cells'
// displayed text. Rows per sheet, sheets and cells are capped.
import { MAX_CELLS, MAX_SHEETS, Sections, TRUNCATED_NOTE, Unreadable, throwIfAborted, type Read } from './common.ts'
import { unzip } from './zip.ts'

type SheetJs = typeof import('@e965/xlsx')

export const MAX_ROWS_PER_SHEET = 200_000

let loaded: Promise<SheetJs> | undefined

function load(): Promise<SheetJs> {
  loaded ??= (async () => {
    const xlsx = await import('@e965/xlsx')
    // Code pages for older xls files whose strings are not Unicode.
    const cptable = await import('@e965/xlsx/dist/cpexcel.full.mjs')
    xlsx.set_cptable(cptable)
    return xlsx
  })()
  return loaded
}

export async function readWorkbook(bytes: Uint8Array, zipped: boolean, signal: AbortSignal | undefined): Promise<Read> {
  if (zipped) unzip(bytes, 'the workbook')
  const xlsx = await load()
  let book: import('@e965/xlsx').WorkBook
  try {
    book = xlsx.read(bytes, {
      type: 'array', dense: true, sheetRows: MAX_ROWS_PER_SHEET, cellText: true, cellDates: false,
      cellFormula: false, cellHTML: false, cellNF: false, cellStyles: false, sheetStubs: false,
      bookVBA: false, bookDeps: false, bookFiles: false, WTF: false,
    })
  } catch (error) {
    if (/password|encrypt/i.test(String((error as Error)?.message))) throw new Unreadable('the workbook is password-protected')
    throw new Unreadable('the workbook could not be read')
  }
  const sections = new Sections()
  const notes: string[] = []
  let cells = 0
  const names = book.SheetNames.slice(0, MAX_SHEETS)
  if (book.SheetNames.length > MAX_SHEETS) notes.push(`only the first ${MAX_SHEETS} of ${book.SheetNames.length} sheets were indexed`)
  for (const name of names) {
    throwIfAborted(signal)
    const sheet = book.Sheets[name]
    const rows = (sheet?.['!data'] ?? []) as ({ w?: string; v?: unknown }[] | undefined)[]
    const lines: string[] = []
    for (const row of rows) {
      if (cells >= MAX_CELLS) break
      if (!row) continue
      // Object.keys skips the holes of a sparse row, so a lone cell at column XFD costs one step.
      const values: string[] = []
      for (const key of Object.keys(row)) {
        const column = Number(key)
        const cell = row[column]
        if (!cell || !Number.isInteger(column)) continue
        const text = cell.w ?? (cell.v === undefined || cell.v === null ? '' : String(cell.v))
        if (text === '') continue
        values[column] = text.replace(/[\t\r\n]+/g, ' ')
        if (++cells >= MAX_CELLS) break
      }
      if (values.length > 0) lines.push(Array.from(values, (value) => value ?? '').join('\t'))
    }
    const full = sheet?.['!fullref'] && sheet['!ref'] ? xlsx.utils.decode_range(sheet['!fullref']).e.r > xlsx.utils.decode_range(sheet['!ref']).e.r : false
    if (full) notes.push(`only the first ${MAX_ROWS_PER_SHEET} rows of sheet ${name} were indexed`)
    sections.add({ text: lines.join('\n'), heading: name })
    if (sections.full || cells >= MAX_CELLS) break
  }
  if (cells >= MAX_CELLS) notes.push(`only the first ${MAX_CELLS} cells were indexed`)
  if (sections.full) notes.push(TRUNCATED_NOTE)
  return notes.length > 0 ? { sections: sections.list, note: notes.join('; ') } : { sections: sections.list }
}
