// PDF with pdf.js (the legacy build, the one meant for Node): one section per page.
// Its worker runs in this thread (no worker file is fetched), and fonts are neither
// loaded nor fetched because only the text layer is read.
import { createRequire } from 'node:module'
import path from 'node:path'
import { MAX_PAGES, Sections, TRUNCATED_NOTE, Unreadable, throwIfAborted, tidy, type Read } from './common.ts'

type PdfJs = typeof import('pdfjs-dist/legacy/build/pdf.mjs')

let loaded: Promise<{ pdfjs: PdfJs; cMapUrl: string }> | undefined

function load() {
  loaded ??= (async () => {
    // Registering the worker's handler on globalThis makes pdf.js run it in-thread.
    // (The worker module ships without type declarations, hence the specifier variable.)
    const workerModule: string = 'pdfjs-dist/legacy/build/pdf.worker.mjs'
    const worker: unknown = await import(workerModule)
    ;(globalThis as { pdfjsWorker?: unknown }).pdfjsWorker ??= worker
    const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs')
    // Predefined CMaps ship with the package; CJK text cannot be decoded without them.
    const cMapUrl = path.join(path.dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'cmaps') + path.sep
    return { pdfjs, cMapUrl }
  })()
  return loaded
}

export async function readPdf(bytes: Uint8Array, signal: AbortSignal | undefined): Promise<Read> {
  const { pdfjs, cMapUrl } = await load()
  const task = pdfjs.getDocument({
    // A copy: pdf.js detaches the buffer it is given, and refuses a Buffer outright.
    data: new Uint8Array(bytes),
    cMapUrl,
    cMapPacked: true,
    useWorkerFetch: false,
    disableFontFace: true,
    useSystemFonts: false,
    useWasm: false,
    enableXfa: false,
    stopAtErrors: false,
    verbosity: pdfjs.VerbosityLevel.ERRORS,
  })
  const stop = () => void task.destroy()
  signal?.addEventListener('abort', stop, { once: true })
  try {
    let document
    try {
      document = await task.promise
    } catch (error) {
      throwIfAborted(signal)
      const name = (error as { name?: string }).name
      if (name === 'PasswordException') throw new Unreadable('the PDF is password-protected')
      if (name === 'InvalidPDFException') throw new Unreadable('the file is not a valid PDF')
      throw new Unreadable('the PDF could not be read')
    }
    const sections = new Sections()
    const pages = Math.min(document.numPages, MAX_PAGES)
    for (let number = 1; number <= pages && !sections.full; number++) {
      throwIfAborted(signal)
      let text = ''
      try {
        const page = await document.getPage(number)
        const content = await page.getTextContent()
        for (const item of content.items) {
          if ('str' in item) text += item.str + (item.hasEOL ? '\n' : '')
        }
        page.cleanup()
      } catch {
        // One damaged page does not lose the rest of the document.
        throwIfAborted(signal)
        continue
      }
      sections.add({ text: tidy(text), page: number })
    }
    if (sections.list.length === 0) {
      return { sections: [], note: 'the PDF has no text layer (scanned pages are not OCRed)' }
    }
    const note = sections.full ? TRUNCATED_NOTE
      : document.numPages > MAX_PAGES ? `only the first ${MAX_PAGES} of ${document.numPages} pages were indexed` : undefined
    return note ? { sections: sections.list, note } : { sections: sections.list }
  } finally {
    signal?.removeEventListener('abort', stop)
    await task.destroy().catch(() => {})
  }
}
