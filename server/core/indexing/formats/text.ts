// Plain-text types (txt, md, json, yaml, yml, py, ac2): UTF-8 (or UTF-16 with a byte
// order mark, as Windows editors save it), checked strictly so a binary file under a
// text name fails instead of filling the index with replacement characters.
import { parse as parseYaml } from 'yaml'
import { Sections, TRUNCATED_NOTE, Unreadable, type Read } from './common.ts'
import type { Section } from '../extract.ts'

export function decodeText(bytes: Uint8Array, notText = 'the file is not UTF-8 text'): string {
  let text: string
  try {
    if (bytes[0] === 0xff && bytes[1] === 0xfe) text = new TextDecoder('utf-16le', { fatal: true }).decode(bytes)
    else if (bytes[0] === 0xfe && bytes[1] === 0xff) text = new TextDecoder('utf-16be', { fatal: true }).decode(bytes)
    else text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new Unreadable(notText)
  }
  // Valid UTF-8 can still be binary; text files do not hold NUL.
  if (text.includes('\u0000')) throw new Unreadable(notText)
  return text
}

export function readText(bytes: Uint8Array, extension: string): Read {
  const text = decodeText(bytes, extension === 'ac2' ? 'the ac2 file is not text' : undefined)
  // Past the text cap the rest is dropped, as for every other type.
  const capped = (sections: Section[]): Read => {
    const kept = new Sections()
    for (const section of sections) kept.add(section)
    return kept.full ? { sections: kept.list, note: TRUNCATED_NOTE } : { sections: kept.list }
  }
  switch (extension) {
    case 'md':
      return capped(markdownSections(text))
    case 'json':
      try {
        JSON.parse(text)
      } catch {
        throw new Unreadable('the file is not valid JSON')
      }
      break
    case 'yaml':
    case 'yml':
      try {
        // Aliases are capped so a "billion laughs" document fails instead of expanding.
        parseYaml(text, { maxAliasCount: 1000, uniqueKeys: false })
      } catch {
        throw new Unreadable('the file is not valid YAML')
      }
      break
  }
  return capped([{ text }])
}

const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/
const FENCE = /^ {0,3}(`{3,}|~{3,})/

/** One section per ATX heading (the heading line stays in its text); fenced code is not split. */
export function markdownSections(text: string): Section[] {
  const sections: Section[] = []
  let heading: string | undefined
  let lines: string[] = []
  let fence = ''
  const flush = () => {
    const body = lines.join('\n')
    if (body.trim() !== '') sections.push(heading === undefined ? { text: body } : { text: body, heading })
    lines = []
  }
  for (const line of text.split(/\r\n?|\n/)) {
    const fenceMatch = FENCE.exec(line)
    if (fence) {
      if (fenceMatch && fenceMatch[1]![0] === fence[0] && fenceMatch[1]!.length >= fence.length) fence = ''
    } else if (fenceMatch) {
      fence = fenceMatch[1]!
    } else {
      const match = ATX.exec(line)
      if (match) {
        flush()
        heading = (match[2] ?? '').trim() || undefined
      }
    }
    lines.push(line)
  }
  flush()
  return sections
}
