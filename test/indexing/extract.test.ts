// Text extraction per file type, each from a real file: made here with a library that
// writes the format, or shipped in test/fixtures/indexing (doc, ppt, png; see its
// README for how they were made). And the refusals: every bad input resolves to
// {ok:false, reason}, never a throw.
import t, { type Test } from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import CFB from 'cfb'
import { Document, HeadingLevel, Packer, Paragraph, TextRun } from 'docx'
import * as XLSX from '@e965/xlsx'
import { strToU8, zipSync } from 'fflate'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import pptxgen from 'pptxgenjs'
import { EXTRACTABLE_EXTENSIONS, extractText, type Extraction, type Section } from '../../server/core/indexing/extract.ts'

// pptxgenjs's types describe a CommonJS default export, while Node loads its ES build.
const PptxGenJS = ((pptxgen as unknown as { default?: unknown }).default ?? pptxgen) as typeof pptxgen.default

const fixture = (name: string) => new Uint8Array(readFileSync(new URL(`../fixtures/indexing/${name}`, import.meta.url)))
const utf8 = (text: string) => new TextEncoder().encode(text)

function sectionsOf(t: Test, extraction: Extraction): Section[] {
  if (!extraction.ok) {
    t.fail(`extraction failed: ${extraction.reason}`)
    return []
  }
  return extraction.sections
}

function reasonOf(t: Test, extraction: Extraction): string {
  t.equal(extraction.ok, false, 'the extraction fails')
  const reason = extraction.ok ? '' : extraction.reason
  t.match(reason, /\S/, 'with a reason')
  t.notMatch(reason, /\n\s+at |Error:|Exception/, 'which is not a stack or a library error')
  return reason
}

const allText = (sections: Section[]) => sections.map((section) => section.text).join('\n')

async function pdfBytes(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create()
  const font = await pdf.embedFont(StandardFonts.Helvetica)
  for (const line of ['The lighthouse keeper counted ships.', 'Marmalade sales rose in spring.']) {
    pdf.addPage([400, 200]).drawText(line, { x: 20, y: 100, size: 14, font })
  }
  return pdf.save()
}

async function docxBytes(): Promise<Uint8Array> {
  const document = new Document({
    sections: [{
      children: [
        new Paragraph({ children: [new TextRun('A preface before any heading.')] }),
        new Paragraph({ text: 'Harbour Report', heading: HeadingLevel.HEADING_1 }),
        new Paragraph({ children: [new TextRun('Seventeen ships were counted at dawn.')] }),
        new Paragraph({ text: 'Marmalade Outlook', heading: HeadingLevel.HEADING_2 }),
        new Paragraph({ children: [new TextRun('Sales rose in the northern province.')] }),
      ],
    }],
  })
  return new Uint8Array(await Packer.toBuffer(document))
}

function workbookBytes(bookType: 'xlsx' | 'biff8'): Uint8Array {
  const book = XLSX.utils.book_new()
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([['Port', 'Ships'], ['Harbourtown', 17]]), 'Arrivals')
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([['Product', 'Sales'], ['Marmalade', 42]]), 'Pantry')
  return new Uint8Array(XLSX.write(book, { type: 'buffer', bookType }) as Buffer)
}

async function pptxBytes(): Promise<Uint8Array> {
  const deck = new PptxGenJS()
  deck.defineSlideMaster({ title: 'M', objects: [{ placeholder: { options: { name: 'title', type: 'title', x: 0.5, y: 0.3, w: 9, h: 1 }, text: '' } }] })
  const slides: [string, string][] = [['Harbour Lighthouse', 'Seventeen ships were counted at dawn.'], ['Marmalade Outlook', 'Sales rose in the northern province.']]
  for (const [title, body] of slides) {
    const slide = deck.addSlide({ masterName: 'M' })
    slide.addText(title, { placeholder: 'title' })
    slide.addText(body, { x: 1, y: 2, w: 8, h: 1 })
  }
  return new Uint8Array(await deck.write({ outputType: 'uint8array' }) as Uint8Array)
}

function odtBytes(): Uint8Array {
  const content = `<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3">
  <office:body>
    <office:text>
      <text:p>Opening words.</text:p>
      <text:h text:outline-level="1">Harbour &amp; Lighthouse</text:h>
      <text:p>Seventeen<text:s text:c="2"/>ships <text:span>were counted</text:span> at dawn.</text:p>
      <text:tracked-changes><text:changed-region><text:deletion><text:p>deleted words</text:p></text:deletion></text:changed-region></text:tracked-changes>
      <text:h text:outline-level="2">Marmalade Outlook</text:h>
      <text:p>Sales rose in the northern province.</text:p>
    </office:text>
  </office:body>
</office:document-content>`
  return zipSync({
    mimetype: [strToU8('application/vnd.oasis.opendocument.text'), { level: 0 }],
    'META-INF/manifest.xml': strToU8('<?xml version="1.0"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"/>'),
    'content.xml': strToU8(content),
  })
}

t.test('the extensions the contract names are extractable', async (t) => {
  t.same([...EXTRACTABLE_EXTENSIONS].sort(), ['ac2', 'csv', 'doc', 'docx', 'gif', 'jpeg', 'jpg', 'json', 'md', 'odt', 'pdf', 'png', 'ppt', 'pptx', 'py', 'txt', 'webp', 'xls', 'xlsx', 'yaml', 'yml'])
})

t.test('pdf: one section per page, numbered from 1', async (t) => {
  // A Buffer, as the pipeline passes: pdf.js refuses one, so it must be copied out.
  const sections = sectionsOf(t, await extractText(Buffer.from(await pdfBytes()), 'report.PDF'))
  t.same(sections.map((section) => section.page), [1, 2])
  t.match(sections[0]!.text, 'The lighthouse keeper counted ships.')
  t.match(sections[1]!.text, 'Marmalade sales rose in spring.')
})

t.test('pdf without text: completed, with a note', async (t) => {
  const pdf = await PDFDocument.create()
  pdf.addPage([100, 100])
  const extraction = await extractText(await pdf.save(), 'scan.pdf')
  t.same(extraction.ok && extraction.sections, [])
  t.match(extraction.ok && extraction.note, /no text layer/)
})

t.test('pdf with an open password: refused as password-protected', async (t) => {
  t.equal(reasonOf(t, await extractText(fixture('secret.pdf'), 'secret.pdf')), 'the PDF is password-protected')
})

t.test('docx: sections split at headings, each carrying its heading', async (t) => {
  const sections = sectionsOf(t, await extractText(await docxBytes(), 'report.docx'))
  t.same(sections.map((section) => section.heading), [undefined, 'Harbour Report', 'Marmalade Outlook'])
  t.match(sections[0]!.text, 'A preface before any heading.')
  t.match(sections[1]!.text, /Harbour Report\s+Seventeen ships were counted at dawn\./)
  t.match(sections[2]!.text, 'Sales rose in the northern province.')
  t.notMatch(sections[1]!.text, 'Sales rose', 'text stays under its own heading')
})

t.test('doc (legacy Word): the body text', async (t) => {
  const sections = sectionsOf(t, await extractText(fixture('report.doc'), 'report.doc'))
  const text = allText(sections)
  t.match(text, 'The harbour lighthouse keeper counted seventeen ships.')
  t.match(text, 'Marmalade sales rose in the northern province.')
})

t.test('odt: headings from text:h, spaces from text:s, tracked deletions skipped', async (t) => {
  const sections = sectionsOf(t, await extractText(odtBytes(), 'notes.odt'))
  t.same(sections.map((section) => section.heading), [undefined, 'Harbour & Lighthouse', 'Marmalade Outlook'])
  t.match(sections[0]!.text, 'Opening words.')
  t.match(sections[1]!.text, 'Seventeen  ships were counted at dawn.', 'text:c="2" is two spaces')
  t.notMatch(allText(sections), 'deleted words')
  t.match(sections[2]!.text, 'Sales rose in the northern province.')
})

t.test('pptx: one section per slide, page = slide number, heading = title', async (t) => {
  const sections = sectionsOf(t, await extractText(await pptxBytes(), 'deck.pptx'))
  t.same(sections.map((section) => [section.page, section.heading]), [[1, 'Harbour Lighthouse'], [2, 'Marmalade Outlook']])
  t.match(sections[0]!.text, 'Seventeen ships were counted at dawn.')
  t.match(sections[1]!.text, 'Sales rose in the northern province.')
})

t.test('ppt (legacy PowerPoint): one section per slide with its number', async (t) => {
  const sections = sectionsOf(t, await extractText(fixture('slides.ppt'), 'deck.ppt'))
  t.same(sections.map((section) => section.page), [1, 2])
  t.match(sections[0]!.text, /Harbour Lighthouse\s+Seventeen ships were counted at dawn\./)
  t.match(sections[1]!.text, /Marmalade Outlook\s+Sales rose in the northern province\./)
  t.notMatch(allText(sections), 'Click to edit', "the master slide's prompts are not slide text")
})

t.test('ppt: a title text header gives the heading; NUL and lone surrogates are scrubbed', async (t) => {
  // A hand-built PowerPoint stream without a persist directory: a slide container
  // holding a title (TextHeaderAtom type 0) and a body in UTF-16 and in bytes.
  const record = (type: number, body: Uint8Array, container = false) => {
    const out = new Uint8Array(8 + body.length)
    const view = new DataView(out.buffer)
    view.setUint16(0, container ? 0x000f : 0, true)
    view.setUint16(2, type, true)
    view.setUint32(4, body.length, true)
    out.set(body, 8)
    return out
  }
  const concat = (...parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
    let at = 0
    for (const part of parts) { out.set(part, at); at += part.length }
    return out
  }
  const u32 = (value: number) => new Uint8Array(new Uint32Array([value]).buffer)
  const utf16 = (text: string) => new Uint8Array(Uint16Array.from(text, (c) => c.charCodeAt(0)).buffer)
  const slide = record(0x03ee, concat(
    record(0x0f9f, u32(0)), record(0x0fa0, utf16('Tide Tables')),
    record(0x0f9f, u32(1)), record(0x0fa0, utf16('High\u0000 water \ud800 at noon')),
    record(0x0fa8, strToU8('Low water at six')),
  ), true)
  const container = CFB.utils.cfb_new()
  CFB.utils.cfb_add(container, '/PowerPoint Document', Buffer.from(slide))
  const bytes = new Uint8Array(CFB.write(container, { type: 'buffer' }) as Buffer)
  const sections = sectionsOf(t, await extractText(bytes, 'tides.ppt'))
  t.same(sections.map((section) => [section.page, section.heading]), [[1, 'Tide Tables']])
  t.match(sections[0]!.text, 'High water \ufffd at noon')
  t.match(sections[0]!.text, 'Low water at six')
  t.notOk(sections[0]!.text.includes('\u0000'), 'no NUL')
  t.equal(sections[0]!.text, sections[0]!.text.toWellFormed(), 'no lone surrogate')
})

t.test('xlsx and xls: one section per sheet, headed by its name', async (t) => {
  for (const [name, bytes] of [['book.xlsx', workbookBytes('xlsx')], ['book.xls', workbookBytes('biff8')]] as const) {
    const sections = sectionsOf(t, await extractText(bytes, name))
    t.same(sections.map((section) => section.heading), ['Arrivals', 'Pantry'], `${name}: sheet names`)
    t.equal(sections[0]!.text, 'Port\tShips\nHarbourtown\t17', `${name}: rows as lines`)
    t.equal(sections[1]!.text, 'Product\tSales\nMarmalade\t42', `${name}: every sheet`)
  }
})

t.test('xlsx: a NUL in a cell is dropped from the output', async (t) => {
  const book = XLSX.utils.book_new()
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([['before\u0000after']]), 'Sheet1')
  const bytes = new Uint8Array(XLSX.write(book, { type: 'buffer', bookType: 'xlsx' }) as Buffer)
  const sections = sectionsOf(t, await extractText(bytes, 'nul.xlsx'))
  t.equal(sections[0]?.text, 'beforeafter')
})

t.test('csv: rows as lines; an unclosed quote fails with a reason', async (t) => {
  const sections = sectionsOf(t, await extractText(utf8('port,ships\r\n"Harbourtown, North",17\r\n'), 'ports.csv'))
  t.equal(allText(sections), 'port\tships\nHarbourtown, North\t17')
  const semicolons = sectionsOf(t, await extractText(utf8('port;ships\nDover;3\n'), 'ports.csv'))
  t.equal(allText(semicolons), 'port\tships\nDover\t3', 'a semicolon-separated export')
  t.match(reasonOf(t, await extractText(utf8('a,b\n"unclosed,1\n'), 'bad.csv')), /CSV/)
})

t.test('text types: UTF-8 text, byte order mark stripped', async (t) => {
  for (const name of ['notes.txt', 'script.py', 'data.ac2', 'NOTES.TXT']) {
    const sections = sectionsOf(t, await extractText(utf8('\ufeffHarbour lights\nline two'), name))
    t.same(sections, [{ text: 'Harbour lights\nline two' }], name)
  }
  const utf16 = new Uint8Array([0xff, 0xfe, ...new Uint8Array(Uint16Array.from('Tide', (c) => c.charCodeAt(0)).buffer)])
  t.same(sectionsOf(t, await extractText(utf16, 'windows.txt')), [{ text: 'Tide' }], 'UTF-16 with a byte order mark')
})

t.test('md: a section per ATX heading; fenced code is not split', async (t) => {
  const markdown = 'Intro line.\n\n# Harbour\nShips came in.\n\n```\n# not a heading\n```\n## Marmalade ##\nSales rose.\n#hashtag is text\n'
  const sections = sectionsOf(t, await extractText(utf8(markdown), 'readme.md'))
  t.same(sections.map((section) => section.heading), [undefined, 'Harbour', 'Marmalade'])
  t.match(sections[1]!.text, /^# Harbour\nShips came in\.[\s\S]*# not a heading/)
  t.match(sections[2]!.text, '#hashtag is text')
})

t.test('json and yaml: must parse; the original text is kept', async (t) => {
  const json = '{\n  "port": "Harbourtown",  "ships": 17\n}'
  t.same(sectionsOf(t, await extractText(utf8(json), 'data.json')), [{ text: json }])
  t.equal(reasonOf(t, await extractText(utf8('{"port": '), 'data.json')), 'the file is not valid JSON')
  const yaml = 'port: Harbourtown # the home port\nships: 17\n'
  t.same(sectionsOf(t, await extractText(utf8(yaml), 'data.yaml')), [{ text: yaml }])
  t.same(sectionsOf(t, await extractText(utf8(yaml), 'data.yml')), [{ text: yaml }])
  t.match(reasonOf(t, await extractText(utf8('port: [unclosed\n  - x: : y'), 'data.yml')), /YAML/)
})

t.test('text that is not UTF-8 fails with a reason', async (t) => {
  const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x20, 0x6f, 0x6b])
  t.equal(reasonOf(t, await extractText(latin1, 'notes.txt')), 'the file is not UTF-8 text')
  t.equal(reasonOf(t, await extractText(latin1, 'macro.ac2')), 'the ac2 file is not text')
  t.equal(reasonOf(t, await extractText(new Uint8Array([0x61, 0x00, 0x62]), 'binary.txt')), 'the file is not UTF-8 text', 'NUL bytes mean binary')
})

t.test('unknown and missing extensions are not indexed', async (t) => {
  t.equal(reasonOf(t, await extractText(utf8('hello'), 'archive.XYZ')), 'files of type .xyz are not indexed')
  t.match(reasonOf(t, await extractText(utf8('hello'), 'Makefile')), /without an extension/)
})

t.test('corrupt, truncated and mislabelled files fail with a reason, never a throw', async (t) => {
  const pdf = await pdfBytes()
  const docx = await docxBytes()
  const xlsx = workbookBytes('xlsx')
  const pptx = await pptxBytes()
  const garbage = new Uint8Array(2048).map((_, index) => (index * 7919 + 13) % 251)
  const cases: [string, Uint8Array][] = [
    ['garbage.pdf', garbage], ['truncated.pdf', pdf.slice(0, 200)],
    ['garbage.docx', garbage], ['truncated.docx', docx.slice(0, docx.length / 2)],
    ['garbage.xlsx', garbage], ['truncated.xlsx', xlsx.slice(0, xlsx.length / 2)],
    ['garbage.xls', garbage], ['truncated.xls', workbookBytes('biff8').slice(0, 600)],
    ['garbage.pptx', garbage], ['truncated.pptx', pptx.slice(0, pptx.length / 2)],
    ['garbage.odt', garbage], ['garbage.doc', garbage], ['truncated.doc', fixture('report.doc').slice(0, 3000)],
    ['garbage.ppt', garbage], ['truncated.ppt', fixture('slides.ppt').slice(0, 3000)],
    ['garbage.png', garbage], ['garbage.jpg', garbage], ['garbage.gif', garbage], ['garbage.webp', garbage],
    ['word.docx', xlsx], ['sheet.xlsx', docx], ['deck.pptx', docx],
  ]
  for (const [name, bytes] of cases) {
    let extraction: Extraction | undefined
    await t.resolves(async () => { extraction = await extractText(bytes, name) }, `${name} does not throw`)
    if (extraction) reasonOf(t, extraction)
  }
})

t.test('a password-protected Office Open XML file says so', async (t) => {
  const container = CFB.utils.cfb_new()
  CFB.utils.cfb_add(container, '/EncryptionInfo', Buffer.alloc(64))
  CFB.utils.cfb_add(container, '/EncryptedPackage', Buffer.alloc(4096, 7))
  const bytes = new Uint8Array(CFB.write(container, { type: 'buffer' }) as Buffer)
  for (const name of ['secret.docx', 'secret.xlsx', 'secret.pptx']) {
    t.match(reasonOf(t, await extractText(bytes, name)), /password-protected/, name)
  }
})

t.test('a stopped signal ends extraction with a reason', async (t) => {
  const controller = new AbortController()
  controller.abort()
  t.equal(reasonOf(t, await extractText(await pdfBytes(), 'report.pdf', { signal: controller.signal })), 'reading the file was stopped')
})

t.test('images: OCR turned off completes with a note', async (t) => {
  const extraction = await extractText(fixture('ocr.png'), 'words.png', { ocr: 'off' })
  t.same(extraction, { ok: true, sections: [], note: 'images are not OCRed: OCR is turned off' })
})

t.test('images: OCR finds the words', { skip: existsSync('/usr/bin/tesseract') ? false : 'tesseract is not installed (apt-get install tesseract-ocr)' }, async (t) => {
  const sections = sectionsOf(t, await extractText(fixture('ocr.png'), 'words.PNG'))
  t.match(allText(sections), /Harbour\s+Lighthouse/)
})
