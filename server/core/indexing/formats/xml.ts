// A small, non-validating XML event reader for the text-bearing parts of office files
// (content.xml, slide XML, mammoth's HTML). It never expands DTD entities (no entity
// bombs) and stops quietly at a truncated tag, so a damaged part yields what it has.

export type XmlEvent =
  | { kind: 'open'; name: string; attributes: string; selfClosing: boolean }
  | { kind: 'close'; name: string }
  | { kind: 'text'; text: string }

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }

export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]+);/g, (whole, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10)
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd'
    }
    return NAMED[body] ?? whole
  })
}

export function* xmlEvents(xml: string): Generator<XmlEvent> {
  let at = 0
  while (at < xml.length) {
    const lt = xml.indexOf('<', at)
    if (lt < 0) {
      yield { kind: 'text', text: decodeEntities(xml.slice(at)) }
      return
    }
    if (lt > at) yield { kind: 'text', text: decodeEntities(xml.slice(at, lt)) }
    if (xml.startsWith('<!--', lt)) {
      at = skipPast(xml, lt, '-->')
    } else if (xml.startsWith('<![CDATA[', lt)) {
      const end = xml.indexOf(']]>', lt)
      if (end < 0) return
      yield { kind: 'text', text: xml.slice(lt + 9, end) }
      at = end + 3
    } else if (xml.startsWith('<?', lt)) {
      at = skipPast(xml, lt, '?>')
    } else if (xml.startsWith('<!', lt)) {
      // A DOCTYPE, possibly with an internal subset in brackets; its entities are ignored.
      const bracket = xml.indexOf('[', lt)
      const close = xml.indexOf('>', lt)
      at = bracket >= 0 && close >= 0 && bracket < close ? skipPast(xml, lt, ']>') : skipPast(xml, lt, '>')
    } else {
      const end = tagEnd(xml, lt + 1)
      if (end < 0) return
      const inner = xml.slice(lt + 1, end)
      at = end + 1
      if (inner[0] === '/') {
        yield { kind: 'close', name: inner.slice(1).trim() }
        continue
      }
      const selfClosing = inner.endsWith('/')
      const body = selfClosing ? inner.slice(0, -1) : inner
      const space = body.search(/\s/)
      const name = space < 0 ? body : body.slice(0, space)
      yield { kind: 'open', name, attributes: space < 0 ? '' : body.slice(space), selfClosing }
    }
  }
}

function skipPast(xml: string, from: number, marker: string): number {
  const end = xml.indexOf(marker, from)
  return end < 0 ? xml.length : end + marker.length
}

// The '>' closing a tag, stepping over quoted attribute values that may contain one.
function tagEnd(xml: string, from: number): number {
  let quote = ''
  for (let i = from; i < xml.length; i++) {
    const c = xml[i]
    if (quote) {
      if (c === quote) quote = ''
    } else if (c === '"' || c === "'") {
      quote = c
    } else if (c === '>') {
      return i
    }
  }
  return -1
}

export function attribute(attributes: string, name: string): string | undefined {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const match = new RegExp(`(?:^|\\s)${escaped}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`).exec(attributes)
  return match ? decodeEntities(match[1] ?? match[2] ?? '') : undefined
}
