// Text extraction for the indexing pipeline: a file's bytes and name in, its text as
// sections (with page numbers and headings where the format has them) out. The type
// comes from the name's extension, checked against the bytes where that is cheap.
//
// Bad input never throws: a damaged, truncated, encrypted or hostile file of any type
// resolves to {ok:false, reason} with a reason fit to show the user. Work is bounded
// by a time limit (and the caller's signal) and by caps on pages, sheets, cells and
// characters, past which the text is cut and a note says so.
import { CFB_SIGNATURE, Unreadable, ZIP_SIGNATURE, startsWith, type Read } from './formats/common.ts'

export interface Section { text: string; page?: number; heading?: string }

export type Extraction =
  | { ok: true; sections: Section[]; note?: string }
  | { ok: false; reason: string }

export const EXTRACTABLE_EXTENSIONS: readonly string[] = Object.freeze([
  'pdf', 'doc', 'docx', 'odt', 'ppt', 'pptx', 'xls', 'xlsx', 'csv',
  'txt', 'md', 'json', 'yaml', 'yml', 'py', 'jpg', 'jpeg', 'png', 'gif', 'webp', 'ac2',
])

/** How long one file may take, whatever the caller's signal allows. */
export const EXTRACT_TIME_LIMIT_MS = 120_000

const TEXT_TYPES = new Set(['txt', 'md', 'json', 'yaml', 'yml', 'py', 'ac2'])
const IMAGE_TYPES = new Set(['jpg', 'jpeg', 'png', 'gif', 'webp'])

export function extensionOf(fileName: string): string {
  const base = fileName.slice(fileName.lastIndexOf('/') + 1)
  const dot = base.lastIndexOf('.')
  return dot > 0 || (dot === 0 && base.length > 1) ? base.slice(dot + 1).toLowerCase() : ''
}

export async function extractText(
  bytes: Uint8Array,
  fileName: string,
  options: { signal?: AbortSignal; ocr?: 'auto' | 'off' } = {},
): Promise<Extraction> {
  const extension = extensionOf(fileName)
  if (!EXTRACTABLE_EXTENSIONS.includes(extension)) {
    return { ok: false, reason: extension ? `files of type .${extension} are not indexed` : 'files without an extension are not indexed' }
  }
  if (bytes.length === 0) return { ok: true, sections: [], note: 'the file is empty' }
  const timeout = AbortSignal.timeout(EXTRACT_TIME_LIMIT_MS)
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout
  let stop: (() => void) | undefined
  // Readers check the signal between pages; this answers even while one is mid-page.
  const stopped = new Promise<never>((_, reject) => {
    stop = () => reject(signal.reason)
    signal.addEventListener('abort', stop, { once: true })
  })
  stopped.catch(() => {})
  try {
    if (signal.aborted) throw signal.reason
    const read = await Promise.race([readAs(extension, bytes, { ...options, signal }), stopped])
    const sections = read.sections
      .map((section) => clean(section))
      .filter((section) => section.text.trim() !== '')
    return read.note ? { ok: true, sections, note: read.note } : { ok: true, sections }
  } catch (error) {
    if (error instanceof Unreadable) return { ok: false, reason: error.reason }
    if (signal.aborted) {
      return timeout.aborted && !options.signal?.aborted
        ? { ok: false, reason: `reading the file took longer than ${EXTRACT_TIME_LIMIT_MS / 1000} seconds` }
        : { ok: false, reason: 'reading the file was stopped' }
    }
    return { ok: false, reason: `the .${extension} file could not be read` }
  } finally {
    if (stop) signal.removeEventListener('abort', stop)
  }
}

async function readAs(extension: string, bytes: Uint8Array, options: { signal: AbortSignal; ocr?: 'auto' | 'off' }): Promise<Read> {
  const { signal } = options
  if (TEXT_TYPES.has(extension)) return (await import('./formats/text.ts')).readText(bytes, extension)
  if (IMAGE_TYPES.has(extension)) return (await import('./formats/image.ts')).readImage(bytes, extension, options)
  const zipped = startsWith(bytes, ZIP_SIGNATURE)
  const compound = startsWith(bytes, CFB_SIGNATURE)
  switch (extension) {
    case 'pdf':
      return (await import('./formats/pdf.ts')).readPdf(bytes, signal)
    case 'csv':
      return (await import('./formats/csv.ts')).readCsv(bytes)
    case 'odt':
      if (!zipped) throw new Unreadable('the file is not an OpenDocument file')
      return (await import('./formats/odt.ts')).readOdt(bytes)
    // A legacy name on an Office Open XML file, or the reverse, is common (a renamed
    // file); the container decides. An Office Open XML file in a compound container
    // is one saved with a password.
    case 'doc':
    case 'docx':
      if (zipped) return (await import('./formats/docx.ts')).readDocx(bytes)
      if (compound) {
        await refuseEncryptedPackage(bytes, 'the Word document')
        return (await import('./formats/doc.ts')).readDoc(bytes)
      }
      throw new Unreadable('the file is not a Word document')
    case 'ppt':
    case 'pptx':
      if (zipped) return (await import('./formats/pptx.ts')).readPptx(bytes, signal)
      if (compound) return (await import('./formats/ppt.ts')).readPpt(bytes, signal)
      throw new Unreadable('the file is not a PowerPoint presentation')
    case 'xls':
    case 'xlsx':
      if (compound) await refuseEncryptedPackage(bytes, 'the workbook')
      else if (!zipped && !(extension === 'xls' && legacySpreadsheet(bytes))) throw new Unreadable('the file is not an Excel workbook')
      return (await import('./formats/sheet.ts')).readWorkbook(bytes, zipped, signal)
  }
  throw new Unreadable(`files of type .${extension} are not indexed`)
}

async function refuseEncryptedPackage(bytes: Uint8Array, what: string): Promise<void> {
  const ole = await import('./formats/ole.ts')
  if (ole.isEncryptedPackage(ole.openContainer(bytes, what))) throw new Unreadable(`${what} is password-protected`)
}

// Files Excel itself opens as .xls besides the compound container: a bare BIFF
// stream (Excel 2 to 4) and SpreadsheetML or HTML tables saved with that name.
function legacySpreadsheet(bytes: Uint8Array): boolean {
  if (bytes.length >= 2 && bytes[0] === 0x09 && [0x00, 0x02, 0x04, 0x08].includes(bytes[1]!)) return true
  let at = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
  while (at < bytes.length && at < 1024 && (bytes[at] === 0x20 || bytes[at] === 0x09 || bytes[at] === 0x0a || bytes[at] === 0x0d)) at++
  return bytes[at] === 0x3c
}

/** NUL is dropped (PostgreSQL text cannot hold it) and a lone surrogate becomes U+FFFD. */
function clean(section: Section): Section {
  const out: Section = { text: scrub(section.text) }
  if (section.page !== undefined) out.page = section.page
  if (section.heading !== undefined) {
    const heading = scrub(section.heading).trim()
    if (heading) out.heading = heading
  }
  return out
}

function scrub(text: string): string {
  return text.replace(/\u0000/g, '').toWellFormed()
}
