// Legacy Word (doc) with word-extractor: the body, then footnotes, endnotes and text
// boxes, as one section (the binary format's headings are not exposed by the library).
import WordExtractor from 'word-extractor'
import { Unreadable, tidy, type Read } from './common.ts'
import { openContainer, stream } from './ole.ts'

export async function readDoc(bytes: Uint8Array): Promise<Read> {
  const container = openContainer(bytes, 'the Word document')
  const word = stream(container, 'WordDocument')
  if (!word || word.length < 12) throw new Unreadable('the file is not a Word document')
  // FIB flags: fEncrypted is bit 8 of the word at offset 10.
  if ((word[11]! & 0x01) !== 0) throw new Unreadable('the Word document is password-protected')
  let parts: string[]
  try {
    const document = await new WordExtractor().extract(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    parts = [document.getBody(), document.getFootnotes(), document.getEndnotes(), document.getTextboxes({ includeHeadersAndFooters: false })]
  } catch {
    throw new Unreadable('the Word document could not be read')
  }
  const text = tidy(parts.filter((part) => part.trim() !== '').join('\n\n'))
  return { sections: text ? [{ text }] : [] }
}
