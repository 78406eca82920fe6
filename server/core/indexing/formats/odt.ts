// OpenDocument text (odt): content.xml read directly, a new section at every heading
// (text:h). Tracked deletions and note citations are skipped; note bodies are kept.
import { Sections, TRUNCATED_NOTE, Unreadable, tidy, type Read } from './common.ts'
import { attribute, xmlEvents } from './xml.ts'
import { entryText, unzip } from './zip.ts'

const SKIPPED = new Set(['text:tracked-changes', 'text:note-citation', 'office:annotation', 'text:sequence-decls', 'office:forms'])
const PARAGRAPHS = new Set(['text:p', 'text:h', 'table:table-row'])

export function readOdt(bytes: Uint8Array): Read {
  const entries = unzip(bytes, 'the document', (name) => name === 'content.xml' || name === 'mimetype')
  const xml = entryText(entries, 'content.xml')
  if (xml === undefined) throw new Unreadable('the file is not an OpenDocument file')
  const mimetype = entryText(entries, 'mimetype')?.trim()
  if (mimetype && !mimetype.startsWith('application/vnd.oasis.opendocument.text')) {
    throw new Unreadable('the file is not an OpenDocument text document')
  }
  const sections = new Sections()
  let heading: string | undefined
  let text = ''
  let headingText: string | null = null
  let skipDepth = 0
  let paragraphDepth = 0
  const flush = () => {
    const body = tidy(text)
    if (body) sections.add(heading === undefined ? { text: body } : { text: body, heading })
    text = ''
  }
  const append = (piece: string) => {
    text += piece
    if (headingText !== null) headingText += piece
  }
  for (const event of xmlEvents(xml)) {
    if (sections.full) break
    if (event.kind === 'open' && skipDepth > 0) {
      if (!event.selfClosing) skipDepth++
    } else if (event.kind === 'close' && skipDepth > 0) {
      skipDepth--
    } else if (skipDepth > 0) {
      continue
    } else if (event.kind === 'text') {
      // Text outside paragraphs is markup layout, and ODF collapses whitespace inside them.
      if (paragraphDepth > 0) append(event.text.replace(/\s+/g, ' '))
    } else if (event.kind === 'open') {
      if ((event.name === 'text:p' || event.name === 'text:h') && !event.selfClosing) paragraphDepth++
      if (SKIPPED.has(event.name)) {
        if (!event.selfClosing) skipDepth = 1
      } else if (event.name === 'text:h') {
        flush()
        headingText = ''
      } else if (event.name === 'text:s') {
        append(' '.repeat(Math.min(Number(attribute(event.attributes, 'text:c') ?? 1) || 1, 100)))
      } else if (event.name === 'text:tab') {
        append('\t')
      } else if (event.name === 'text:line-break') {
        append('\n')
      } else if (event.name === 'table:table-cell' && !event.selfClosing) {
        append('\t')
      }
      if (event.selfClosing && PARAGRAPHS.has(event.name)) text += '\n'
    } else {
      if (event.name === 'text:p' || event.name === 'text:h') paragraphDepth = Math.max(0, paragraphDepth - 1)
      if (event.name === 'text:h' && headingText !== null) {
        heading = headingText.replace(/\s+/g, ' ').trim() || undefined
        headingText = null
      }
      if (PARAGRAPHS.has(event.name)) text += '\n'
    }
  }
  flush()
  return sections.full ? { sections: sections.list, note: TRUNCATED_NOTE } : { sections: sections.list }
}
