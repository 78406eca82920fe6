// Word (docx) with mammoth, read as HTML so that headings survive: each heading starts
// a section that carries it. Images are dropped rather than inlined as data URIs.
import mammoth from 'mammoth'
import { Sections, TRUNCATED_NOTE, Unreadable, tidy, type Read } from './common.ts'
import { xmlEvents } from './xml.ts'
import { unzip } from './zip.ts'

const BLOCKS = new Set(['p', 'li', 'tr', 'table', 'ul', 'ol', 'blockquote', 'pre', 'br', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6'])
const HEADING = /^h[1-6]$/

export async function readDocx(bytes: Uint8Array): Promise<Read> {
  const entries = unzip(bytes, 'the document', (name) => name === 'word/document.xml')
  if (!entries.has('word/document.xml')) throw new Unreadable('the file is not a Word document')
  let html: string
  try {
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) },
    )
    html = result.value
  } catch {
    throw new Unreadable('the Word document could not be read')
  }
  const sections = htmlSections(html)
  return sections.full ? { sections: sections.list, note: TRUNCATED_NOTE } : { sections: sections.list }
}

/** Sections of mammoth's HTML: a new one at every h1..h6, headed by it. */
export function htmlSections(html: string): Sections {
  const sections = new Sections()
  let heading: string | undefined
  let text = ''
  let headingText: string | null = null
  const flush = () => {
    const body = tidy(text)
    if (body) sections.add(heading === undefined ? { text: body } : { text: body, heading })
    text = ''
  }
  for (const event of xmlEvents(html)) {
    if (sections.full) break
    if (event.kind === 'text') {
      if (headingText !== null) headingText += event.text
      text += event.text
    } else if (event.kind === 'open') {
      if (HEADING.test(event.name)) {
        flush()
        headingText = ''
      } else if (event.name === 'td' || event.name === 'th') {
        text += '\t'
      } else if (event.name === 'br') {
        text += '\n'
      }
    } else {
      if (HEADING.test(event.name) && headingText !== null) {
        heading = headingText.replace(/\s+/g, ' ').trim() || undefined
        headingText = null
      }
      if (BLOCKS.has(event.name)) text += '\n'
    }
  }
  flush()
  return sections
}
