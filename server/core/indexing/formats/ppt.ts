// Legacy PowerPoint (ppt): the "PowerPoint Document" stream's records, read through
// the persist directory (the file's own index of where each slide lives, following
// incremental saves) so that slides come out in presentation order, one section
// each. A file whose index is damaged falls back to its slide records in stream
// order, then to all of its text as one section.
import { MAX_DEPTH, MAX_PAGES, Sections, TRUNCATED_NOTE, Unreadable, throwIfAborted, tidy, type Read } from './common.ts'
import { isEncryptedPackage, openContainer, stream } from './ole.ts'

const DOCUMENT = 0x03e8
const SLIDE = 0x03ee
const SLIDE_PERSIST = 0x03f3
const SLIDE_LIST = 0x0ff0
const USER_EDIT = 0x0ff5
const PERSIST_DIRECTORY = 0x1772
const TEXT_HEADER = 0x0f9f
const TEXT_CHARS = 0x0fa0
const TEXT_BYTES = 0x0fa8
const CRYPT_SESSION = 0x2f14
// TextHeaderAtom text types that mark a title: Tx_TYPE_TITLE and Tx_TYPE_CENTERTITLE.
const TITLE_TYPES = new Set([0, 6])

interface PptRecord { type: number; instance: number; container: boolean; start: number; end: number }

function recordAt(data: Uint8Array, view: DataView, offset: number, limit = data.length): PptRecord | null {
  if (offset < 0 || offset + 8 > limit) return null
  const head = view.getUint16(offset, true)
  const length = view.getUint32(offset + 4, true)
  const start = offset + 8
  if (start + length > limit) return null
  return { type: view.getUint16(offset + 2, true), instance: head >> 4, container: (head & 0x0f) === 0x0f, start, end: start + length }
}

function* children(data: Uint8Array, view: DataView, parent: PptRecord): Generator<PptRecord> {
  let offset = parent.start
  while (offset + 8 <= parent.end) {
    const record = recordAt(data, view, offset, parent.end)
    if (!record) return
    yield record
    offset = record.end
  }
}

interface SlideText { texts: string[]; title?: string }

const latin1 = new TextDecoder('latin1')
const utf16 = new TextDecoder('utf-16le')

/** Takes one record's text into `into`; a title text header marks the next text as the title. */
function take(data: Uint8Array, view: DataView, record: PptRecord, into: SlideText, titleNext: { value: boolean }, depth: number): void {
  if (record.type === TEXT_HEADER && record.end - record.start >= 4) {
    titleNext.value = TITLE_TYPES.has(view.getUint32(record.start, true))
  } else if (record.type === TEXT_CHARS || record.type === TEXT_BYTES) {
    const raw = data.subarray(record.start, record.end)
    const text = (record.type === TEXT_CHARS ? utf16.decode(raw) : latin1.decode(raw)).replace(/[\r\v]/g, '\n')
    if (titleNext.value && into.title === undefined && text.trim()) into.title = text.replace(/\s+/g, ' ').trim()
    titleNext.value = false
    // A lone "*" is a field placeholder (slide number, date), not text.
    if (text.trim() !== '*') into.texts.push(text)
  } else if (record.container && depth < MAX_DEPTH) {
    for (const child of children(data, view, record)) take(data, view, child, into, titleNext, depth + 1)
  }
}

function collect(data: Uint8Array, view: DataView, parent: PptRecord, into: SlideText): void {
  const titleNext = { value: false }
  for (const record of children(data, view, parent)) take(data, view, record, into, titleNext, 0)
}

/** persistId → stream offset, walking the chain of user edits from the newest save back. */
function persistDirectory(data: Uint8Array, view: DataView, firstEdit: number): { offsets: Map<number, number>; document: number } | null {
  const offsets = new Map<number, number>()
  let document: number | undefined
  const seen = new Set<number>()
  for (let edit = firstEdit; ;) {
    if (seen.has(edit)) return null
    seen.add(edit)
    const atom = recordAt(data, view, edit)
    if (!atom || atom.type !== USER_EDIT || atom.end - atom.start < 20) return null
    document ??= view.getUint32(atom.start + 16, true)
    const directory = recordAt(data, view, view.getUint32(atom.start + 12, true))
    if (!directory || directory.type !== PERSIST_DIRECTORY) return null
    let at = directory.start
    while (at + 4 <= directory.end) {
      const entry = view.getUint32(at, true)
      const first = entry & 0xfffff
      const count = entry >>> 20
      at += 4
      for (let i = 0; i < count && at + 4 <= directory.end; i++, at += 4) {
        // An older save's entry never replaces a newer one.
        if (!offsets.has(first + i)) offsets.set(first + i, view.getUint32(at, true))
      }
    }
    edit = view.getUint32(atom.start + 8, true)
    if (edit === 0) break
  }
  return document === undefined ? null : { offsets, document }
}

function slidesByDirectory(data: Uint8Array, view: DataView, currentUser: Uint8Array | undefined): SlideText[] | null {
  if (!currentUser || currentUser.length < 20) return null
  const firstEdit = new DataView(currentUser.buffer, currentUser.byteOffset, currentUser.byteLength).getUint32(16, true)
  const directory = persistDirectory(data, view, firstEdit)
  if (!directory) return null
  const document = recordAt(data, view, directory.offsets.get(directory.document) ?? -1)
  if (!document || document.type !== DOCUMENT) return null
  const list = [...children(data, view, document)].find((record) => record.type === SLIDE_LIST && record.instance === 0)
  if (!list) return []
  const slides: { text: SlideText; record: PptRecord | null }[] = []
  const titleNext = { value: false }
  for (const record of children(data, view, list)) {
    if (record.type === SLIDE_PERSIST && record.end - record.start >= 4) {
      const slide = recordAt(data, view, directory.offsets.get(view.getUint32(record.start, true)) ?? -1)
      slides.push({ text: { texts: [] }, record: slide?.type === SLIDE ? slide : null })
      titleNext.value = false
    } else if (slides.length > 0) {
      // PowerPoint keeps placeholder text here, in the slide list, after the slide's persist atom.
      take(data, view, record, slides.at(-1)!.text, titleNext, 0)
    }
  }
  for (const slide of slides) if (slide.record) collect(data, view, slide.record, slide.text)
  return slides.map((slide) => slide.text)
}

function slidesInStreamOrder(data: Uint8Array, view: DataView): SlideText[] {
  const slides: SlideText[] = []
  for (const record of children(data, view, { type: 0, instance: 0, container: true, start: 0, end: data.length })) {
    if (record.type !== SLIDE) continue
    const slide: SlideText = { texts: [] }
    collect(data, view, record, slide)
    slides.push(slide)
  }
  return slides
}

export function readPpt(bytes: Uint8Array, signal: AbortSignal | undefined): Read {
  const container = openContainer(bytes, 'the presentation')
  if (isEncryptedPackage(container)) throw new Unreadable('the presentation is password-protected')
  const data = stream(container, 'PowerPoint Document')
  if (!data) throw new Unreadable('the file is not a PowerPoint presentation')
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  const whole: PptRecord = { type: 0, instance: 0, container: true, start: 0, end: data.length }
  if ([...children(data, view, whole)].some((record) => record.type === CRYPT_SESSION)) {
    throw new Unreadable('the presentation is password-protected')
  }
  throwIfAborted(signal)
  const indexed = slidesByDirectory(data, view, stream(container, 'Current User'))
  const slides = indexed && indexed.some((slide) => slide.texts.length > 0) ? indexed : slidesInStreamOrder(data, view)
  const sections = new Sections()
  if (slides.length === 0 && indexed === null) {
    // No readable index and no slide records: the text atoms wherever they are.
    const all: SlideText = { texts: [] }
    collect(data, view, whole, all)
    sections.add({ text: tidy(all.texts.join('\n')) })
  }
  const count = Math.min(slides.length, MAX_PAGES)
  for (let index = 0; index < count && !sections.full; index++) {
    const slide = slides[index]!
    const text = tidy(slide.texts.join('\n'))
    sections.add(slide.title ? { text, page: index + 1, heading: slide.title } : { text, page: index + 1 })
  }
  const note = sections.full ? TRUNCATED_NOTE
    : slides.length > MAX_PAGES ? `only the first ${MAX_PAGES} of ${slides.length} slides were indexed` : undefined
  return note ? { sections: sections.list, note } : { sections: sections.list }
}
