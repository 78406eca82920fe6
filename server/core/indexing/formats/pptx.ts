// PowerPoint (pptx): the slide parts in presentation order (presentation.xml's slide
// list through its relationships, else by part number), one section per slide with
// page = slide number and heading = the text of its title placeholder.
import { MAX_PAGES, Sections, TRUNCATED_NOTE, Unreadable, throwIfAborted, tidy, type Read } from './common.ts'
import { attribute, xmlEvents } from './xml.ts'
import { entryText, unzip } from './zip.ts'

const SLIDE = /^ppt\/slides\/slide(\d+)\.xml$/

export function readPptx(bytes: Uint8Array, signal: AbortSignal | undefined): Read {
  const entries = unzip(bytes, 'the presentation', (name) =>
    SLIDE.test(name) || name === 'ppt/presentation.xml' || name === 'ppt/_rels/presentation.xml.rels')
  if (!entries.has('ppt/presentation.xml')) throw new Unreadable('the file is not a PowerPoint presentation')
  const order = slideOrder(entries)
  const sections = new Sections()
  const count = Math.min(order.length, MAX_PAGES)
  for (let index = 0; index < count && !sections.full; index++) {
    throwIfAborted(signal)
    const xml = entryText(entries, order[index]!)
    if (xml === undefined) continue
    const slide = slideText(xml)
    sections.add(slide.title ? { text: slide.text, page: index + 1, heading: slide.title } : { text: slide.text, page: index + 1 })
  }
  const note = sections.full ? TRUNCATED_NOTE
    : order.length > MAX_PAGES ? `only the first ${MAX_PAGES} of ${order.length} slides were indexed` : undefined
  return note ? { sections: sections.list, note } : { sections: sections.list }
}

function slideOrder(entries: Map<string, Uint8Array>): string[] {
  const byNumber = [...entries.keys()]
    .filter((name) => SLIDE.test(name))
    .sort((a, b) => Number(SLIDE.exec(a)![1]) - Number(SLIDE.exec(b)![1]))
  const targets = new Map<string, string>()
  for (const event of xmlEvents(entryText(entries, 'ppt/_rels/presentation.xml.rels') ?? '')) {
    if (event.kind !== 'open' || !event.name.endsWith('Relationship')) continue
    const id = attribute(event.attributes, 'Id')
    const target = attribute(event.attributes, 'Target')
    if (id && target) targets.set(id, target.startsWith('/') ? target.slice(1) : `ppt/${target}`)
  }
  const ordered: string[] = []
  for (const event of xmlEvents(entryText(entries, 'ppt/presentation.xml') ?? '')) {
    if (event.kind !== 'open' || event.name !== 'p:sldId') continue
    const target = targets.get(attribute(event.attributes, 'r:id') ?? '')
    if (target && entries.has(target) && !ordered.includes(target)) ordered.push(target)
  }
  return ordered.length > 0 ? ordered : byNumber
}

/** A slide's paragraphs (a:p of every shape and table), and its title placeholder's text. */
export function slideText(xml: string): { text: string; title?: string } {
  let text = ''
  let title: string | undefined
  let shapeText = ''
  let shapeIsTitle = false
  let shapeDepth = 0
  let inRun = false
  for (const event of xmlEvents(xml)) {
    if (event.kind === 'open') {
      if (event.name === 'p:sp') {
        if (shapeDepth++ === 0) {
          shapeText = ''
          shapeIsTitle = false
        }
      } else if (event.name === 'p:ph') {
        const type = attribute(event.attributes, 'type')
        if (type === 'title' || type === 'ctrTitle') shapeIsTitle = true
      } else if (event.name === 'a:t' && !event.selfClosing) {
        inRun = true
      } else if (event.name === 'a:br') {
        text += '\n'
        shapeText += ' '
      } else if (event.name === 'a:tc' && !event.selfClosing) {
        text += '\t'
      }
    } else if (event.kind === 'close') {
      if (event.name === 'a:t') {
        inRun = false
      } else if (event.name === 'a:p') {
        text += '\n'
        shapeText += ' '
      } else if (event.name === 'a:tr') {
        text += '\n'
      } else if (event.name === 'p:sp' && shapeDepth > 0 && --shapeDepth === 0) {
        if (shapeIsTitle && title === undefined) title = shapeText.replace(/\s+/g, ' ').trim() || undefined
      }
    } else if (inRun) {
      text += event.text
      shapeText += event.text
    }
  }
  return title ? { text: tidy(text), title } : { text: tidy(text) }
}
